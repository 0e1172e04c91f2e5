# SPDX-License-Identifier: BSD-3-Clause
# Redis/Valkey Clusters as Redlock nodes (redis-cluster://, docs/cluster.md), on real clusters from
# tests/harness/rcluster.py. A cluster node names a lock's auxiliary keys so that they share the
# lock key's slot ({K}:wq, {K}:fencing, ... when K has no hash tag); a standalone node keeps the
# names it always had (K:wq, K:fencing), so an upgrade changes nothing there.
from __future__ import annotations

import os
import threading
import time

import pytest

import rcluster
import redlock
from redlock import EventType, Redlock
from _waits import wait_until

SLOW_RETRY = {"retry_delay": 20.0, "retry_jitter": 0.0}


@pytest.fixture(scope="module")
def one_shard():
    """Three independent one-shard clusters (Redis, Valkey, Redis): each enforces CROSSSLOT."""
    made = []
    try:
        for kind in ("redis", "valkey", "redis"):
            made.append(rcluster.RedisCluster(shards=1, kind=kind).__enter__())
        yield made
    finally:
        for rc in made:
            rc.close()


def urls_of(clusters):
    return [rc.url() for rc in clusters]


def exists(rc, key):
    return rc.cmd(rc.master_for_key(key), "EXISTS", key) == 1


def test_aux_keys_share_the_slot_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), fencing=True, node_timeout=0.5) as c:
        tokens = []
        for _ in range(2):
            with c.lock(name, ttl=5.0) as lock:
                assert lock.held
                lock.extend(5.0)
                tokens.append(lock.token)
        assert tokens[0] >= 1 and tokens[1] > tokens[0]
    for rc in one_shard:
        assert exists(rc, "{%s}:fencing" % name)
        assert not exists(rc, name + ":fencing")
        assert rcluster.keyslot("{%s}:fencing" % name) == rcluster.keyslot(name)


def test_a_tagged_name_keeps_its_suffixes(one_shard, name):
    tagged = "{%s}:job" % name
    with Redlock(urls_of(one_shard), fencing=True, node_timeout=0.5) as c:
        with c.lock(tagged, ttl=5.0) as lock:
            assert lock.token >= 1
    for rc in one_shard:
        assert exists(rc, tagged + ":fencing")


def test_standalone_nodes_keep_the_legacy_names(one_shard, cluster5, name):
    # Two cluster nodes and three standalone ones in one client: each node names the keys its way.
    urls = urls_of(one_shard[:2]) + cluster5.urls[:3]
    with Redlock(urls, fencing=True, node_timeout=0.5) as c:
        with c.lock(name, ttl=5.0) as lock:
            assert lock.token >= 1
    for rc in one_shard[:2]:
        assert exists(rc, "{%s}:fencing" % name)
    for i in range(3):
        assert cluster5.cmd(i, "EXISTS", name + ":fencing") == 1
        assert cluster5.cmd(i, "EXISTS", "{%s}:fencing" % name) == 0


def test_a_waiter_is_woken_on_cluster_nodes(one_shard, name):
    rec = []
    with Redlock(urls_of(one_shard), node_timeout=0.5) as other, \
            Redlock(urls_of(one_shard), node_timeout=0.5, on_event=rec.append, wake=True, **SLOW_RETRY) as c:
        holder = other.acquire(name, ttl=30.0)
        got = []
        waiter = c.lock(name, ttl=10.0)
        t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
        t.start()
        try:
            # The waiter's registration, in the queue that shares the lock's slot.
            wait_until(lambda: sum(exists(rc, "{%s}:wq" % name) for rc in one_shard) >= 2,
                       "the waiter registered on a majority")
        finally:
            holder.release()
            t.join(60)
        assert got == [True]
        waiter.release()
        assert any(e.type == EventType.WOKEN for e in rec), [e.type for e in rec]


def test_read_write_lock_and_election_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        rw = c.rwlock(name, ttl=5.0)
        r1, r2 = rw.read(), rw.read()
        assert r1.acquire() and r2.acquire()
        assert rw.write().acquire(blocking=False) is False
        for rc in one_shard:
            assert exists(rc, "{%s}:rd" % name)
        r1.release()
        r2.release()
        with rw.write():
            pass
        e = c.election(name + ":e", ttl=5.0)
        e.campaign(b"me", timeout=10)
        for rc in one_shard:
            assert exists(rc, "{%s:e}:leader" % name)
        e.resign()


def test_semaphore_needs_a_tag_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        with pytest.raises(redlock.InvalidArgument, match="hash tag"):
            c.semaphore(name, 2).acquire()
        sem = c.semaphore("{%s}" % name, 2)
        assert sem.acquire()
        assert c.semaphore("{%s}" % name, 2).acquire()
        assert c.semaphore("{%s}" % name, 2).acquire(blocking=False) is False
        sem.release()


