/* SPDX-License-Identifier: BSD-3-Clause */
/* test_route.c: the slot map a cluster node learns from CLUSTER NODES
 * (c/src/engine/route.c), on the text real servers sent: redis-server 7.0
 * and valkey-server 8.0, clusters started by tests/harness/rcluster.py
 * (two shards, one replica each), with and without
 * cluster-announce-hostname. Also the ip:port@cport,hostname,aux=value
 * form that Redis 7.2+ documents, a migration marker and a failed master.
 * No server is contacted: the client is opened (which connects to nothing)
 * and its map fed the captured replies, as dispatch does. */
#include "../c/testutil.h"

#include <hiredis/hiredis.h>

#include "internal.h"
#include "engine/engine.h"

/* redis 7.0.15, no hostname announced (the seed is 127.0.0.1:30475) */
static const char redis_plain[] =
    "10bdbbf76f9004799e9938ee95f135e28dc4d3df 127.0.0.1:28054@38054 slave d18e4ea915ab8f211a5678cd07934666dc492d65 0 "
    "1795805079931 2 connected\n"
    "d22928882c180363009a22da0c0f68a0ea1fd9d7 127.0.0.1:30475@40475 myself,master - 0 1795805079000 1 connected "
    "0-8191\n"
    "d18e4ea915ab8f211a5678cd07934666dc492d65 127.0.0.1:24395@34395 master - 0 1795805080135 2 connected "
    "8192-16383\n"
    "e6aa5bd7cdfe2a88236f68c2f86ac349076339b9 127.0.0.1:30053@40053 slave d22928882c180363009a22da0c0f68a0ea1fd9d7 0 "
    "1795805079931 1 connected\n";

/* redis 7.0.15, cluster-announce-hostname localhost (seed 127.0.0.1:23778) */
static const char redis_hostname[] =
    "7ddc98405830c5cd60389b04f82c4c45d2616983 127.0.0.1:21242@31242,localhost slave "
    "6bda432155942148d5bc455101f0f7e851ad3b83 0 1795805082119 2 connected\n"
    "6bda432155942148d5bc455101f0f7e851ad3b83 127.0.0.1:27963@37963,localhost master - 0 1795805082320 2 connected "
    "8192-16383\n"
    "abf5cb9b292a1f090c252caa62747e86cb973c7f 127.0.0.1:23778@33778,localhost myself,master - 0 1795805082000 1 "
    "connected 0-8191\n"
    "d2fec93170f801ee8ada022d8941128af23484e7 127.0.0.1:13907@23907,localhost slave "
    "abf5cb9b292a1f090c252caa62747e86cb973c7f 0 1795805082320 1 connected\n";

/* valkey 8.0.1, cluster-announce-hostname localhost (seed 127.0.0.1:13039) */
static const char valkey_hostname[] =
    "24eef8ececbac8a51a5106f82d7d7e636304a1b1 127.0.0.1:19315@29315,localhost slave "
    "2a116412d1efeffb9efc78e63301d3a34f50c952 0 1795805086657 2 connected\n"
    "2a116412d1efeffb9efc78e63301d3a34f50c952 127.0.0.1:28288@38288,localhost master - 0 1795805086456 2 connected "
    "8192-16383\n"
    "e3d2766392a079bdad60cf3e47a0755b3ff4065e 127.0.0.1:17411@27411,localhost slave "
    "1a3e790a2d9e86180f89c73ff610f0df23598184 0 1795805086557 1 connected\n"
    "1a3e790a2d9e86180f89c73ff610f0df23598184 127.0.0.1:13039@23039,localhost myself,master - 0 0 1 connected "
    "0-8191\n";

/* The Redis 7.2+ form with auxiliary fields: an empty hostname, a hostname
 * followed by shard-id, a migration marker, and a failed master whose
 * slots are no one's until a replica takes over (seed 127.0.0.1:30001). */
static const char aux_fields[] =
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,,shard-id=69bc080733d1355567173199cff4a6a039a2f024 "
    "myself,master - 0 0 1 connected 0-5460 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\n"
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,shard2.example,shard-id=114f6674a35b84949fe567f5dfd41415ee776261 "
    "master - 0 1426238316232 2 connected 5461-10922\n"
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003,shard3.example,shard-id=fdfea2f4fd3b0e67a65c0c4a29843357b5eb4b69 "
    "master,fail - 1426238316232 1426238316232 3 disconnected 10923-16383\n";

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static redlock_client *open_on(int seed_port)
{
    char url[64];
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", seed_port);
    const char *urls[] = { url };
    redlock_client *cl = NULL;
    char err[256] = "";
    if (redlock_client_open(&cl, urls, 1, NULL, err, sizeof err) != 0)
        fprintf(stderr, "open: %s\n", err);
    return cl;
}

static void feed(redlock_client *cl, const char *text)
{
    redisReply rep;
    memset(&rep, 0, sizeof rep);
    rep.type = REDIS_REPLY_STRING;
    rep.str = (char *)text;
    rep.len = strlen(text);
    rl_route_map_reply(cl, 0, &rep, now_us());
}

/* The connection a key of `slot` goes to. */
static size_t pick(redlock_client *cl, unsigned slot)
{
    char key[32];
    for (unsigned k = 0;; k++) {
        int len = snprintf(key, sizeof key, "k%u", k);
        if (rl_keyslot(key, (size_t)len) == slot)
            return rl_route_pick(cl, 0, key, (size_t)len, now_us());
    }
}

static int is(const char *got, const char *want)
{
    return got && want ? strcmp(got, want) == 0 : got == want;
}

