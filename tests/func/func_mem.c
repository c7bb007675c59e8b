/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Functional test of memory tiers through cvia-run (tests/mem/test_mem.sh):
 *   func_mem shm   each rank checks where its own shm segment is: every
 *                  page on node FUNC_NODE (move_pages), the mapping's policy
 *                  FUNC_POLICY in numa_maps ("bind:0", "default"); then
 *                  messages in both directions, checked, eager and
 *                  rendezvous, from buffers of kind FUNC_KIND.
 *   func_mem hold  rank 0 allocates 4 MiB of node:0 memory, writes its pid
 *                  to FUNC_PIDFILE and waits (20 s at most) for FUNC_GOFILE,
 *                  so that cvia-info --mem --pid can read it.
 * Prints "expected-error: ..." and exits 1 when cvia_init fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "mem/mem_tier.h"

static int rank, size;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_RC(call) do { int rc_ = (call); if (rc_) \
        FAIL("%s -> %s (%s)", #call, cvia_err_name(rc_), cvia_strerror(rc_)); } while (0)

/* The numa_maps policy of this process's own segment. */
static void seg_policy(char *out, size_t cap)
{
    char line[1024], name[64];
    FILE *f = fopen("/proc/self/numa_maps", "re");

    snprintf(out, cap, "none");
    snprintf(name, sizeof(name), "/dev/shm/cvia-%u-%d-", (unsigned)getuid(), (int)getpid());
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, name)) {
            sscanf(line, "%*s %63s", out);
            break;
        }
    if (f)
        fclose(f);
}

static void case_shm(void)
{
    const char *want_node = getenv("FUNC_NODE"), *want_pol = getenv("FUNC_POLICY");
    const char *kind = getenv("FUNC_KIND");
    struct cvia_mem_stat *s = calloc(1, sizeof(*s));
    static const size_t sizes[] = { 1, 1000, 40000, 1 << 20 };
    char pol[64];
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;

    if (!s)
        FAIL("out of memory");
    CHECK_RC(cvia__mem_stat(0, 1, s));
    seg_policy(pol, sizeof(pol));
    if (s->shm_size == 0 || s->absent)
        FAIL("own segment not found (%llu bytes, %llu absent)",
             (unsigned long long)s->shm_size, (unsigned long long)s->absent);
    if (want_node && s->shm[atoi(want_node)] != s->shm_size)
        FAIL("segment: %llu of %llu bytes on node %s", (unsigned long long)s->shm[atoi(want_node)],
             (unsigned long long)s->shm_size, want_node);
    if (want_pol && strcmp(pol, want_pol))
        FAIL("segment policy %s, expected %s", pol, want_pol);
    printf("rank %d: segment of %llu bytes, %llu on node %s, policy %s\n", rank,
           (unsigned long long)s->shm_size,
           (unsigned long long)s->shm[want_node ? atoi(want_node) : 0],
           want_node ? want_node : "0", pol);
    free(s);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        size_t n = sizes[i];
        unsigned char *sb, *rb;
        cvia_req_t rq, sq;
        cvia_status_t st;
        if (kind) {
            CHECK_RC(cvia_mem_alloc(n, kind, (void **)&sb));
            CHECK_RC(cvia_mem_alloc(n, kind, (void **)&rb));
        } else if (!(sb = malloc(n)) || !(rb = malloc(n))) {
            FAIL("out of memory");
        }
        for (size_t k = 0; k < n; k++)
            sb[k] = (unsigned char)(k * 7 + (size_t)rank);
        memset(rb, 0, n);
        CHECK_RC(cvia_irecv(rb, n, from, 5, &rq));
        CHECK_RC(cvia_isend(sb, n, peer, 5, &sq));
        CHECK_RC(cvia_wait(&sq, NULL));
        CHECK_RC(cvia_wait(&rq, &st));
        for (size_t k = 0; k < n; k++)
            if (rb[k] != (unsigned char)(k * 7 + (size_t)from))
                FAIL("%zu-byte message: byte %zu differs", n, k);
        if (kind) {
            cvia_mem_free(sb);
            cvia_mem_free(rb);
        } else {
            free(sb);
            free(rb);
        }
    }
    printf("rank %d: messages checked\n", rank);
}

static void case_hold(void)
{
    const char *pidfile = getenv("FUNC_PIDFILE"), *go = getenv("FUNC_GOFILE");
    void *p;

    if (rank == 0) {
        FILE *f;
        CHECK_RC(cvia_mem_alloc(4 << 20, "node:0", &p));
        memset(p, 1, 4 << 20);
        if (!pidfile || !go || !(f = fopen(pidfile, "w")))
            FAIL("FUNC_PIDFILE / FUNC_GOFILE");
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        for (int i = 0; i < 400 && access(go, F_OK); i++)
            usleep(50000);
        cvia_mem_free(p);
    }
    CHECK_RC(cvia_barrier());
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2)
        return 2;
    if ((rc = cvia_init(&argc, &argv)) < 0) {
        printf("expected-error: init: %s\n", cvia_err_name(rc));
        return 1;
    }
    rank = cvia_rank();
    size = cvia_size();
    if (!strcmp(argv[1], "shm"))
        case_shm();
    else if (!strcmp(argv[1], "hold"))
        case_hold();
    else
        FAIL("unknown case %s", argv[1]);
    CHECK_RC(cvia_barrier());
    return cvia_finalize() < 0;
}