def test_a_key_with_a_brace_but_no_tag_is_refused(one_shard, cluster5):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        for bad in ("a}b", "x{}y}", "}"):
            with pytest.raises(redlock.InvalidArgument, match="hash tag"):
                c.lock(bad).acquire()
    # On standalone nodes such a name is as good as any.
    with Redlock(cluster5.urls, node_timeout=0.5) as c:
        with c.lock("a}b-%d" % time.monotonic_ns(), ttl=5.0) as lock:
            assert lock.held


# ---- clusters of several shards: the engine routes each lock by its key's slot ----------------

LONG = os.environ.get("REDLOCK_CLUSTER_LONG") == "1"
long_only = pytest.mark.skipif(not LONG, reason="failover and migration: make test-cluster (REDLOCK_CLUSTER_LONG=1)")


@pytest.fixture(scope="module")
def three_shards():
    """Three independent clusters of three shards each (Redis, Valkey, Redis): three Redlock nodes."""
    made = []
    try:
        for kind in ("redis", "valkey", "redis"):
            made.append(rcluster.RedisCluster(shards=3, kind=kind).__enter__())
        yield made
    finally:
        for rc in made:
            rc.close()


def names_over_every_shard(rc, prefix, per_shard=8):
    """Names whose slots fall on each of rc's shards, per_shard of each."""
    by = {}
    k = 0
    while min((len(v) for v in by.values()), default=0) < per_shard or len(by) < rc.shards:
        n = "%s:%d" % (prefix, k)
        by.setdefault(rc.master_for_key(n), []).append(n)
        k += 1
    return [n for v in by.values() for n in v[:per_shard]]


def test_locks_over_every_shard(three_shards, name):
    names = names_over_every_shard(three_shards[0], name)
    assert len({rcluster.keyslot(n) for n in names}) > 12
    with Redlock(urls_of(three_shards), fencing=True, node_timeout=0.5) as c, \
            Redlock(urls_of(three_shards), node_timeout=0.5) as other:
        # While a client learns a cluster's slot map, a grant not waited for may still be
        # bouncing between shards when its release overtakes it (docs/cluster.md): the keys of
        # this warm-up may outlive their release until their TTL.
        for n in names:
            warm = c.lock(n + ":warm", ttl=1.0)
            assert warm.acquire(blocking=False)
            warm.release()
        locks = [c.lock(n, ttl=10.0) for n in names]
        for lock in locks:
            assert lock.acquire(blocking=False), lock.node_results
            first = lock.token
            # Each node that answered names the shard that owns the key's slot (a round decided
            # at quorum may not wait for the third).
            results = lock.node_results
            assert sum(r.ok for r in results) >= 2, results
            for rc, res in zip(three_shards, results):
                owner = rc.master_for_key(lock.name)
                assert res.ok or res.outcome == redlock.NodeOutcome.NOT_WAITED, res
                if res.ok:
                    assert res.message == "shard 127.0.0.1:%d" % rc.nodes.port(owner), res
                    assert rc.cmd(owner, "EXISTS", lock.name) == 1
            assert other.lock(lock.name).acquire(blocking=False) is False
            lock.extend(10.0)
            lock.release()
            assert lock.acquire(blocking=False)
            assert lock.token > first
            lock.release()
        for rc in three_shards:
            assert all(rc.cmd(rc.master_for_key(n), "EXISTS", n) == 0 for n in names)


def test_a_peer_holding_the_key_on_cluster_nodes(three_shards, name):
    # What pottery and redsync do on each node: SET K <random> NX PX, here through redis-py's own
    # cluster client, which routes by slot as redlock does. The lock key keeps its bare name on a
    # cluster node, so the peer's lock refuses redlock, and redlock's refuses the peer.
    from redis.cluster import ClusterNode, RedisCluster as PyCluster
    peers = [PyCluster(startup_nodes=[ClusterNode("127.0.0.1", rc.nodes.port(i)) for i in range(rc.shards)],
                       socket_timeout=2.0) for rc in three_shards]
    try:
        value = os.urandom(16).hex()
        for p in peers:
            assert p.set(name, value, nx=True, px=10000) is True
        with Redlock(urls_of(three_shards), node_timeout=0.5) as c:
            lock = c.lock(name, ttl=5.0)
            assert lock.acquire(blocking=False) is False
            assert isinstance(lock.last_error, redlock.LockNotAcquired), lock.last_error
            outcomes = [r.outcome for r in lock.node_results]
            assert outcomes.count(redlock.NodeOutcome.REFUSED) >= 2, lock.node_results
            assert set(outcomes) <= {redlock.NodeOutcome.REFUSED, redlock.NodeOutcome.NOT_WAITED}, outcomes
            assert all(p.get(name) == value.encode() for p in peers)   # untouched
            for p in peers:
                p.delete(name)
            # And the reverse.
            assert lock.acquire(blocking=False), lock.node_results
            refused = sum(p.set(name, value, nx=True, px=10000) is None for p in peers)
            assert refused >= 2, refused
            owners = [rc.master_for_key(name) for rc in three_shards]
            assert all(rc.cmd(o, "GET", name) != value for rc, o in zip(three_shards, owners))
            lock.release()
            assert not any(p.exists(name) for p in peers)
    finally:
        for p in peers:
            p.close()