static void test_redis_without_hostname(void)
{
    redlock_client *cl = open_on(30475);
    CHECK(cl != NULL);
    if (!cl)
        return;
    feed(cl, redis_plain);
    CHECK(pick(cl, 0) == 0 && pick(cl, 8191) == 0);   /* the seed's own slots: its own connection */
    size_t j = pick(cl, 8192);
    CHECK(j != 0 && pick(cl, 16383) == j);
    CHECK(is(rl_nodeat(cl, j)->ep.host, "127.0.0.1") && rl_nodeat(cl, j)->ep.port == 24395);
    CHECK(rl_nodeat(cl, j)->alias == NULL);
    CHECK(rl_nconns(cl) == 2);                         /* replicas get no connection */
    redlock_client_free(cl);
}

static void check_hostname(const char *text, int seed, int other)
{
    redlock_client *cl = open_on(seed);
    CHECK(cl != NULL);
    if (!cl)
        return;
    feed(cl, text);
    /* the seed, given by its ip, is recognised by its ip */
    CHECK(pick(cl, 0) == 0 && pick(cl, 8191) == 0);
    size_t j = pick(cl, 8192);
    CHECK(j != 0 && pick(cl, 16383) == j);
    CHECK(is(rl_nodeat(cl, j)->ep.host, "localhost") && rl_nodeat(cl, j)->ep.port == other);
    CHECK(is(rl_nodeat(cl, j)->alias, "127.0.0.1"));
    char shown[64];
    rl_route_shard_name(cl, j, shown, sizeof shown);
    char want[64];
    snprintf(want, sizeof want, "localhost:%d", other);
    CHECK(is(shown, want));
    /* A MOVED naming the ip (cluster-preferred-endpoint-type ip, the
     * default) finds the same connection: none is added. */
    char moved[64];
    snprintf(moved, sizeof moved, "MOVED 9000 127.0.0.1:%d", other);
    redisReply rep;
    memset(&rep, 0, sizeof rep);
    rep.type = REDIS_REPLY_ERROR;
    rep.str = moved;
    rep.len = strlen(moved);
    size_t to = SIZE_MAX;
    int ask = -1;
    CHECK(rl_route_redirect(cl, 0, &rep, &to, &ask) == 1);
    CHECK(to == j && ask == 0);
    /* ... and so does one naming the hostname */
    snprintf(moved, sizeof moved, "MOVED 9001 localhost:%d", other);
    rep.len = strlen(moved);
    CHECK(rl_route_redirect(cl, 0, &rep, &to, &ask) == 1 && to == j);
    /* The map read again changes nothing. */
    feed(cl, text);
    CHECK(pick(cl, 8192) == j && rl_nconns(cl) == 2);
    redlock_client_free(cl);
}

static void test_redis_with_hostname(void)
{
    check_hostname(redis_hostname, 23778, 27963);
}

static void test_valkey_with_hostname(void)
{
    check_hostname(valkey_hostname, 13039, 28288);
}

static void test_aux_fields(void)
{
    redlock_client *cl = open_on(30001);
    CHECK(cl != NULL);
    if (!cl)
        return;
    feed(cl, aux_fields);
    CHECK(pick(cl, 0) == 0 && pick(cl, 5460) == 0);    /* ",," : no hostname, the ip (the seed) */
    size_t j = pick(cl, 5461);                         /* the marker is not a slot range */
    CHECK(j != 0 && pick(cl, 10922) == j);
    CHECK(is(rl_nodeat(cl, j)->ep.host, "shard2.example") && rl_nodeat(cl, j)->ep.port == 30002);
    CHECK(is(rl_nodeat(cl, j)->alias, "127.0.0.1"));
    /* a failed master's slots have no owner: they go to the seed, which
     * answers MOVED to the replica that took over (or CLUSTERDOWN) */
    CHECK(pick(cl, 10923) == 0 && pick(cl, 16383) == 0);
    CHECK(rl_nconns(cl) == 2);
    redlock_client_free(cl);
}

/* The quarantine's per-slot markers (c/src/epoch.c): each slot's tag
 * hashes to it, as "{tag}" and behind a prefix, and is the first such. */
static void test_slot_tags(void)
{
    char tag[32], key[64];
    for (unsigned s = 0; s < RL_CLUSTER_SLOTS; s++) {
        int len = rl_cluster_slot_tag(s, tag, sizeof tag);
        CHECK(len > 0 && strncmp(tag, "redlock:epoch:", 14) == 0);
        if (len <= 0)
            return;
        CHECK(rl_keyslot(tag, (size_t)len) == s);
        int klen = snprintf(key, sizeof key, "app:{%s}:q", tag);
        CHECK(rl_keyslot(key, (size_t)klen) == s);
        unsigned t = (unsigned)atoi(tag + 14);
        for (unsigned k = 0; k < t && s % 1024 == 0; k++) {   /* a sample: none before it */
            int l = snprintf(key, sizeof key, "redlock:epoch:%u", k);
            CHECK(rl_keyslot(key, (size_t)l) != s);
        }
    }
    CHECK(rl_cluster_slot_tag(RL_CLUSTER_SLOTS, tag, sizeof tag) == -1);
    CHECK(rl_cluster_slot_tag(0, tag, 4) == -1);   /* too small: no cut tag */
}

int main(void)
{
    run_test("slot_tags", test_slot_tags);
    run_test("redis_without_hostname", test_redis_without_hostname);
    run_test("redis_with_hostname", test_redis_with_hostname);
    run_test("valkey_with_hostname", test_valkey_with_hostname);
    run_test("aux_fields", test_aux_fields);
    return finish_tests();
}
