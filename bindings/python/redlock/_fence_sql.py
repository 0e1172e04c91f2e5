# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): one statement that writes a row only
# while the caller's token is at least the row's fence column, and raises the column to it. For
# DB-API cursors of PostgreSQL (psycopg 3 and 2) and SQLite >= 3.24; MySQL's form is in the docs.
from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

from ._errors import FencedOut, InvalidArgument
from ._fence import _token

_MAX_SQL_TOKEN = 2**63 - 1   # a BIGINT column


def _ident(name: Any, what: str) -> str:
    """A quoted SQL identifier ("schema"."table" for a dotted name); a quote inside is doubled."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise InvalidArgument(f"{what} must be a non-empty str, got {name!r}")
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def _columns(cols: Mapping[str, Any], what: str, empty: bool = False) -> Tuple[Sequence[str], Sequence[Any]]:
    if not isinstance(cols, Mapping) or (not cols and not empty):
        raise InvalidArgument(f"{what} must be a non-empty mapping of column to value")
    return [_ident(c, what + " column") for c in cols], list(cols.values())


def _check(token: Any, fence_column: str, key: Mapping[str, Any], values: Mapping[str, Any]) -> int:
    t = _token(token)
    if t > _MAX_SQL_TOKEN:
        raise InvalidArgument(f"token {t} does not fit a BIGINT fence column (at most 2**63 - 1)")
    clash = set(key) & set(values) | ({fence_column} & (set(key) | set(values)))
    if clash:
        raise InvalidArgument(f"columns named twice (key, values, fence): {sorted(clash)}")
    return t


def _refused(cursor: Any, table: str, kcols: Sequence[str], kvals: Sequence[Any], fence: str, p: str,
             token: int, display: str) -> Exception:
    """Why a write changed no row: the fence that refused it, or no such row (LookupError)."""
    where = " AND ".join(f"{c} = {p}" for c in kcols)
    cursor.execute(f"SELECT {fence} FROM {table} WHERE {where}", kvals)
    row = cursor.fetchone()
    if row is None:
        return LookupError(f"{display}: no such row to update (fenced_upsert makes one)")
    seen = int(row[0]) if row and row[0] is not None else 0
    return FencedOut(f"{display}: token {token} is older than {seen}, the row's fence: a later holder has "
                     f"written", token=token, fence=seen, detail=f"FENCED {token} {seen}", resource=display)


def fenced_upsert(cursor: Any, table: str, key: Mapping[str, Any], values: Mapping[str, Any], token: int, *,
                  fence_column: str = "fence", placeholder: str = "%s") -> None:
    """Inserts the row ``key`` + ``values`` with ``fence_column = token``, or updates it to
    ``values`` if it exists and its fence is at most ``token`` (or NULL), in one statement:

        INSERT INTO t (k, v, fence) VALUES (...) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v,
        fence = EXCLUDED.fence WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence

    A row whose fence is above ``token`` is left as it is and FencedOut is raised naming both.
    ``key``'s columns must be the table's primary key or a unique index (ON CONFLICT needs one).
    ``cursor`` is a DB-API cursor (psycopg, sqlite3 with ``placeholder="?"``); the caller commits."""
    t = _check(token, fence_column, key, values)
    tbl, fence = _ident(table, "table"), _ident(fence_column, "fence_column")
    kcols, kvals = _columns(key, "key")
    vcols, vvals = _columns(values, "values")
    cols = [*kcols, *vcols, fence]
    marks = ", ".join([placeholder] * len(cols))
    sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in (*vcols, fence))
    cursor.execute(f"INSERT INTO {tbl} ({', '.join(cols)}) VALUES ({marks}) ON CONFLICT ({', '.join(kcols)}) "
                   f"DO UPDATE SET {sets} WHERE {tbl}.{fence} IS NULL OR {tbl}.{fence} <= EXCLUDED.{fence}",
                   [*kvals, *vvals, t])
    if cursor.rowcount == 0:
        raise _refused(cursor, tbl, kcols, kvals, fence, placeholder, t, f"{table} {dict(key)!r}")


def fenced_update(cursor: Any, table: str, key: Mapping[str, Any], values: Mapping[str, Any], token: int, *,
                  fence_column: str = "fence", placeholder: str = "%s") -> None:
    """Updates the existing row ``key`` to ``values`` and ``fence_column = token`` if its fence
    is at most ``token`` (or NULL: the first fenced write):

        UPDATE t SET v = ..., fence = $token WHERE k = ... AND (fence IS NULL OR fence <= $token)

    FencedOut if a later holder's token is there; LookupError if there is no such row (a fenced
    write does not make one: fenced_upsert does). Empty ``values`` only raise the fence, as a new
    holder does before it reads the row, so that the previous holder's late write fails from
    then on."""
    t = _check(token, fence_column, key, values)
    tbl, fence = _ident(table, "table"), _ident(fence_column, "fence_column")
    kcols, kvals = _columns(key, "key")
    vcols, vvals = _columns(values, "values", empty=True)
    sets = ", ".join(f"{c} = {placeholder}" for c in (*vcols, fence))
    where = " AND ".join(f"{c} = {placeholder}" for c in kcols)
    cursor.execute(f"UPDATE {tbl} SET {sets} WHERE {where} AND ({fence} IS NULL OR {fence} <= {placeholder})",
                   [*vvals, t, *kvals, t])
    if cursor.rowcount == 0:
        raise _refused(cursor, tbl, kcols, kvals, fence, placeholder, t, f"{table} {dict(key)!r}")
