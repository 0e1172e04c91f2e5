# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"): the C
# library's one script (redlock_fence_script), run on the caller's own redis-py client, so that the
# token comparison, the fence key's name and its lifetime are the library's, not written here.
from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional

from ._convert import _ms
from ._errors import FencedOut, InvalidArgument
from ._redlock import ffi, lib

_SCRIPT = ffi.string(lib.redlock_fence_script())
_SHA = ffi.string(lib.redlock_fence_script_sha1()).decode("ascii")
_MAX_TOKEN = 2**64 - 1
#: How long a fence outlives the last write to its resource, in seconds, unless given.
RETENTION = lib.REDLOCK_FENCE_RETENTION_MS / 1000.0


def fence_key(resource: str) -> str:
    """The store key that holds resource's fence: ``{resource}:fence``, or ``resource:fence``
    when the name has a hash tag (so that on a cluster store it shares the slot of data keys
    named with the same tag, ``{orders}:17``)."""
    if not isinstance(resource, str):
        raise TypeError(f"resource must be a str, not {type(resource).__name__}")
    name = resource.encode("utf-8")
    n = lib.redlock_fence_key(ffi.NULL, 0, name)
    if n < 0:
        raise InvalidArgument(f"{resource!r} cannot name a fence: empty, longer than "
                              f"{lib.REDLOCK_MAX_RESOURCE_LEN} bytes, or a '}}' without a hash tag",
                              resource=resource)
    buf = ffi.new("char[]", n + 1)
    lib.redlock_fence_key(buf, n + 1, name)
    return ffi.string(buf).decode("utf-8")


def _token(token: Any) -> int:
    if isinstance(token, bool) or not isinstance(token, numbers.Integral):
        raise TypeError(f"token must be an int, not {type(token).__name__}")
    if not 1 <= token <= _MAX_TOKEN:
        raise InvalidArgument(f"token must be in [1, 2**64 - 1], got {token}")
    return int(token)


class Fence:
    """Writes to one resource on a Redis or Valkey store (a redis-py ``Redis`` or
    ``RedisCluster``; not necessarily a lock node) that are applied only while ``token`` is at
    least the highest token a write to the resource has carried, and that raise that fence to
    it, atomically on the store. An older token raises :class:`FencedOut` naming both, and
    writes nothing: a later holder has written. ``Lock.fenced(store)`` makes one with the lock's
    token; this class takes a token from elsewhere (a worker handed one).

    ``retention`` (seconds, default seven days) is how long the fence outlives the resource's
    last fenced write: a holder stalled longer than that after it is not fenced, and a resource
    no longer written to leaves no key behind. On a cluster store, name the data keys with the
    resource's hash tag (``{orders}:17`` for the resource ``{orders}``) or the store refuses the
    script (CROSSSLOT)."""

    def __init__(self, store: Any, resource: str, token: int, *, retention: Any = RETENTION) -> None:
        for m in ("evalsha", "eval"):
            if not callable(getattr(store, m, None)):
                raise TypeError(f"store must be a redis-py client (it has no {m}()), not {type(store).__name__}")
        self.key = fence_key(resource)
        self.resource = resource
        self.token = _token(token)
        ms = _ms(retention, "retention", 2**63 - 1, "a signed 64-bit count of ms")
        if ms < 1:
            raise InvalidArgument(f"retention must be at least 0.001 seconds, got {retention!r}")
        self._store = store
        self._argv = (str(self.token), str(ms))

    def __repr__(self) -> str:
        return f"Fence({self.resource!r}, token={self.token}, key={self.key!r})"

    def _run(self, op: str, key: Optional[Any], *args: Any) -> Any:
        keys = (self.key,) if key is None else (self.key, key)
        argv = (*keys, *self._argv, op, *args)
        try:
            try:
                return self._store.evalsha(_SHA, len(keys), *argv)
            except Exception as e:  # redis-py's NoScriptError, without importing redis
                if not str(e).startswith("NOSCRIPT") and type(e).__name__ != "NoScriptError":
                    raise
                return self._store.eval(_SCRIPT, len(keys), *argv)
        except Exception as e:
            msg = str(e)
            raw = msg.encode("utf-8", "replace")
            tf = ffi.new("uint64_t[2]")
            if not lib.redlock_fence_refusal(raw, len(raw), tf, tf + 1):
                raise
            raise FencedOut(f"{self.resource!r}: token {tf[0]} is older than {tf[1]}, the highest this "
                            f"resource has seen: a later holder has written",
                            token=int(tf[0]), fence=int(tf[1]), detail=msg, resource=self.resource) from None

    def advance(self) -> int:
        """Raises the fence to this token without writing data, and returns the fence it had
        (0: none). A new holder calls it first, before it reads what it will write: from then
        on the previous holder's late writes are refused."""
        return int(self._run("advance", None))

    def set(self, key: Any, value: Any, *, px: Any = None) -> bool:
        """SET key value [PX px] (px in seconds), fenced; True, as redis-py's set()."""
        args: tuple = (value,)
        if px is not None:
            ms = _ms(px, "px", 2**63 - 1, "a signed 64-bit count of ms")
            if ms < 1:
                raise InvalidArgument(f"px must be at least 0.001 seconds, got {px!r}")
            args = (value, ms)
        return self._run("set", key, *args) in (b"OK", "OK")

    def delete(self, key: Any) -> int:
        """DEL key, fenced; the number of keys removed."""
        return int(self._run("del", key))

    def hset(self, key: Any, mapping: Mapping[Any, Any]) -> int:
        """HSET key field value ..., fenced; the number of fields added."""
        if not mapping:
            raise InvalidArgument("hset needs at least one field")
        return int(self._run("hset", key, *(x for kv in mapping.items() for x in kv)))

    def rpush(self, key: Any, *values: Any) -> int:
        """RPUSH key value ..., fenced; the list's length after it."""
        if not values:
            raise InvalidArgument("rpush needs at least one value")
        return int(self._run("rpush", key, *values))

    def incr(self, key: Any, amount: int = 1) -> int:
        """INCRBY key amount, fenced; the value after it."""
        if isinstance(amount, bool) or not isinstance(amount, numbers.Integral):
            raise TypeError(f"amount must be an int, not {type(amount).__name__}")
        return int(self._run("incrby", key, int(amount)))
