/* SPDX-License-Identifier: BSD-3-Clause */
/* script_shas.c: prints the SHA-1 the library computes (scripts.c's
 * rl_scripts_init, rl_sha1_hex over the script text) of each script the
 * models stand for, one "name sha" a line. models/check compiles it against
 * the library's own sources and compares with models/reviewed-scripts.txt. */
#include <stdio.h>

#include "internal.h"

int main(void)
{
    rl_scripts_init();
    printf("rl_script_acquire %s\n", rl_sha_acquire);
    printf("rl_script_release %s\n", rl_sha_release);
    printf("rl_script_extend %s\n", rl_sha_extend);
    printf("rl_script_fence_commit %s\n", rl_sha_fence_commit);
    printf("rl_script_leave %s\n", rl_sha_leave);
    printf("rl_script_sem_acquire %s\n", rl_sha_sem_acquire);
    printf("rl_script_sem_extend %s\n", rl_sha_sem_extend);
    printf("rl_script_sem_release %s\n", rl_sha_sem_release);
    printf("rl_script_sem_fence_commit %s\n", rl_sha_sem_fence_commit);
    printf("rl_script_rw_acquire %s\n", rl_sha_rw_acquire);
    printf("rl_script_rw_read %s\n", rl_sha_rw_read);
    printf("rl_script_rw_extend %s\n", rl_sha_rw_extend);
    printf("rl_script_rw_release %s\n", rl_sha_rw_release);
    printf("rl_script_rw_give_up %s\n", rl_sha_rw_give_up);
    printf("rl_script_multi_acquire %s\n", rl_sha_multi_acquire);
    printf("rl_script_multi_release %s\n", rl_sha_multi_release);
    printf("rl_script_elect %s\n", rl_sha_elect);
    return 0;
}
