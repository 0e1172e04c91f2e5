/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_reply.c: libFuzzer target for the library's reply path: arbitrary
 * bytes, as a node's answer, through the hardened reader (c/common/reply.c)
 * and then read as the reply to each command of the protocol table, in each
 * way it can be sent (proto.c). Nothing may crash, leak or recurse without
 * bound; nested replies must be refused. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/engine.h"

static void parse_all(const redisReply *rep)
{
    static const rl_cmd cmds[] = { RL_CMD_SET, RL_CMD_EXTEND, RL_CMD_RELEASE, RL_CMD_LOAD_FUNCTIONS,
                                   RL_CMD_ACQUIRE, RL_CMD_FENCE_COMMIT, RL_CMD_LEAVE };
    static const char *const modes[] = { "", "jfc" };   /* the acquire script without and with a counter */
    rl_round r;
    memset(&r, 0, sizeof r);
    r.key = r.fkey = "k:fencing";
    r.key_len = 1;
    r.fkey_len = 9;
    r.value = "v";
    r.token = "1";
    r.member = "";
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0] * 2; k++) {
        r.cmd = cmds[k / 2];
        r.mode = modes[k % 2];
        for (int via = 0; via < RL_VIA_N; via++) {
            rl_parsed p;
            rl_proto_parse(&r, via, rep, &p);
            if (p.out == RL_PENDING &&
                !(via == RL_VIA_EVALSHA && rl_proto_is_script(r.cmd) && rep->type == REDIS_REPLY_ERROR))
                abort();   /* only a NOSCRIPT to a script sent by EVALSHA leaves the outcome open */
            if (p.out == RL_YES && rep->type == REDIS_REPLY_ERROR)
                abort();   /* an error never counts as a grant */
        }
    }
    /* The quarantine's check (epoch.c): the plain PTTL and the script, read
     * into the node's rl_epoch_node; a whole reply is RL_YES, and what it
     * says must be one of the states the bands allow. */
    static rl_epoch_node ep[REDLOCK_MAX_NODES];
    static const char *const epoch_modes[] = { "p", "s" };
    r.cmd = RL_CMD_EPOCH;
    r.epoch = ep;
    for (size_t k = 0; k < 2; k++) {
        r.mode = epoch_modes[k];
        for (int via = 0; via < RL_VIA_N; via++) {
            rl_parsed p;
            memset(ep, 0, sizeof ep);
            ep[1].prev_pttl = 9000000000000LL - 5000;   /* a reading to compare with */
            ep[1].prev_lo_us = 1;
            p.node = 1;
            rl_proto_parse(&r, via, rep, &p);
            if (p.out == RL_PENDING &&
                !(via == RL_VIA_EVALSHA && rl_proto_is_script(r.cmd) && rep->type == REDIS_REPLY_ERROR))
                abort();
            if (p.out == RL_YES && (rep->type == REDIS_REPLY_ERROR || !ep[1].heard))
                abort();
            if (ep[1].heard && (ep[1].q_ms < -1 || ep[1].jump_ms < 0 || (ep[1].young && ep[1].q_ms) ||
                                (!ep[1].marker && (ep[1].young || ep[1].q_ms))))
                abort();   /* a state the bands do not allow */
            if (ep[0].heard || ep[2].heard)
                abort();   /* only the node that replied */
        }
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    redisContext *ctx = redisConnectFd(sv[0]);
    if (!ctx) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    rl_reply_guard g = RL_REPLY_GUARD_LOCK;
    rl_reply_harden(ctx, &g);
    /* Fed in two pieces, as a socket may deliver it. */
    size_t half = size / 2;
    const unsigned char *piece[2] = { data, data + half };
    size_t len[2] = { half, size - half };
    for (int k = 0; k < 2 && !ctx->err; k++) {
        if (redisReaderFeed(ctx->reader, (const char *)piece[k], len[k]) != REDIS_OK)
            break;
        if (rl_reply_check_buffer(ctx, &g) != 0)
            break;
        for (;;) {
            void *rep = NULL;
            if (redisReaderGetReply(ctx->reader, &rep) != REDIS_OK || !rep)
                break;
            const redisReply *rr = rep;
            if (rr->type == REDIS_REPLY_ARRAY)
                for (size_t e = 0; e < rr->elements; e++)
                    if (rr->element[e] && rr->element[e]->type == REDIS_REPLY_ARRAY)
                        abort();   /* nesting must have been refused */
            parse_all(rr);
            rl_reply_free(rep);
        }
    }
    redisFree(ctx);
    close(sv[1]);
    return 0;
}
