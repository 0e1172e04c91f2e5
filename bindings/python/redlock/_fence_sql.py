# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): one statement that writes a row only
# while the caller's token is at least the row's fence column, and raises the column to it. For
# DB-API cursors of PostgreSQL (psycopg 3 and 2) and SQLite >= 3.24; MySQL's form is in the docs.
# The statements, their quoting and their checks are the C library's (redlock_fence_sql), as every
# binding's are; only the values and the cursor are handled here.
from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from ._errors import FencedOut, InvalidArgument, check
from ._fence import _token
from ._redlock import ffi, lib

# The DB-API placeholder styles the C builder writes: psycopg's "%s" and sqlite3's "?".
_STYLES = {"%s": lib.REDLOCK_SQL_FORMAT, "?": lib.REDLOCK_SQL_QMARK}


def _name(name: Any, what: str) -> bytes:
    # A C string cannot carry a NUL; the C builder refuses the rest (empty names, empty parts).
    if not isinstance(name, str) or not name or "\0" in name:
        raise InvalidArgument(f"{what} must be a non-empty str, got {name!r}")
    return name.encode("utf-8")


def _columns(cols: Mapping[str, Any], what: str) -> Tuple[List[bytes], List[Any]]:
    if not isinstance(cols, Mapping):
        raise InvalidArgument(f"{what} must be a mapping of column to value")
    return [_name(c, what + " column") for c in cols], list(cols.values())


class _Statements:
    """The statements of one fenced write, built by the C library (redlock_fence_sql), and the
    values in the order it documents."""

    def __init__(self, table: str, key: Mapping[str, Any], values: Mapping[str, Any], token: Any,
                 fence_column: str, placeholder: str) -> None:
        self.token = _token(token)
        if placeholder not in _STYLES:
            raise InvalidArgument(f"placeholder must be one of {sorted(_STYLES)}, got {placeholder!r}")
        self._style = _STYLES[placeholder]
        self._table = _name(table, "table")
        self._fence = _name(fence_column, "fence_column")
        self._kcols, self.kvals = _columns(key, "key")
        self._vcols, self.vvals = _columns(values, "values")
        self.display = f"{table} {dict(key)!r}"
        self._keep = [ffi.new("char[]", c) for c in (*self._kcols, *self._vcols)]
        self._k = ffi.new("const char *[]", self._keep[:len(self._kcols)] or [ffi.NULL])
        self._v = ffi.new("const char *[]", self._keep[len(self._kcols):] or [ffi.NULL])

    def sql(self, statement: int) -> str:
        err = ffi.new("char[]", 256)
        args = (statement, self._style, self._table, self._k, len(self._kcols), self._v, len(self._vcols),
                self._fence, self.token, err, len(err))
        n = lib.redlock_fence_sql(ffi.NULL, 0, *args)
        if n < 0:
            check(n, ffi.string(err).decode("utf-8", "replace"))
        buf = ffi.new("char[]", n + 1)
        lib.redlock_fence_sql(buf, n + 1, *args)
        return ffi.string(buf, n).decode("utf-8")


def _refused(cursor: Any, s: _Statements) -> Exception:
    """Why a write changed no row: the fence that refused it, or no such row (LookupError)."""
    cursor.execute(s.sql(lib.REDLOCK_FENCE_SQL_READ), s.kvals)
    row = cursor.fetchone()
    if row is None:
        return LookupError(f"{s.display}: no such row to update (fenced_upsert makes one)")
    seen = int(row[0]) if row and row[0] is not None else 0
    token = s.token
    return FencedOut(f"{s.display}: token {token} is older than {seen}, the row's fence: a later holder has "
                     f"written", token=token, fence=seen, detail=f"FENCED {token} {seen}", resource=s.display)


def fenced_upsert(cursor: Any, table: str, key: Mapping[str, Any], values: Mapping[str, Any], token: int, *,
                  fence_column: str = "fence", placeholder: str = "%s") -> None:
    """Inserts the row ``key`` + ``values`` with ``fence_column = token``, or updates it to
    ``values`` if it exists and its fence is at most ``token`` (or NULL), in one statement:

        INSERT INTO t (k, v, fence) VALUES (...) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v,
        fence = EXCLUDED.fence WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence

    A row whose fence is above ``token`` is left as it is and FencedOut is raised naming both.
    ``key``'s columns must be the table's primary key or a unique index (ON CONFLICT needs one).
    ``cursor`` is a DB-API cursor (psycopg, sqlite3 with ``placeholder="?"``); the caller commits."""
    s = _Statements(table, key, values, token, fence_column, placeholder)
    cursor.execute(s.sql(lib.REDLOCK_FENCE_SQL_UPSERT), [*s.kvals, *s.vvals, s.token])
    if cursor.rowcount == 0:
        raise _refused(cursor, s)


def fenced_update(cursor: Any, table: str, key: Mapping[str, Any], values: Mapping[str, Any], token: int, *,
                  fence_column: str = "fence", placeholder: str = "%s") -> None:
    """Updates the existing row ``key`` to ``values`` and ``fence_column = token`` if its fence
    is at most ``token`` (or NULL: the first fenced write):

        UPDATE t SET v = ..., fence = $token WHERE k = ... AND (fence IS NULL OR fence <= $token)

    FencedOut if a later holder's token is there; LookupError if there is no such row (a fenced
    write does not make one: fenced_upsert does). Empty ``values`` only raise the fence, as a new
    holder does before it reads the row, so that the previous holder's late write fails from
    then on."""
    s = _Statements(table, key, values, token, fence_column, placeholder)
    # The token twice: in SET and in WHERE ("%s" and "?" cannot name one parameter twice).
    cursor.execute(s.sql(lib.REDLOCK_FENCE_SQL_UPDATE), [*s.vvals, s.token, *s.kvals, s.token])
    if cursor.rowcount == 0:
        raise _refused(cursor, s)