def test_functions_are_loaded_on_every_shard_master(three_shards, name):
    # load_functions on a cluster node loads the library on every master, not only on the one
    # member its first command reached: FCALL then works for keys of every slot.
    for rc in three_shards:
        for i in range(rc.shards):
            rc.cmd(i, "FUNCTION", "FLUSH")
    with Redlock(urls_of(three_shards), node_timeout=1.0) as admin:
        admin.load_functions()
    for rc in three_shards:
        for i in range(rc.shards):
            assert rc.cmd(i, "FUNCTION", "LIST", "LIBRARYNAME", "redlock"), (rc.nodes.port(i), "no library")
    names = names_over_every_shard(three_shards[0], name, per_shard=3)
    with Redlock(urls_of(three_shards), node_timeout=0.5, use_functions=True, fencing=True) as c:
        for n in names:
            lock = c.lock(n, ttl=5.0)
            assert lock.acquire(blocking=False), lock.node_results
            lock.extend(5.0)
            lock.release()
    fcalls = sum("cmdstat_fcall:" in rc.cmd(i, "INFO", "commandstats")
                 for rc in three_shards for i in range(rc.shards))
    assert fcalls == 9, fcalls


def test_multi_resource_lock_on_cluster_nodes(three_shards, name):
    # One script per node takes the whole set: on a cluster node its names share one hash tag,
    # and the lock runs on the shard of that tag's slot, in either order.
    tag = "{%s}" % name
    a, b = tag + ":a", tag + ":b"
    with Redlock(urls_of(three_shards), fencing=True, node_timeout=0.5) as c, \
            Redlock(urls_of(three_shards), node_timeout=0.5) as other:
        for n in (a, b):   # learn the slot map first (see test_locks_over_every_shard)
            warm = c.lock(n + ":warm", ttl=1.0)
            assert warm.acquire(blocking=False)
            warm.release()
        m = c.lock([b, a], ttl=10.0)
        assert m.acquire(blocking=False), m.node_results
        assert other.lock([a, b]).acquire(blocking=False) is False
        assert other.lock(a).acquire(blocking=False) is False
        for rc in three_shards:
            owner = rc.master_for_key(a)
            assert rc.cmd(owner, "EXISTS", a) + rc.cmd(owner, "EXISTS", b) in (0, 2)
        m.release()
        assert other.lock([a, b], ttl=5.0).acquire(blocking=False)
        with pytest.raises(redlock.InvalidArgument, match="hash tag"):
            c.lock([name + ":x", name + ":y"]).acquire()
        with pytest.raises(redlock.InvalidArgument, match="share one slot"):
            c.lock(["{a}" + name, "{b}" + name]).acquire()


def test_wake_up_on_a_shard_other_than_the_seed(three_shards, name):
    # A name whose slot is not served by any cluster's first seed: the waiter's queue and the
    # release run on another shard, and PUBLISH reaches the listener on the seed cluster-wide.
    k = 0
    while any(rc.master_for_key("%s:%d" % (name, k)) == 0 for rc in three_shards):
        k += 1
    res = "%s:%d" % (name, k)
    rec = []
    with Redlock(urls_of(three_shards), node_timeout=0.5) as other, \
            Redlock(urls_of(three_shards), node_timeout=0.5, on_event=rec.append, wake=True,
                    **SLOW_RETRY) as c:
        holder = other.acquire(res, ttl=30.0)
        got = []
        waiter = c.lock(res, ttl=10.0)
        t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
        t.start()
        try:
            wait_until(lambda: sum(exists(rc, "{%s}:wq" % res) for rc in three_shards) >= 2,
                       "the waiter registered on a majority")
        finally:
            holder.release()
            t.join(60)
        assert got == [True]
        waiter.release()
        assert any(e.type == EventType.WOKEN for e in rec), [e.type for e in rec]


