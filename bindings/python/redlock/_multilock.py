# SPDX-License-Identifier: BSD-3-Clause
# MultiLock: several resources held together, all or none, over a C multi-resource handle
# (redlock_lock_open_multi). client.lock(["a", "b"]) makes one; a str or bytes name stays a Lock.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Sequence, Tuple

from ._callbacks import finalize
from ._convert import _ERRBUF_SIZE, Name, _cstr
from ._errors import LockStateError, check
from ._lock import Lock
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock


def _free_handle(ptr: Any) -> None:
    lib.redlock_lock_free(ptr)


def _names(names: Any) -> Tuple[List[bytes], Tuple[Name, ...]]:
    """The names as C strings, and as given; the C library checks each one, the count and
    duplicates (InvalidArgument with its message)."""
    if not isinstance(names, (list, tuple)):
        raise TypeError(f"the lock names must be a list or tuple of str or bytes, not {type(names).__name__}")
    given = tuple(names)
    return [_cstr(n, "lock name") for n in given], given


class MultiLock(Lock):
    """A lock on several resources at once, all or none (node-redlock's ``acquire(["a", "b"])``,
    Redisson's MultiLock), without their deadlock: each node sets every key in one script, in one
    canonical order, so callers that list the same names in any order exclude each other. A Lock
    whose C handle is a multi-resource one, so acquire, release, extend, auto_extend, validity,
    token (one for the set), node_results and cancel are Lock's. Its ``name`` is the names in
    canonical order joined by commas; ``names`` is what was given."""

    #: The most names one MultiLock takes (REDLOCK_MAX_MULTI).
    MAX: int = lib.REDLOCK_MAX_MULTI

    def __init__(self, client: Redlock, names: Sequence[Name], **kwargs: Any) -> None:
        self._names_b, self.names = _names(names)
        # Lock keeps a str name for messages; the handle's own (canonical) name replaces it.
        super().__init__(client, ",".join(n.decode("utf-8", "replace") for n in self._names_b), **kwargs)
        self.name = ffi.string(lib.redlock_lock_resource(self._ptr)).decode("utf-8", "replace")

    def _new_handle(self, client: Redlock) -> Any:
        out = ffi.new("redlock_lock **")
        errbuf = ffi.new("char[]", _ERRBUF_SIZE)
        keep = [ffi.new("char[]", n) for n in self._names_b]
        arr = ffi.new("const char *[]", max(1, len(keep)))
        for i, k in enumerate(keep):
            arr[i] = k
        with client._mutex:  # close() must not free the client under the call
            if client._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed",
                                     resource=self._display)
            rc = lib.redlock_lock_open_multi(out, client._ptr, arr, len(keep), errbuf, _ERRBUF_SIZE)
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"), self._display)
        return ffi.gc(out[0], lambda ptr: finalize(lambda: _free_handle(ptr)))

    def __repr__(self) -> str:
        state = "acquired" if self._acquired else "not acquired"
        return f"<redlock.MultiLock {self.name!r} {state}>"
