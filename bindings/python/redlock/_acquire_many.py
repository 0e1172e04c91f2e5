# SPDX-License-Identifier: BSD-3-Clause
# Redlock.try_acquire_many: one attempt at each of many locks, pipelined in about one round trip
# (redlock_lock_acquire_many), for a dispatcher that takes a lock per message.
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence

from ._convert import _ERRBUF_SIZE, Seconds, _ttl_ms
from ._errors import LockStateError, check
from ._lock import Lock
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock


def try_acquire_many(client: Redlock, locks: Sequence[Lock], ttl: Optional[Seconds] = None) -> List[bool]:
    """One attempt at each lock, as ``lock.acquire(blocking=False)`` would make, all at once.
    Returns one bool per lock; a False lock's ``last_error`` says why. ``ttl``: for every lock
    (None: theirs, which must then be the same)."""
    locks = list(locks)
    for lk in locks:
        if not isinstance(lk, Lock):
            raise TypeError(f"try_acquire_many takes Lock objects, not {type(lk).__name__}")
    if not locks:
        return []
    if ttl is not None:
        ttl_ms = _ttl_ms(ttl)
    else:
        ttls = {lk._ttl_ms for lk in locks}
        if len(ttls) != 1:
            raise ValueError("the locks have different TTLs: pass ttl= for all of them")
        ttl_ms = ttls.pop()
    entered: List[Lock] = []
    try:
        for lk in {id(lk): lk for lk in locks}.values():   # each once: C refuses a Lock listed twice
            lk._enter()
            entered.append(lk)
            if lk._foreign and lib.redlock_lock_is_held(lk._ptr):
                raise LockStateError(f"{lk._display!r}: this Lock holds the lock for process {lk._pid}; a "
                                     f"forked child must make a Lock of its own",
                                     detail="acquired by another process", resource=lk._display)
        client_ptr = client._ptr
        if client_ptr is None:
            raise LockStateError("the Redlock client is closed", detail="client is closed")
        arr = ffi.new("redlock_lock *[]", [lk._ptr for lk in locks])
        results = ffi.new("int[]", len(locks))
        err = ffi.new("char[]", _ERRBUF_SIZE)
        # The list's checks (another client's lock, one twice, too many) are C's.
        rc = lib.redlock_lock_acquire_many(client_ptr, arr, len(locks), ttl_ms, results, err, _ERRBUF_SIZE)
        check(rc, ffi.string(err).decode("utf-8", "replace"), None)
        out = []
        for k, lk in enumerate(locks):
            rc = results[k]
            if rc == 0:
                rc = lk._now_held()   # a failed arming gave it back, and says why
            else:
                lk.last_error = lk._error(rc)
            out.append(rc == 0)
        return out
    finally:
        for lk in entered:
            lk._busy.release()