def test_a_wiped_shard_is_quarantined_for_its_slots_only(name):
    # The quarantine on cluster nodes (c/src/epoch.c, docs/algorithm.md "Quarantine"): the marker
    # is per slot, on the shard that owns it, read behind the grant on the same connection. A
    # shard that lost its data (FLUSHALL here) in two of three clusters while A holds X: B is
    # refused X, the two named as quarantined; a name on a shard that kept its data is granted by
    # all three at once; without the quarantine, a third client gets X while A holds it. Clusters
    # of its own: the wipe takes the markers of every slot of the shard with it.
    made = []
    try:
        for kind in ("redis", "valkey", "redis"):
            made.append(rcluster.RedisCluster(shards=2, kind=kind).__enter__())
        urls = urls_of(made)
        x = name + ":x"
        k = 0
        while True:
            y = "%s:y%d" % (name, k)
            if all(rc.master_for_key(y) != rc.master_for_key(x) for rc in made[:2]):
                break
            k += 1
        with Redlock(urls, node_timeout=0.5) as a, Redlock(urls, node_timeout=0.5) as b, \
                Redlock(urls, node_timeout=0.5, quarantine=False) as plain:
            held = a.lock(x, ttl=3.0)
            assert held.acquire(blocking=False), held.node_results
            first = a.lock(y, ttl=3.0)   # y's slot gets its markers
            assert first.acquire(blocking=False), first.node_results
            first.release()
            for rc in made[:2]:
                assert rc.cmd(rc.master_for_key(x), "FLUSHALL") == "OK"
            t0 = time.monotonic()
            lock = b.lock(x, ttl=3.0)
            assert lock.acquire(blocking=False) is False
            outcomes = [r.outcome for r in lock.node_results]
            assert outcomes[0] == outcomes[1] == redlock.NodeOutcome.QUARANTINED, lock.node_results
            assert "lost its keys" in lock.node_results[0].message, lock.node_results
            # The quarantine is on the shard itself: a client that saw no loss reads it too.
            with Redlock(urls, node_timeout=0.5) as late:
                again = late.lock(x, ttl=3.0)
                assert again.acquire(blocking=False) is False
                assert [r.outcome for r in again.node_results][:2] == [redlock.NodeOutcome.QUARANTINED] * 2, \
                    again.node_results
            # Another shard of the same clusters kept its data and votes.
            other = b.lock(y, ttl=3.0)
            assert other.acquire(blocking=False), other.node_results
            assert all(r.ok for r in other.node_results if r.outcome != redlock.NodeOutcome.NOT_WAITED), \
                other.node_results
            other.release()
            # Without the quarantine the wiped shards vote at once: two holders of x.
            double = plain.lock(x, ttl=1.0)
            assert double.acquire(blocking=False), double.node_results
            assert held.validity > 0
            double.release()
            with pytest.raises(redlock.LockLost):   # its keys went with the wipe on two of three
                held.release()
            # The bound: the longest TTL the slot's markers record (3 s) and its drift.
            wait_until(lambda: lock.acquire(blocking=False), "x granted again after the quarantine",
                       timeout=10.0)
            waited = time.monotonic() - t0
            assert waited >= 2.5, waited
            lock.release()
    finally:
        for rc in made:
            rc.close()


def test_an_announced_hostname_is_what_the_client_connects_to(name):
    # Members that announce a hostname (cluster-announce-hostname; managed TLS clusters do, and
    # their certificates name it) show it in CLUSTER NODES as ip:port@cport,hostname. The client
    # connects to a shard by that name; the seed, given by its ip, keeps its one connection.
    conf = {"cluster-announce-hostname": "localhost"}
    made = rcluster.start_all([rcluster.RedisCluster(shards=3, conf=conf),
                               rcluster.RedisCluster(shards=2, kind="valkey", conf=conf),
                               rcluster.RedisCluster(shards=1)])
    try:
        for rc in made[:2]:
            assert ",localhost " in rc.cmd(0, "CLUSTER", "NODES")
        names = names_over_every_shard(made[0], name, per_shard=2)
        seen = set()
        # One client per cluster (a quorum of one), so that every round waits for its answer.
        for rc in made[:2]:
            with Redlock([rc.url()], node_timeout=0.5) as c:
                for n in names:
                    lock = c.lock(n, ttl=5.0)
                    assert lock.acquire(blocking=False), lock.node_results
                    r = lock.node_results[0]
                    lock.release()
                    owner = rc.master_for_key(n)
                    host = "127.0.0.1" if owner == 0 else "localhost"
                    assert r.ok and r.message == "shard %s:%d" % (host, rc.nodes.port(owner)), (n, r)
                    seen.add(host)
        assert seen == {"127.0.0.1", "localhost"}
        with Redlock(urls_of(made), node_timeout=0.5) as c:   # and all three as Redlock nodes
            for n in names:
                with c.lock(n, ttl=5.0) as lock:
                    assert lock.held
    finally:
        for rc in made:
            rc.close()


def hostname_only_certs(d):
    """A CA and a server certificate for DNS:localhost only (no IP address): what a managed
    cluster's certificates are like (clientAuth too: members are each other's TLS clients on the
    cluster bus). Made with the openssl command; None without it."""
    import shutil
    import subprocess
    if not shutil.which("openssl"):
        return None

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    (d / "ext.cnf").write_text("[s]\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                               "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost\n")
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca.key")
    run("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "2", "-subj", "/CN=redlock cluster test CA",
        "-out", "ca.crt", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "server.key")
    run("req", "-new", "-key", "server.key", "-subj", "/CN=localhost", "-out", "server.csr")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-sha256", "-days", "2", "-extfile", "ext.cnf", "-extensions", "s", "-out", "server.crt")
    return {"cert": str(d / "server.crt"), "key": str(d / "server.key"), "ca": str(d / "ca.crt")}


@pytest.mark.parametrize("announce", [True, False])
def test_tls_shards_are_verified_by_their_announced_hostname(tmp_path, name, announce):
    # rediss-cluster:// with certificates that name the host, not the address (as managed TLS
    # clusters have). Members that announce their hostname are connected to, and verified, by it:
    # every shard answers. Without it, the client can reach a shard only by its ip, which the
    # certificate does not name: verification fails there, and the node fails for those slots.
    tls = hostname_only_certs(tmp_path)
    if tls is None:
        pytest.skip("no openssl command to make the test certificates")
    conf = {"cluster-announce-hostname": "localhost"} if announce else {}
    made = rcluster.start_all([rcluster.RedisCluster(shards=2, kind=k, tls=tls, conf=conf)
                               for k in ("redis", "valkey", "redis")])
    try:
        urls = [rc.url(host="localhost") for rc in made]
        assert all(u.startswith("rediss-cluster://localhost:") for u in urls)
        n = next("%s:%d" % (name, k) for k in range(10000)
                 if all(rc.master_for_key("%s:%d" % (name, k)) == 1 for rc in made))   # not the seed's
        if announce:
            # One client per cluster (a quorum of one), so that every round waits for its answer.
            for rc, url in zip(made, urls):
                with Redlock([url], node_timeout=1.0, tls_ca_file=tls["ca"]) as one:
                    lock = one.lock(n, ttl=5.0)
                    assert lock.acquire(blocking=False), lock.node_results
                    r = lock.node_results[0]
                    lock.release()
                    assert r.ok and r.message == "shard localhost:%d" % rc.nodes.port(1), r
        with Redlock(urls, node_timeout=1.0, tls_ca_file=tls["ca"]) as c:
            if announce:
                with c.lock(n, ttl=5.0) as lock:
                    assert lock.held
            else:
                # TLS failures are not retried: the acquisition fails at once, naming the ip.
                with pytest.raises(redlock.TLSError, match="certificate verify failed: IP address mismatch "
                                                           r"\(expected 127\.0\.0\.1\)"):
                    c.lock(n, ttl=5.0).acquire(blocking=False)
    finally:
        for rc in made:
            rc.close()


def subscribers(rc, i):
    """The wake-up channels that process i of rc has subscribers on."""
    return rc.cmd(i, "PUBSUB", "CHANNELS", "redlock:wake:*")


def test_the_wake_up_listener_moves_to_another_seed(name):
    # A cluster node's listener subscribes on its first seed. When that member dies, it tries the
    # URL's next seed: PUBLISH reaches subscribers on every member, so a release on the shard
    # that owns the lock still wakes the waiter, who would otherwise sleep its 20 s retry delay.
    made = rcluster.start_all([rcluster.RedisCluster(shards=2, kind=k) for k in ("redis", "valkey", "redis")])
    try:
        k = 0
        while any(rc.master_for_key("%s:%d" % (name, k)) != 1 for rc in made):
            k += 1
        res = "%s:%d" % (name, k)            # owned by process 1 in every cluster, not the first seed
        rec = []
        with Redlock(urls_of(made), node_timeout=0.5) as other, \
                Redlock(urls_of(made), node_timeout=0.5, on_event=rec.append, wake=True, **SLOW_RETRY) as c:
            holder = other.acquire(res, ttl=30.0)
            got = []
            waiter = c.lock(res, ttl=10.0)
            t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
            t.start()
            try:
                wait_until(lambda: all(subscribers(rc, 0) for rc in made), "listeners on the first seeds")
                for rc in made:
                    rc.kill(0)
                wait_until(lambda: all(subscribers(rc, 1) for rc in made), "listeners on the second seeds")
                wait_until(lambda: c.listener_states() == (redlock.ListenerState.READY,) * 3,
                           "every listener ready again")
                woken_before = sum(e.type == EventType.WOKEN for e in rec)
            finally:
                holder.release()
                t.join(60)
            assert got == [True]
            waiter.release()
            # (A new subscription wakes every waiter once, as messages may have been missed
            # meanwhile: those are before the release.) The release's own message woke it too.
            assert sum(e.type == EventType.WOKEN for e in rec) > woken_before, [e.type for e in rec]
    finally:
        for rc in made:
            rc.close()


def test_a_dead_shard_without_replica_fails_its_node_for_its_slots(name):
    # Node 0 is a cluster of three shards; nodes 1 and 2 one-shard clusters. With the master of
    # one shard of node 0 killed, node 0 fails for that shard's slots only, and the locks there
    # are still granted by the other two nodes.
    with rcluster.RedisCluster(shards=3) as a, rcluster.RedisCluster(shards=1) as b, \
            rcluster.RedisCluster(shards=1, kind="valkey") as cc:
        names = names_over_every_shard(a, name, per_shard=3)
        victim = a.master_for_key(names[0])
        with Redlock([a.url(), b.url(), cc.url()], node_timeout=0.3) as c:
            a.kill(victim)
            dead = alive_ok = 0
            for n in names:
                lock = c.lock(n, ttl=5.0)
                assert lock.acquire(blocking=False), lock.node_results
                res = lock.node_results
                if a.master_for_key(n, via=next(i for i in range(3) if i != victim)) == victim:
                    assert not res[0].ok and res[1].ok and res[2].ok, res
                    dead += 1
                else:
                    assert sum(r.ok for r in res) >= 2, res
                    alive_ok += res[0].ok
                lock.release()
            assert dead == 3
            # The other shards' slots are served by node 0 (a round may be decided before its
            # first redirects are followed: a few more).
            for n in names:
                if a.master_for_key(n, via=next(i for i in range(3) if i != victim)) == victim:
                    continue
                for _ in range(20):
                    lock = c.lock(n, ttl=5.0)
                    assert lock.acquire(blocking=False)
                    ok0 = lock.node_results[0].ok
                    lock.release()
                    if ok0:
                        break
                assert ok0, n


def test_clusterdown_fails_that_node_only(name):
    # With cluster-require-full-coverage yes (the servers' default; the harness sets no), one
    # shard without a master makes every member answer CLUSTERDOWN, for every slot. That node
    # fails; the lock is still granted by the two other clusters, and the report names the error
    # and the shard that gave it.
    made = rcluster.start_all([rcluster.RedisCluster(shards=3, conf={"cluster-require-full-coverage": "yes"}),
                               rcluster.RedisCluster(shards=1), rcluster.RedisCluster(shards=1, kind="valkey")])
    try:
        a = made[0]
        names = names_over_every_shard(a, name, per_shard=2)
        victim = a.master_for_key(names[0])
        alive = next(i for i in range(a.shards) if i != victim)
        live_names = [n for n in names if a.master_for_key(n) != victim]
        with Redlock(urls_of(made), node_timeout=0.5) as c:
            for n in live_names:                # the slot map is learned while all is well
                warm = c.lock(n + ":warm", ttl=1.0)
                assert warm.acquire(blocking=False)
                warm.release()
            a.kill(victim)
            wait_until(lambda: "cluster_state:fail" in a.cmd(alive, "CLUSTER", "INFO"),
                       "the cluster to declare itself down")
            for n in live_names:                # slots of shards that are still up: down too
                lock = c.lock(n, ttl=5.0)
                assert lock.acquire(blocking=False), lock.node_results
                res = lock.node_results
                lock.release()
                assert res[1].ok and res[2].ok, res
                # (a round decided by the two others may not have waited for node 0's answer)
                assert res[0].outcome in (redlock.NodeOutcome.ERROR, redlock.NodeOutcome.NOT_WAITED), res
                assert res[0].outcome != redlock.NodeOutcome.ERROR or res[0].message.startswith("CLUSTERDOWN"), res
        # Two nodes, both needed, so node 0's answer is always waited for: its CLUSTERDOWN, named
        # with the shard that gave it, is why there is no quorum.
        live = [i for i in range(a.shards) if i != victim]
        with Redlock([a.url(seeds=live), made[1].url()], node_timeout=0.5) as d:
            # Its first command goes to the seed, which answers CLUSTERDOWN itself and sends the
            # slot map along: the commands after it go to the owners, which answer too.
            assert d.lock(live_names[0] + ":map", ttl=1.0).acquire(blocking=False) is False
            for n in live_names:
                lock = d.lock(n, ttl=5.0)
                assert lock.acquire(blocking=False) is False
                assert isinstance(lock.last_error, redlock.ServerError), lock.last_error
                assert "CLUSTERDOWN" in str(lock.last_error), lock.last_error
                res = lock.node_results[0]
                owner = a.master_for_key(n, via=alive)
                assert res.outcome == redlock.NodeOutcome.ERROR, res
                assert res.message.startswith("CLUSTERDOWN"), res
                assert res.message.endswith("(shard 127.0.0.1:%d)" % a.nodes.port(owner)), res
    finally:
        for rc in made:
            rc.close()


@long_only
def test_failover_to_a_replica_brings_the_node_back(name):
    with rcluster.RedisCluster(shards=3, replicas=1) as a, rcluster.RedisCluster(shards=1) as b, \
            rcluster.RedisCluster(shards=1, kind="valkey") as cc:
        names = names_over_every_shard(a, name, per_shard=2)
        victim = a.master_for_key(names[0])
        with Redlock([a.url(), b.url(), cc.url()], node_timeout=0.3, fencing=True) as c:
            held = c.lock(names[0], ttl=30.0)
            assert held.acquire(blocking=False)
            # Replication is asynchronous: a kill right after the write may lose it (the promoted
            # replica never saw it; docs/algorithm.md). WAIT makes this test's write reach it.
            for _ in range(100):
                if a.cmd(victim, "EXISTS", names[0]) == 1:
                    break
                time.sleep(0.01)
            assert a.cmd(victim, "WAIT", 1, 5000) == 1
            a.kill(victim)
            # The replica is promoted (cluster-node-timeout 1 s); then the node answers again.
            a.wait_failover(victim, rcluster.keyslot(names[0]))
            promoted = a.master_for_key(names[0])
            assert promoted not in (None, victim)
            other = c.lock(names[0], ttl=5.0)
            # The promoted replica kept the key (replicated before the kill): still refused.
            assert other.acquire(blocking=False) is False
            # Node 0 answers for the slot again, from the promoted replica (a round decided at
            # quorum may not wait for it while the client is still being redirected: a few).
            for _ in range(50):
                held.extend(30.0)
                res = held.node_results
                if res[0].ok:
                    break
                time.sleep(0.05)
            assert res[0].ok and res[0].message == "shard 127.0.0.1:%d" % a.nodes.port(promoted), res
            held.release()
            # Every shard's slots, the promoted one's included, are served again.
            for n in names:
                for _ in range(50):
                    lock = c.lock(n, ttl=5.0)
                    assert lock.acquire(blocking=False), lock.node_results
                    res = lock.node_results
                    lock.release()
                    if res[0].ok:
                        break
                    time.sleep(0.05)
                assert res[0].ok, res


def asking(rc, i, *args):
    """One command after ASKING, on one connection to process i: what an importing shard
    answers for a key of a slot it is importing."""
    import socket
    with socket.create_connection(("127.0.0.1", rc.nodes.port(i)), timeout=2.0) as s:
        s.sendall(rcluster.nodes.encode_command(["ASKING"]) + rcluster.nodes.encode_command(list(args)))
        with s.makefile("rb") as f:
            assert rcluster.nodes.read_reply(f) == "OK"
            r = rcluster.nodes.read_reply(f)
    if isinstance(r, rcluster.nodes.ReplyError):
        raise r
    return r


def errorstats(rc, i):
    """{error prefix: count} of process i (INFO errorstats)."""
    out = {}
    for line in rc.cmd(i, "INFO", "errorstats").splitlines():
        if line.startswith("errorstat_"):
            k, _, v = line[len("errorstat_"):].partition(":")
            out[k] = int(v.split("count=")[1].split(",")[0])
    return out


def migrate_slot(rc, slot, src, dst, keys_first=None):
    """Moves slot from process src to dst as redis-cli --cluster reshard does; keys_first: move
    only these keys, and return before the slot is handed over (the migration half done)."""
    if keys_first is None:
        rc.cmd(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", rc.ids[src])
        rc.cmd(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", rc.ids[dst])
    keys = keys_first if keys_first is not None else rc.cmd(src, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
    if keys:
        rc.cmd(src, "MIGRATE", "127.0.0.1", rc.nodes.port(dst), "", 0, 5000, "KEYS", *keys)
    if keys_first is not None:
        return
    for i in range(rc.shards):
        rc.cmd(i, "CLUSTER", "SETSLOT", slot, "NODE", rc.ids[dst])
    rc.wait_ok()


def test_slot_migration_while_locks_are_held(three_shards, name):
    rc = three_shards[0]
    tag = "{%s}" % name
    names = [tag + ":%d" % k for k in range(4)]
    slot = rcluster.keyslot(tag)
    src = rc.master_for_slot(slot)
    dst = (src + 1) % rc.shards
    with Redlock(urls_of(three_shards), fencing=True, node_timeout=0.5) as c, \
            Redlock(urls_of(three_shards), node_timeout=0.5) as other:
        held = [c.lock(n, ttl=30.0) for n in names]
        assert all(lock.acquire(blocking=False) for lock in held)
        tokens = [lock.token for lock in held]
        # Half way: the slot is migrating and the first two locks' keys have moved.
        rc.cmd(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", rc.ids[src])
        rc.cmd(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", rc.ids[dst])
        moved = [k for n in names[:2] for k in (n, n + ":fencing")]
        migrate_slot(rc, slot, src, dst, keys_first=moved)
        assert rc.cmd(dst, "ASKING") == "OK"
        # Nothing is duplicated: a held lock is refused wherever its key is (ASK to the target).
        for n in names:
            assert other.lock(n).acquire(blocking=False) is False
        # The held locks extend: those whose keys have not moved on the source; those whose keys
        # have moved through ASK to the target (the source no longer has them), with the script
        # loaded there on the way (NOSCRIPT after ASKING). Every node confirms, none is lost.
        for lock in held[2:]:
            lock.extend(30.0)
        # The client's connection to the target has sent the extension script (a lock of a slot
        # the target owns), and the target forgets it: the moved keys' extensions there meet
        # NOSCRIPT after ASKING, and their EVAL must go after ASKING again, or the importing
        # shard answers MOVED back to the source.
        on_dst = next(n for n in ("%s:d%d" % (name, k) for k in range(10000)) if rc.master_for_key(n) == dst)
        probe = c.lock(on_dst, ttl=30.0)
        assert probe.acquire(blocking=False)
        probe.extend(30.0)
        probe.release()
        assert rc.cmd(dst, "SCRIPT", "FLUSH") == "OK"
        errors_before = errorstats(rc, dst)
        for lock in held[:2]:
            with pytest.raises(rcluster.nodes.ReplyError, match="^ASK "):
                rc.cmd(src, "EXISTS", lock.name)   # the source sends it on: the key has moved
            before = asking(rc, dst, "PTTL", lock.name)
            lock.extend(30.0)
            assert lock.held

            # Node 0 takes two hops (source, then target) where the others take one, so the round
            # is often decided without it; its extension still lands on the target, as late work
            # that the client's next I/O carries on (a round on a key of the target here).
            def landed(lock=lock, before=before):
                drive = c.lock(on_dst, ttl=1.0)
                if drive.acquire(blocking=False):
                    drive.release()
                return asking(rc, dst, "PTTL", lock.name) > before
            wait_until(landed, "the extension of %s to land on the target" % lock.name)
        wait_until(lambda: errorstats(rc, dst).get("NOSCRIPT", 0) > errors_before.get("NOSCRIPT", 0),
                   "the target to answer NOSCRIPT")
        errors = errorstats(rc, dst)
        assert errors.get("MOVED", 0) == errors_before.get("MOVED", 0), errors
        # The rest moves and the slot is handed over: clients follow MOVED.
        migrate_slot(rc, slot, src, dst, keys_first=rc.cmd(src, "CLUSTER", "GETKEYSINSLOT", slot, 1000))
        for i in range(rc.shards):
            rc.cmd(i, "CLUSTER", "SETSLOT", slot, "NODE", rc.ids[dst])
        rc.wait_ok()
        assert rc.master_for_slot(slot) == dst
        for lock in held:
            # The first extension may be decided before node 0's redirect is followed.
            for _ in range(20):
                lock.extend(30.0)
                if lock.node_results[0].ok:
                    break
            assert lock.node_results[0].message == "shard 127.0.0.1:%d" % rc.nodes.port(dst)
            assert rc.cmd(dst, "EXISTS", lock.name) == 1 and rc.cmd(dst, "PTTL", lock.name) > 20000
        for n in names:
            assert other.lock(n).acquire(blocking=False) is False
        # Nothing is lost: releases delete the keys on the new owner, and tokens keep rising.
        for lock in held:
            lock.release()
        assert all(rc.cmd(dst, "EXISTS", n) == 0 for n in names)
        again = [c.lock(n, ttl=5.0) for n in names]
        assert all(lock.acquire(blocking=False) for lock in again)
        assert all(a.token > t for a, t in zip(again, tokens))
        for lock in again:
            lock.release()


def test_cluster_scale_bench_smoke(capsys):
    # bench/cluster_scale.py --smoke (make bench-cluster is the full form): each row measures
    # something, the client's CPU included, and the table is printed.
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "bench", "cluster_scale.py")
    spec = importlib.util.spec_from_file_location("cluster_scale", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--smoke"])
    assert [name for _, name, _ in rows] == ["3 single servers", "3 clusters x 2 shards"]
    for _, name, r in rows:
        assert r["acquired"] > 0 and r["client_cps"] > 0 and r["node_cps"] > 0, (name, r)
    assert "client us" in capsys.readouterr().out
