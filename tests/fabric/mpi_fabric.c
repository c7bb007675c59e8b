/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * MPI programs for the corevia libfabric provider, run under Open MPI by
 * mpirun_ofi.sh (pml cm + mtl ofi + the corevia provider; or Open MPI's own
 * ob1 transports, to check this program itself):
 *
 *     mpi_fabric CASE [--token=X ...]
 *
 * CASE: tags wildcard order trunc probe cancel ssend sizes coll threads rma
 * kill. Arguments after CASE (the runner's --token=X, by which it finds
 * processes left behind) are ignored. On success rank 0 prints exactly
 * "ok CASE (N ranks)" after MPI_Finalize; on any failure a rank prints one
 * line to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1). Every received
 * byte is checked against a computed pattern; nothing is timed. Every wait
 * that polls is bounded by a count of tries, not by a clock; a hang is the
 * runner's timeout to catch. "kill" never succeeds: rank 1 dies of SIGKILL
 * while the others wait to receive from it (the job must end with an error).
 *
 * Pair cases match rank r with r ^ 1 (with an odd number of ranks the last
 * one only takes part in the barriers).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, nprocs;
static const char *case_name = "?";

/* ---- failure ----------------------------------------------------------- */

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpi_fabric %s: rank %d: FAIL: %s\n", case_name, rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);   /* MPI_Abort does not return; if it does, still fail */
}

static void mpi_fail(const char *call, int rc, int line) __attribute__((noreturn));
static void mpi_fail(const char *call, int rc, int line)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "error %d", rc);
    MPI_Error_class(rc, &cls);
    fail("line %d: %s returned %d (class %d: %s)", line, call, rc, cls, s);
}

/* every call's return code is checked: MPI_COMM_WORLD gets MPI_ERRORS_RETURN */
#define CK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) mpi_fail(#call, rc_, __LINE__); } while (0)
#define REQUIRE(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    REQUIRE(p, "out of memory for %zu bytes", n);
    return p;
}

/* MPI_Waitall; on MPI_ERR_IN_STATUS names the first request that failed */
#define WAITALL(n, rq, st) waitall_at((n), (rq), (st), #rq, __LINE__)
static void waitall_at(int n, MPI_Request *rq, MPI_Status *st, const char *what, int line)
{
    MPI_Status *own = NULL;
    if (st == MPI_STATUSES_IGNORE)
        st = own = xmalloc(sizeof *st * (size_t)n);
    int rc = MPI_Waitall(n, rq, st);
    if (rc == MPI_ERR_IN_STATUS)
        for (int i = 0; i < n; i++)
            if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING) {
                char s[MPI_MAX_ERROR_STRING];
                int len = 0;
                MPI_Error_string(st[i].MPI_ERROR, s, &len);
                fail("line %d: MPI_Waitall(%s): request %d of %d (source %d, tag %d) failed: %s",
                     line, what, i, n, st[i].MPI_SOURCE, st[i].MPI_TAG, s);
            }
    if (rc != MPI_SUCCESS)
        mpi_fail("MPI_Waitall", rc, line);
    free(own);
}

/* ---- payloads ---------------------------------------------------------- */

/* Byte i of a message from rank r with key t (the tag, or a tag and a
 * sequence number): (i*7 + r*13 + t) & 0xff, plus a term that depends on
 * the 256-byte block i lies in, so that a block delivered at the wrong
 * offset (a multiple of 256 away) does not look right. */
static inline unsigned char pat(size_t i, int r, unsigned t)
{
    uint32_t blk = (uint32_t)(i >> 8) * 2654435761u;
    return (unsigned char)((i * 7u + (unsigned)r * 13u + t + (blk >> 24)) & 0xffu);
}

static void fill(void *buf, size_t n, int r, unsigned t)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = pat(i, r, t);
}

static void check(const void *buf, size_t n, int r, unsigned t, const char *what)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(i, r, t))
            fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x (from rank %d, key %u)",
                 what, i, n, p[i], pat(i, r, t), r, t);
}

#define GUARD 64
#define GUARD_BYTE 0xA5
/* n bytes followed by GUARD guard bytes */
static unsigned char *guarded(size_t n)
{
    unsigned char *p = xmalloc(n + GUARD);
    memset(p + n, GUARD_BYTE, GUARD);
    return p;
}

static void check_guard(const unsigned char *p, size_t n, const char *what)
{
    for (size_t i = 0; i < GUARD; i++)
        if (p[n + i] != GUARD_BYTE)
            fail("%s: byte %zu past the end of the %zu-byte buffer was written (0x%02x)",
                 what, i, n, p[n + i]);
}

static void check_status(const MPI_Status *st, int src, int tag, int count, const char *what)
{
    int c = -1;
    CK(MPI_Get_count(st, MPI_BYTE, &c));
    if ((src != MPI_ANY_SOURCE && st->MPI_SOURCE != src) ||
        (tag != MPI_ANY_TAG && st->MPI_TAG != tag) || (count >= 0 && c != count))
        fail("%s: status says source %d tag %d count %d, expected source %d tag %d count %d",
             what, st->MPI_SOURCE, st->MPI_TAG, c, src, tag, count);
}

static int partner(void)
{
    int p = rank ^ 1;
    return p < nprocs ? p : -1;
}

/* MPI_Iprobe / MPI_Improbe until a message shows, at most this many tries
 * (short sleeps after the first thousand): a bound, never a clock */
#define POLL_TRIES 1000000L
static void poll_pause(long k)
{
    if (k >= 1000) {
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
}

/* ---- tags: many tags, interleaved, each received by its exact tag ------ */

#define NTAGS 64
static size_t tags_size(int k, int src)
{
    return (k % 5 == 0 ? 150000 : 1 + (size_t)(k * 131) % 3000) + (size_t)src;
}

static void case_tags(void)
{
    int *ubp = NULL, flag = 0;
    CK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ubp, &flag));
    REQUIRE(flag && ubp && *ubp >= 32767, "MPI_TAG_UB is %d, the standard wants at least 32767",
            flag && ubp ? *ubp : -1);
    int ub = *ubp;
    /* small tags, scattered ones up to 32767, and the largest ones allowed */
    int tags[NTAGS], nt = 0;
    for (int k = 0; k < NTAGS; k++) {
        int t = k < 40 ? k : k < NTAGS - 3 ? (k * 997) % 32768
              : k == NTAGS - 3 ? ub : k == NTAGS - 2 ? ub - 1 : ub / 2 + 1;
        int dup = 0;
        for (int j = 0; j < nt; j++)
            dup |= tags[j] == t;
        if (!dup)
            tags[nt++] = t;
    }
    int npeer = nprocs - 1, n = npeer * nt;
    unsigned char **sbuf = xmalloc(sizeof *sbuf * (size_t)n), **rbuf = xmalloc(sizeof *rbuf * (size_t)n);
    MPI_Request *sreq = xmalloc(sizeof *sreq * (size_t)n), *rreq = xmalloc(sizeof *rreq * (size_t)n);
    MPI_Status *rst = xmalloc(sizeof *rst * (size_t)n);
    /* index of (peer slot p, tag k): p * nt + k; peer slot p is rank p (+1 past me) */
#define PEER(p) ((p) < rank ? (p) : (p) + 1)
    for (int i = 0; i < n; i++)
        rreq[i] = sreq[i] = MPI_REQUEST_NULL;
    /* receives for odd k first, in reverse order of tags (expected messages) */
    for (int k = nt - 1; k >= 0; k--)
        for (int p = 0; p < npeer; p++) {
            if (!(k & 1))
                continue;
            int i = p * nt + k;
            size_t len = tags_size(k, PEER(p));
            rbuf[i] = xmalloc(len);
            CK(MPI_Irecv(rbuf[i], (int)len, MPI_BYTE, PEER(p), tags[k], MPI_COMM_WORLD, &rreq[i]));
        }
    /* sends: tags in a scrambled order, peers interleaved */
    for (int j = 0; j < nt; j++) {
        int k = (j * 29) % nt;   /* 29 is prime, nt <= 64: a permutation unless nt % 29 == 0 */
        if (nt % 29 == 0)
            k = j;
        for (int p = 0; p < npeer; p++) {
            int i = p * nt + k;
            size_t len = tags_size(k, rank);
            sbuf[i] = xmalloc(len);
            fill(sbuf[i], len, rank, (unsigned)tags[k]);
            CK(MPI_Isend(sbuf[i], (int)len, MPI_BYTE, PEER(p), tags[k], MPI_COMM_WORLD, &sreq[i]));
        }
    }
    /* the rest most likely arrive before their receive (unexpected) */
    CK(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = nt - 1; k >= 0; k--)
        for (int p = npeer - 1; p >= 0; p--) {
            if (k & 1)
                continue;
            int i = p * nt + k;
            size_t len = tags_size(k, PEER(p));
            rbuf[i] = xmalloc(len);
            CK(MPI_Irecv(rbuf[i], (int)len, MPI_BYTE, PEER(p), tags[k], MPI_COMM_WORLD, &rreq[i]));
        }
    WAITALL(n, rreq, rst);
    WAITALL(n, sreq, MPI_STATUSES_IGNORE);
    for (int p = 0; p < npeer; p++)
        for (int k = 0; k < nt; k++) {
            int i = p * nt + k;
            char what[64];
            snprintf(what, sizeof what, "tag %d from rank %d", tags[k], PEER(p));
            size_t len = tags_size(k, PEER(p));
            check_status(&rst[i], PEER(p), tags[k], (int)len, what);
            check(rbuf[i], len, PEER(p), (unsigned)tags[k], what);
            free(rbuf[i]);
            free(sbuf[i]);
        }
#undef PEER
    free(sbuf); free(rbuf); free(sreq); free(rreq); free(rst);
}

/* ---- wildcard: MPI_ANY_SOURCE / MPI_ANY_TAG and the status fields ------ */

#define WC_MSGS 20
static size_t wc_size(int src, int k)
{
    /* message 3 is empty, message 7 large */
    return k == 3 ? 0 : (size_t)(src * 37 + k * 101) % 5000 + (k == 7 ? 200000 : 0);
}

static void case_wildcard(void)
{
    /* phase 1: every rank but 0 sends WC_MSGS messages to rank 0, tag
     * src*100+k; rank 0 takes them all with ANY_SOURCE/ANY_TAG: from each
     * source they must come in the order sent (same receive, same sender) */
    if (rank == 0) {
        size_t max = 0;
        for (int s = 1; s < nprocs; s++)
            for (int k = 0; k < WC_MSGS; k++)
                if (wc_size(s, k) > max)
                    max = wc_size(s, k);
        unsigned char *buf = guarded(max);
        int *next = calloc((size_t)nprocs, sizeof *next);
        REQUIRE(next, "out of memory");
        for (int m = 0; m < (nprocs - 1) * WC_MSGS; m++) {
            MPI_Status st;
            CK(MPI_Recv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            int s = st.MPI_SOURCE, t = st.MPI_TAG, c = -1;
            CK(MPI_Get_count(&st, MPI_BYTE, &c));
            REQUIRE(s >= 1 && s < nprocs, "wildcard receive %d: MPI_SOURCE is %d", m, s);
            REQUIRE(next[s] < WC_MSGS, "wildcard receive %d: more than %d messages from rank %d",
                    m, WC_MSGS, s);
            REQUIRE(t == s * 100 + next[s], "wildcard receive %d from rank %d: MPI_TAG is %d, "
                    "expected %d (messages from one sender must not overtake)", m, s, t,
                    s * 100 + next[s]);
            REQUIRE((size_t)c == wc_size(s, next[s]), "wildcard receive %d from rank %d tag %d: "
                    "count %d, expected %zu", m, s, t, c, wc_size(s, next[s]));
            check(buf, (size_t)c, s, (unsigned)t, "wildcard message");
            check_guard(buf, max, "wildcard message");
            next[s]++;
        }
        free(next);
        free(buf);
    } else {
        for (int k = 0; k < WC_MSGS; k++) {
            size_t len = wc_size(rank, k);
            unsigned char *b = xmalloc(len);
            fill(b, len, rank, (unsigned)(rank * 100 + k));
            CK(MPI_Send(b, (int)len, MPI_BYTE, 0, rank * 100 + k, MPI_COMM_WORLD));
            free(b);
        }
    }
    CK(MPI_Barrier(MPI_COMM_WORLD));

    /* phase 2: a ring; each rank sends its right neighbour ints with tags
     * 5, 6, 7 and an empty message with tag 8. The receiver takes tag 6
     * with ANY_SOURCE, then ANY_TAG from the left (tag 5 comes first),
     * then both wildcards twice (7, then 8); counts in ints and bytes */
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    const int cnt[3] = { 3, 1000, 40000 };
    int *sb[3], *rb = xmalloc(sizeof(int) * 40000);
    MPI_Request rq[4];
    for (int j = 0; j < 3; j++) {
        sb[j] = xmalloc(sizeof(int) * (size_t)cnt[j]);
        for (int i = 0; i < cnt[j]; i++)
            sb[j][i] = rank * 1000003 + (5 + j) * 7919 + i;
        CK(MPI_Isend(sb[j], cnt[j], MPI_INT, right, 5 + j, MPI_COMM_WORLD, &rq[j]));
    }
    CK(MPI_Isend(NULL, 0, MPI_INT, right, 8, MPI_COMM_WORLD, &rq[3]));
    const int order[4] = { 6, 5, 7, 8 };
    for (int j = 0; j < 4; j++) {
        MPI_Status st;
        int src = j == 0 ? MPI_ANY_SOURCE : j == 1 ? left : MPI_ANY_SOURCE;
        int tag = j == 0 ? 6 : MPI_ANY_TAG;
        CK(MPI_Recv(rb, 40000, MPI_INT, src, tag, MPI_COMM_WORLD, &st));
        int t = order[j], n = t == 8 ? 0 : cnt[t - 5], ci = -1, cb = -1, ce = -1;
        CK(MPI_Get_count(&st, MPI_INT, &ci));
        CK(MPI_Get_count(&st, MPI_BYTE, &cb));
        CK(MPI_Get_elements(&st, MPI_INT, &ce));
        REQUIRE(st.MPI_SOURCE == left && st.MPI_TAG == t && ci == n && ce == n &&
                cb == n * (int)sizeof(int),
                "ring receive %d (source %s, tag %s): status source %d tag %d count %d ints / "
                "%d bytes / %d elements, expected source %d tag %d count %d", j,
                src == MPI_ANY_SOURCE ? "ANY" : "left", tag == MPI_ANY_TAG ? "ANY" : "6",
                st.MPI_SOURCE, st.MPI_TAG, ci, cb, ce, left, t, n);
        for (int i = 0; i < n; i++)
            REQUIRE(rb[i] == left * 1000003 + t * 7919 + i,
                    "ring message tag %d: int %d is %d, expected %d", t, i, rb[i],
                    left * 1000003 + t * 7919 + i);
    }
    WAITALL(4, rq, MPI_STATUSES_IGNORE);
    for (int j = 0; j < 3; j++)
        free(sb[j]);
    free(rb);
}

/* ---- order: non-overtaking, same (source, tag), mixed sizes ------------ */

#define ORD_MSGS 48
#define ORD_MAX (1u << 20)
static size_t ord_size(int seq)
{
    return seq % 2 == 0 ? 8 : seq % 4 == 1 ? ORD_MAX : 65536 + (size_t)seq;
}

static void case_order(void)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    unsigned char **sb = xmalloc(sizeof *sb * ORD_MSGS);
    for (int s = 0; s < ORD_MSGS; s++) {
        sb[s] = xmalloc(ord_size(s));
        fill(sb[s], ord_size(s), rank, (unsigned)s);
    }
    unsigned char **rb = xmalloc(sizeof *rb * ORD_MSGS);
    for (int s = 0; s < ORD_MSGS / 2; s++)
        rb[s] = xmalloc(ORD_MAX);
    unsigned char *one = xmalloc(ORD_MAX);
    MPI_Request sreq[ORD_MSGS], rreq[ORD_MSGS / 2];
    MPI_Status rst[ORD_MSGS / 2];
    /* round 0: receives name the source; round 1: MPI_ANY_SOURCE (only
     * the left neighbour sends to me). Every receive is ORD_MAX long, so a
     * message that overtakes shows by its count or its bytes. */
    for (int round = 0; round < 2; round++) {
        int src = round == 0 ? left : MPI_ANY_SOURCE;
        for (int s = 0; s < ORD_MSGS / 4; s++)   /* posted before the sends */
            CK(MPI_Irecv(rb[s], ORD_MAX, MPI_BYTE, src, 3, MPI_COMM_WORLD, &rreq[s]));
        for (int s = 0; s < ORD_MSGS; s++)
            CK(MPI_Isend(sb[s], (int)ord_size(s), MPI_BYTE, right, 3, MPI_COMM_WORLD, &sreq[s]));
        for (int s = ORD_MSGS / 4; s < ORD_MSGS / 2; s++)   /* posted after */
            CK(MPI_Irecv(rb[s], ORD_MAX, MPI_BYTE, src, 3, MPI_COMM_WORLD, &rreq[s]));
        for (int s = ORD_MSGS / 2; s < ORD_MSGS; s++) {   /* blocking, one at a time */
            MPI_Status st;
            char what[64];
            CK(MPI_Recv(one, ORD_MAX, MPI_BYTE, src, 3, MPI_COMM_WORLD, &st));
            snprintf(what, sizeof what, "round %d message %d", round, s);
            check_status(&st, left, 3, (int)ord_size(s), what);
            check(one, ord_size(s), left, (unsigned)s, what);
        }
        WAITALL(ORD_MSGS / 2, rreq, rst);
        for (int s = 0; s < ORD_MSGS / 2; s++) {
            char what[64];
            snprintf(what, sizeof what, "round %d message %d", round, s);
            check_status(&rst[s], left, 3, (int)ord_size(s), what);
            check(rb[s], ord_size(s), left, (unsigned)s, what);
        }
        WAITALL(ORD_MSGS, sreq, MPI_STATUSES_IGNORE);
    }
    for (int s = 0; s < ORD_MSGS; s++)
        free(sb[s]);
    for (int s = 0; s < ORD_MSGS / 2; s++)
        free(rb[s]);
    free(sb); free(rb); free(one);
}

/* ---- trunc: a message longer than the receive buffer ------------------- */

static void expect_trunc(int rc, const char *what)
{
    int cls = -1;
    if (rc == MPI_SUCCESS)
        fail("%s: the receive succeeded, expected MPI_ERR_TRUNCATE", what);
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TRUNCATE) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        fail("%s: error class %d (%s), expected MPI_ERR_TRUNCATE (%d)", what, cls, s,
             MPI_ERR_TRUNCATE);
    }
}

static void case_trunc(void)
{
    int p = partner();
    MPI_Comm comm;
    /* a communicator of its own, errors returned (as on MPI_COMM_WORLD) */
    CK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    /* (sent, receive buffer): eager-sized, and rendezvous-sized */
    const size_t sent[3] = { 100, (1u << 20) + 3, 70000 };
    const size_t room[3] = { 64, 256u << 10, 1 };
    if (p >= 0) {
        for (int j = 0; j < 3; j++) {
            char what[96];
            snprintf(what, sizeof what, "%zu bytes into %zu (%s)", sent[j], room[j],
                     j == 1 ? "MPI_Irecv + MPI_Wait" : "MPI_Recv");
            if (rank % 2 == 0) {   /* the even rank sends, the odd one truncates */
                unsigned char *b = xmalloc(sent[j]);
                fill(b, sent[j], rank, 40u + (unsigned)j);
                /* truncation is the receiver's error: the send itself succeeds */
                CK(MPI_Send(b, (int)sent[j], MPI_BYTE, p, 40 + j, comm));
                free(b);
            } else {
                unsigned char *b = guarded(room[j]);
                memset(b, 0, room[j]);
                MPI_Status st;
                int rc;
                if (j == 1) {
                    MPI_Request rq;
                    CK(MPI_Irecv(b, (int)room[j], MPI_BYTE, p, 40 + j, comm, &rq));
                    rc = MPI_Wait(&rq, &st);
                } else {
                    rc = MPI_Recv(b, (int)room[j], MPI_BYTE, p, 40 + j, comm, &st);
                }
                expect_trunc(rc, what);
                check_guard(b, room[j], what);
                free(b);
            }
        }
        /* the communicator still works, both ways, after the errors */
        for (int j = 0; j < 2; j++) {
            size_t len = j ? 300000 : 500;
            unsigned char *s = xmalloc(len), *r = guarded(len);
            MPI_Status st;
            fill(s, len, rank, 50u + (unsigned)j);
            CK(MPI_Sendrecv(s, (int)len, MPI_BYTE, p, 50 + j, r, (int)len, MPI_BYTE, p, 50 + j,
                            comm, &st));
            check_status(&st, p, 50 + j, (int)len, "exchange after truncation");
            check(r, len, p, 50u + (unsigned)j, "exchange after truncation");
            check_guard(r, len, "exchange after truncation");
            free(s); free(r);
        }
    }
    CK(MPI_Barrier(comm));
    CK(MPI_Comm_free(&comm));
}

/* ---- probe: MPI_Probe, MPI_Iprobe, MPI_Mprobe/Mrecv, MPI_Improbe/Imrecv -- */

#define PR_N 7
static const int pr_tag[PR_N] = { 10, 11, 12, 12, 13, 14, 15 };
static const size_t pr_len[PR_N] = { 1000, (1u << 20) + 5, 33, 77, 0, 300000, 9 };
static unsigned pr_key(int m) { return (unsigned)(m * 100 + pr_tag[m]); }

static void pr_check(const MPI_Status *st, int m, const void *buf, int p, const char *what)
{
    char w[96];
    snprintf(w, sizeof w, "%s (message %d, tag %d)", what, m, pr_tag[m]);
    check_status(st, p, pr_tag[m], (int)pr_len[m], w);
    if (buf)
        check(buf, pr_len[m], p, pr_key(m), w);
}

static void case_probe(void)
{
    int p = partner();
    if (p >= 0) {
        /* both ranks of a pair send all seven and take the partner's */
        unsigned char *sb[PR_N];
        MPI_Request sreq[PR_N];
        for (int m = 0; m < PR_N; m++) {
            sb[m] = xmalloc(pr_len[m]);
            fill(sb[m], pr_len[m], rank, pr_key(m));
            CK(MPI_Isend(sb[m], (int)pr_len[m], MPI_BYTE, p, pr_tag[m], MPI_COMM_WORLD, &sreq[m]));
        }
        unsigned char *b = guarded(pr_len[1]), *b2 = guarded(pr_len[1]);
        MPI_Status st, st2;
        int flag = 0;
        long k;

        /* a tag nobody sends: never there */
        CK(MPI_Iprobe(p, 99, MPI_COMM_WORLD, &flag, &st));
        REQUIRE(!flag, "MPI_Iprobe found a message with tag 99, which nobody sends");

        /* MPI_Probe by tag skips the earlier message 0: the large one */
        CK(MPI_Probe(p, 11, MPI_COMM_WORLD, &st));
        pr_check(&st, 1, NULL, p, "MPI_Probe");
        CK(MPI_Recv(b, (int)pr_len[1], MPI_BYTE, p, 11, MPI_COMM_WORLD, &st));
        pr_check(&st, 1, b, p, "MPI_Recv after MPI_Probe");

        /* MPI_Iprobe with ANY_SOURCE, bounded */
        for (k = 0, flag = 0; k < POLL_TRIES && !flag; k++) {
            CK(MPI_Iprobe(MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &flag, &st));
            if (!flag)
                poll_pause(k);
        }
        REQUIRE(flag, "MPI_Iprobe(ANY_SOURCE, 10) found nothing in %ld tries", POLL_TRIES);
        pr_check(&st, 0, NULL, p, "MPI_Iprobe");
        CK(MPI_Recv(b, 1000, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        pr_check(&st, 0, b, p, "MPI_Recv after MPI_Iprobe");

        /* two messages with tag 12: MPI_Mprobe takes the first out of
         * matching, so MPI_Probe then sees the second */
        MPI_Message ma, mb;
        CK(MPI_Mprobe(p, 12, MPI_COMM_WORLD, &ma, &st));
        pr_check(&st, 2, NULL, p, "MPI_Mprobe (first tag 12)");
        CK(MPI_Probe(p, 12, MPI_COMM_WORLD, &st));
        pr_check(&st, 3, NULL, p, "MPI_Probe after MPI_Mprobe (second tag 12)");
        CK(MPI_Mprobe(p, 12, MPI_COMM_WORLD, &mb, &st));
        pr_check(&st, 3, NULL, p, "MPI_Mprobe (second tag 12)");
        CK(MPI_Mrecv(b2, (int)pr_len[3], MPI_BYTE, &mb, &st2));   /* second first */
        pr_check(&st2, 3, b2, p, "MPI_Mrecv (second tag 12)");
        REQUIRE(mb == MPI_MESSAGE_NULL, "MPI_Mrecv did not set the message to MPI_MESSAGE_NULL");
        CK(MPI_Mrecv(b, (int)pr_len[2], MPI_BYTE, &ma, &st));
        pr_check(&st, 2, b, p, "MPI_Mrecv (first tag 12)");

        /* MPI_Improbe with both wildcards, bounded: the empty message 4 */
        MPI_Message mc = MPI_MESSAGE_NULL;
        MPI_Request rq;
        for (k = 0, flag = 0; k < POLL_TRIES && !flag; k++) {
            CK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &mc, &st));
            if (!flag)
                poll_pause(k);
        }
        REQUIRE(flag, "MPI_Improbe(ANY_SOURCE, ANY_TAG) found nothing in %ld tries", POLL_TRIES);
        pr_check(&st, 4, NULL, p, "MPI_Improbe (wildcards)");
        CK(MPI_Imrecv(b, 0, MPI_BYTE, &mc, &rq));
        CK(MPI_Wait(&rq, &st));
        pr_check(&st, 4, b, p, "MPI_Imrecv (empty message)");

        /* MPI_Improbe by tag: the 300000-byte message 5 */
        for (k = 0, flag = 0; k < POLL_TRIES && !flag; k++) {
            CK(MPI_Improbe(p, 14, MPI_COMM_WORLD, &flag, &mc, &st));
            if (!flag)
                poll_pause(k);
        }
        REQUIRE(flag, "MPI_Improbe(partner, 14) found nothing in %ld tries", POLL_TRIES);
        pr_check(&st, 5, NULL, p, "MPI_Improbe");
        memset(b, 0, pr_len[5]);
        CK(MPI_Imrecv(b, (int)pr_len[1], MPI_BYTE, &mc, &rq));   /* a larger buffer */
        CK(MPI_Wait(&rq, &st));
        pr_check(&st, 5, b, p, "MPI_Imrecv");
        check_guard(b, pr_len[1], "MPI_Imrecv");

        /* the last one with MPI_Probe on both wildcards, then MPI_Mprobe */
        CK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        pr_check(&st, 6, NULL, p, "MPI_Probe (wildcards)");
        CK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ma, &st));
        pr_check(&st, 6, NULL, p, "MPI_Mprobe (wildcards)");
        CK(MPI_Mrecv(b, (int)pr_len[6], MPI_BYTE, &ma, &st));
        pr_check(&st, 6, b, p, "MPI_Mrecv (wildcards)");

        /* nothing left: a probe for anything finds nothing */
        WAITALL(PR_N, sreq, MPI_STATUSES_IGNORE);
        /* MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, an empty receive */
        CK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &ma, &st));
        REQUIRE(ma == MPI_MESSAGE_NO_PROC, "MPI_Mprobe(MPI_PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
        CK(MPI_Mrecv(b, 10, MPI_BYTE, &ma, &st));
        REQUIRE(st.MPI_SOURCE == MPI_PROC_NULL, "MPI_Mrecv(MPI_MESSAGE_NO_PROC): source %d",
                st.MPI_SOURCE);
        check_guard(b, pr_len[1], "probe buffers");
        check_guard(b2, pr_len[1], "probe buffers");
        for (int m = 0; m < PR_N; m++)
            free(sb[m]);
        free(b); free(b2);
    }
    CK(MPI_Barrier(MPI_COMM_WORLD));
    if (p >= 0) {   /* everyone is past the probes: nothing may be left over */
        int flag = 1;
        MPI_Status st;
        CK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        REQUIRE(!flag, "a message is left over after the probes (source %d tag %d)",
                st.MPI_SOURCE, st.MPI_TAG);
    }
}

/* ---- cancel: a posted receive that nothing matches --------------------- */

static void cancel_one(int src, int tag, MPI_Comm comm, const char *what)
{
    char b[16];
    MPI_Request rq;
    MPI_Status st;
    int cancelled = 0;
    CK(MPI_Irecv(b, (int)sizeof b, MPI_BYTE, src, tag, comm, &rq));
    CK(MPI_Cancel(&rq));
    CK(MPI_Wait(&rq, &st));
    CK(MPI_Test_cancelled(&st, &cancelled));
    REQUIRE(cancelled, "%s: MPI_Test_cancelled is false after MPI_Cancel of a receive nothing "
            "matches", what);
    REQUIRE(rq == MPI_REQUEST_NULL, "%s: the request is not MPI_REQUEST_NULL after MPI_Wait", what);
}

static void case_cancel(void)
{
    int p = partner();
    MPI_Comm dup;
    CK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    if (p >= 0) {
        cancel_one(p, 500, MPI_COMM_WORLD, "by source and tag");
        cancel_one(MPI_ANY_SOURCE, 501, MPI_COMM_WORLD, "ANY_SOURCE");
        cancel_one(p, MPI_ANY_TAG, dup, "ANY_TAG on a dup'd communicator");
        cancel_one(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, "both wildcards on a dup'd communicator");
        for (int i = 0; i < 200; i++)   /* many: nothing may leak or stay matchable */
            cancel_one(i % 2 ? p : MPI_ANY_SOURCE, 600 + i % 7, MPI_COMM_WORLD, "repeated");
    }
    /* the partner sends the tags of the cancelled receives only now: a
     * cancelled receive must not take them */
    CK(MPI_Barrier(MPI_COMM_WORLD));
    if (p >= 0) {
        const int tag[4] = { 500, 501, 600, 77 };
        const size_t len[4] = { 2000, 300000, 1, 4096 };
        MPI_Comm cm[4] = { MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_COMM_WORLD, dup };
        unsigned char *sb[4], *rb[4];
        MPI_Request sreq[4];
        for (int j = 0; j < 4; j++) {
            sb[j] = xmalloc(len[j]);
            rb[j] = guarded(len[j]);
            fill(sb[j], len[j], rank, (unsigned)tag[j]);
            CK(MPI_Isend(sb[j], (int)len[j], MPI_BYTE, p, tag[j], cm[j], &sreq[j]));
        }
        for (int j = 0; j < 4; j++) {
            MPI_Status st;
            int cancelled = 1;
            char what[64];
            snprintf(what, sizeof what, "after cancel: tag %d", tag[j]);
            CK(MPI_Recv(rb[j], (int)len[j], MPI_BYTE, j == 3 ? MPI_ANY_SOURCE : p,
                        j == 3 ? MPI_ANY_TAG : tag[j], cm[j], &st));
            check_status(&st, p, tag[j], (int)len[j], what);
            check(rb[j], len[j], p, (unsigned)tag[j], what);
            check_guard(rb[j], len[j], what);
            CK(MPI_Test_cancelled(&st, &cancelled));
            REQUIRE(!cancelled, "%s: MPI_Test_cancelled is true for a completed receive", what);
        }
        WAITALL(4, sreq, MPI_STATUSES_IGNORE);
        for (int j = 0; j < 4; j++) {
            free(sb[j]);
            free(rb[j]);
        }
    }
    CK(MPI_Barrier(dup));
    CK(MPI_Comm_free(&dup));
}

/* ---- ssend: MPI_Ssend / MPI_Issend, small and large -------------------- */

static void case_ssend(void)
{
    int p = partner();
    const size_t sizes[5] = { 0, 8, 65536, 1u << 20, 4u << 20 };
    if (p >= 0) {
        unsigned char *s = xmalloc(4u << 20), *r = guarded(4u << 20);
        int even = rank % 2 == 0;
        for (int j = 0; j < 5; j++) {
            size_t len = sizes[j];
            char what[64];
            MPI_Status st;
            /* MPI_Ssend both ways: even first, then odd */
            for (int dir = 0; dir < 2; dir++) {
                int sender = (dir == 0) == even;
                snprintf(what, sizeof what, "MPI_Ssend of %zu bytes", len);
                if (sender) {
                    fill(s, len, rank, 1000u + (unsigned)j);
                    CK(MPI_Ssend(s, (int)len, MPI_BYTE, p, 1, MPI_COMM_WORLD));
                } else {
                    CK(MPI_Recv(r, (int)len, MPI_BYTE, p, 1, MPI_COMM_WORLD, &st));
                    check_status(&st, p, 1, (int)len, what);
                    check(r, len, p, 1000u + (unsigned)j, what);
                    check_guard(r, 4u << 20, what);
                }
            }
            /* MPI_Issend cannot complete before its receive is posted: the
             * receiver posts it only when told to, after the sender has
             * tested the request many times */
            snprintf(what, sizeof what, "MPI_Issend of %zu bytes", len);
            if (even) {
                MPI_Request rq;
                int flag = 0;
                char go = 'g';
                fill(s, len, rank, 2000u + (unsigned)j);
                CK(MPI_Issend(s, (int)len, MPI_BYTE, p, 2, MPI_COMM_WORLD, &rq));
                for (int k = 0; k < 200 && !flag; k++) {
                    CK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
                    poll_pause(k + 1000);
                }
                REQUIRE(!flag, "%s completed before the receiver posted its receive", what);
                CK(MPI_Send(&go, 1, MPI_CHAR, p, 3, MPI_COMM_WORLD));
                CK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                char go = 0;
                CK(MPI_Recv(&go, 1, MPI_CHAR, p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CK(MPI_Recv(r, (int)len, MPI_BYTE, p, 2, MPI_COMM_WORLD, &st));
                check_status(&st, p, 2, (int)len, what);
                check(r, len, p, 2000u + (unsigned)j, what);
            }
            /* and MPI_Issend the other way round, waited on at once */
            if (!even) {
                MPI_Request rq;
                fill(s, len, rank, 3000u + (unsigned)j);
                CK(MPI_Issend(s, (int)len, MPI_BYTE, p, 4, MPI_COMM_WORLD, &rq));
                CK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                CK(MPI_Recv(r, (int)len, MPI_BYTE, p, 4, MPI_COMM_WORLD, &st));
                check_status(&st, p, 4, (int)len, what);
                check(r, len, p, 3000u + (unsigned)j, what);
            }
        }
        free(s);
        free(r);
    }
}

/* ---- sizes: 0 B to 64 MiB ---------------------------------------------- */

static void case_sizes(void)
{
    int p = partner();
    const size_t sizes[] = { 0, 1, 2, 3, 7, 13, 63, 64, 65, 255, 1000, 1023, 4095, 4096, 4097,
                             8191, 65535, 65536, 65537, (1u << 20) - 1, 1u << 20,
                             (1u << 20) + 1, 64u << 20 };
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    if (p >= 0) {
        /* an empty message with NULL buffers */
        MPI_Status st;
        CK(MPI_Sendrecv(NULL, 0, MPI_BYTE, p, 0, NULL, 0, MPI_BYTE, p, 0, MPI_COMM_WORLD, &st));
        check_status(&st, p, 0, 0, "0 bytes, NULL buffers");
        for (int j = 0; j < ns; j++) {
            size_t len = sizes[j];
            unsigned char *s = xmalloc(len), *r = guarded(len);
            char what[64];
            fill(s, len, rank, (unsigned)j);
            /* MPI_Sendrecv */
            snprintf(what, sizeof what, "%zu bytes (MPI_Sendrecv)", len);
            memset(r, 0, len);
            CK(MPI_Sendrecv(s, (int)len, MPI_BYTE, p, j + 1, r, (int)len, MPI_BYTE, p, j + 1,
                            MPI_COMM_WORLD, &st));
            check_status(&st, p, j + 1, (int)len, what);
            check(r, len, p, (unsigned)j, what);
            check_guard(r, len, what);
            /* blocking MPI_Send / MPI_Recv, the even rank first, into a
             * receive posted late (the message waits at the receiver) */
            snprintf(what, sizeof what, "%zu bytes (MPI_Send/MPI_Recv)", len);
            memset(r, 0, len);
            for (int dir = 0; dir < 2; dir++) {
                if ((dir == 0) == (rank % 2 == 0)) {
                    CK(MPI_Send(s, (int)len, MPI_BYTE, p, 100 + j, MPI_COMM_WORLD));
                } else {
                    CK(MPI_Recv(r, (int)len, MPI_BYTE, p, 100 + j, MPI_COMM_WORLD, &st));
                    check_status(&st, p, 100 + j, (int)len, what);
                    check(r, len, p, (unsigned)j, what);
                    check_guard(r, len, what);
                }
            }
            free(s);
            free(r);
        }
    }
}

/* ---- coll: Bcast, Reduce, Allreduce, Alltoall, Alltoallv, Barrier ------- */

static int val(int r, int i) { return (int)(((unsigned)i * 3u + (unsigned)r * 5u) % 1000u) - 300; }

static void case_coll(void)
{
    /* MPI_Bcast: every root for small sizes, the last rank for large ones */
    const size_t bsz[] = { 1, 7, 1000, 65536, 300001, 4u << 20 };
    for (int j = 0; j < 6; j++) {
        size_t len = bsz[j];
        unsigned char *b = guarded(len);
        int nroots = len <= 65536 ? nprocs : 1;
        for (int k = 0; k < nroots; k++) {
            int root = len <= 65536 ? k : nprocs - 1;
            char what[64];
            if (rank == root)
                fill(b, len, root, (unsigned)j);
            else
                memset(b, 0, len);
            CK(MPI_Bcast(b, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
            snprintf(what, sizeof what, "MPI_Bcast of %zu bytes from %d", len, root);
            check(b, len, root, (unsigned)j, what);
            check_guard(b, len, what);
        }
        free(b);
    }
    /* MPI_Reduce / MPI_Allreduce of ints (SUM, MAX) and doubles (SUM,
     * integral values: exact in any order) */
    const int rsz[] = { 1, 100, 65536, 1 << 20 };
    for (int j = 0; j < 4; j++) {
        int n = rsz[j], root = j % nprocs;
        int *s = xmalloc(sizeof(int) * (size_t)n), *r = xmalloc(sizeof(int) * (size_t)n);
        double *ds = xmalloc(sizeof(double) * (size_t)n), *dr = xmalloc(sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) {
            s[i] = val(rank, i);
            ds[i] = (double)val(rank, i) * 0.5;
        }
        CK(MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < n; i++) {
                int want = 0;
                for (int q = 0; q < nprocs; q++)
                    want += val(q, i);
                REQUIRE(r[i] == want, "MPI_Reduce(SUM) of %d ints at root %d: [%d] = %d, expected %d",
                        n, root, i, r[i], want);
            }
        CK(MPI_Allreduce(s, r, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            int want = val(0, i);
            for (int q = 1; q < nprocs; q++)
                if (val(q, i) > want)
                    want = val(q, i);
            REQUIRE(r[i] == want, "MPI_Allreduce(MAX) of %d ints: [%d] = %d, expected %d", n, i,
                    r[i], want);
        }
        CK(MPI_Allreduce(MPI_IN_PLACE, ds, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            double want = 0;
            for (int q = 0; q < nprocs; q++)
                want += (double)val(q, i) * 0.5;
            REQUIRE(ds[i] == want, "MPI_Allreduce(SUM, IN_PLACE) of %d doubles: [%d] = %g, "
                    "expected %g", n, i, ds[i], want);
        }
        CK(MPI_Reduce(rank == root ? MPI_IN_PLACE : s, s, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < n; i++) {
                int want = 0;
                for (int q = 0; q < nprocs; q++)
                    want += val(q, i);
                REQUIRE(s[i] == want, "MPI_Reduce(SUM, IN_PLACE) of %d ints: [%d] = %d, expected %d",
                        n, i, s[i], want);
            }
        free(s); free(r); free(ds); free(dr);
    }
    /* MPI_Alltoall: c ints to every rank */
    const int asz[] = { 1, 100, 16384 };
    for (int j = 0; j < 3; j++) {
        int c = asz[j];
        size_t tot = (size_t)c * (size_t)nprocs;
        int *s = xmalloc(sizeof(int) * tot), *r = xmalloc(sizeof(int) * tot);
        for (int q = 0; q < nprocs; q++)
            for (int i = 0; i < c; i++)
                s[(size_t)q * c + i] = rank * 1000003 + q * 10007 + i;
        memset(r, 0xff, sizeof(int) * tot);
        CK(MPI_Alltoall(s, c, MPI_INT, r, c, MPI_INT, MPI_COMM_WORLD));
        for (int q = 0; q < nprocs; q++)
            for (int i = 0; i < c; i++)
                REQUIRE(r[(size_t)q * c + i] == q * 1000003 + rank * 10007 + i,
                        "MPI_Alltoall of %d ints: from rank %d, [%d] = %d, expected %d", c, q, i,
                        r[(size_t)q * c + i], q * 1000003 + rank * 10007 + i);
        free(s); free(r);
    }
    /* MPI_Alltoallv: uneven counts (some zero), gaps between the blocks
     * that must stay untouched */
    const int vm[] = { 1, 3000 };
    for (int j = 0; j < 2; j++) {
        int m = vm[j], gap = 3;
        int *sc = xmalloc(sizeof(int) * (size_t)nprocs), *sd = xmalloc(sizeof(int) * (size_t)nprocs);
        int *rc = xmalloc(sizeof(int) * (size_t)nprocs), *rd = xmalloc(sizeof(int) * (size_t)nprocs);
#define VCOUNT(from, to) ((((from) + 2 * (to)) % 5) * m + ((from) == (to) ? 0 : 1))
        int st = 0, rt = 0;
        for (int q = 0; q < nprocs; q++) {
            sc[q] = VCOUNT(rank, q);
            sd[q] = st;
            st += sc[q] + gap;
            rc[q] = VCOUNT(q, rank);
            rd[q] = rt;
            rt += rc[q] + gap;
        }
        int *s = xmalloc(sizeof(int) * (size_t)st), *r = xmalloc(sizeof(int) * (size_t)rt);
        for (int i = 0; i < st; i++)
            s[i] = -7;
        for (int i = 0; i < rt; i++)
            r[i] = -9;
        for (int q = 0; q < nprocs; q++)
            for (int i = 0; i < sc[q]; i++)
                s[sd[q] + i] = rank * 1000003 + q * 10007 + i;
        CK(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD));
        for (int q = 0; q < nprocs; q++) {
            for (int i = 0; i < rc[q]; i++)
                REQUIRE(r[rd[q] + i] == q * 1000003 + rank * 10007 + i,
                        "MPI_Alltoallv (m=%d): from rank %d, [%d] = %d, expected %d", m, q, i,
                        r[rd[q] + i], q * 1000003 + rank * 10007 + i);
            for (int i = 0; i < gap; i++)
                REQUIRE(r[rd[q] + rc[q] + i] == -9,
                        "MPI_Alltoallv (m=%d): the gap after rank %d's block was written", m, q);
        }
#undef VCOUNT
        free(s); free(r); free(sc); free(sd); free(rc); free(rd);
    }
    /* MPI_Barrier, many in a row */
    for (int i = 0; i < 50; i++)
        CK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- threads: MPI_THREAD_MULTIPLE, four threads a rank ------------------ */

#define TH_N 4
#define TH_ITERS 150
#define TH_ANY_BASE 200
static MPI_Comm th_dup;

static size_t th_size(int k)
{
    static const size_t sz[6] = { 1, 100, 4000, 0, 777, 70000 };
    return sz[k % 6];
}

static void *th_main(void *arg)
{
    int id = (int)(intptr_t)arg, p = partner();
    /* threads 0..2: MPI_COMM_WORLD, tag 10+id; thread 3: the dup'd
     * communicator, tags TH_ANY_BASE + k % 50 received with MPI_ANY_TAG */
    MPI_Comm comm = id == TH_N - 1 ? th_dup : MPI_COMM_WORLD;
    unsigned char *s = xmalloc(70000), *r = guarded(70000);
    for (int k = 0; k < TH_ITERS; k++) {
        size_t len = th_size(k + id);
        int stag = id == TH_N - 1 ? TH_ANY_BASE + k % 50 : 10 + id;
        int rtag = id == TH_N - 1 ? MPI_ANY_TAG : stag;
        unsigned key = (unsigned)(k * 8 + id);
        char what[80];
        MPI_Status st;
        snprintf(what, sizeof what, "thread %d message %d (%zu bytes, tag %d)", id, k, len, stag);
        fill(s, len, rank, key);
        memset(r, 0, len);
        if (k % 2 == 0) {
            CK(MPI_Sendrecv(s, (int)len, MPI_BYTE, p, stag, r, 70000, MPI_BYTE, p, rtag, comm, &st));
        } else {
            MPI_Request rq[2];
            MPI_Status sts[2];
            CK(MPI_Irecv(r, 70000, MPI_BYTE, p, rtag, comm, &rq[0]));
            CK(MPI_Isend(s, (int)len, MPI_BYTE, p, stag, comm, &rq[1]));
            WAITALL(2, rq, sts);
            st = sts[0];
        }
        check_status(&st, p, stag, (int)len, what);
        check(r, len, p, key, what);
        check_guard(r, 70000, what);
    }
    free(s);
    free(r);
    return NULL;
}

static void case_threads(int provided)
{
    static const char *lv[] = { "MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE" };
    const char *got = provided == MPI_THREAD_SINGLE ? lv[0] : provided == MPI_THREAD_FUNNELED ? lv[1]
                    : provided == MPI_THREAD_SERIALIZED ? lv[2] : provided == MPI_THREAD_MULTIPLE ? lv[3]
                    : "an unknown level";
    REQUIRE(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided %s (%d), not "
            "MPI_THREAD_MULTIPLE: this MPI (or its transport) cannot run the threads case",
            got, provided);
    CK(MPI_Comm_dup(MPI_COMM_WORLD, &th_dup));
    CK(MPI_Comm_set_errhandler(th_dup, MPI_ERRORS_RETURN));
    if (partner() >= 0) {
        pthread_t th[TH_N];
        for (int i = 0; i < TH_N; i++)
            REQUIRE(pthread_create(&th[i], NULL, th_main, (void *)(intptr_t)i) == 0,
                    "pthread_create failed");
        for (int i = 0; i < TH_N; i++)
            pthread_join(th[i], NULL);
    }
    CK(MPI_Barrier(th_dup));
    CK(MPI_Comm_free(&th_dup));
}

/* ---- rma: Put, Get, Accumulate(SUM); fence and lock/unlock -------------- */

static int rval(int r, int i, int round) { return (r * 7919 + i * 31 + round * 101) % 100003; }

#define RMA_S (1 << 17)     /* ints put into the right neighbour: 512 KiB */
#define RMA_G 1000          /* ints got from the left neighbour */

/* the region the left neighbour puts into, after round `round` */
static void rma_check_put(const int *w, int round, const char *what)
{
    int left = (rank + nprocs - 1) % nprocs;
    for (int i = 0; i < RMA_S; i++)
        REQUIRE(w[i] == rval(left, i, round), "%s: put region [%d] = %d, expected %d", what, i,
                w[i], rval(left, i, round));
}

static void case_rma(void)
{
    int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
    /* window layout in ints: [0,S) put target | [S,S+np) accumulate slots |
     * [S+np] lock counter | [S+np+1, +G) get source */
    const int acc = RMA_S, ctr = RMA_S + nprocs, gsrc = RMA_S + nprocs + 1;
    const int wlen = gsrc + RMA_G;
    int *w = xmalloc(sizeof(int) * (size_t)wlen);
    for (int i = 0; i < wlen; i++)
        w[i] = 0;
    for (int i = 0; i < RMA_G; i++)
        w[gsrc + i] = rval(rank, i, 7);
    int *src = xmalloc(sizeof(int) * RMA_S), *got = xmalloc(sizeof(int) * RMA_S);
    int *a = xmalloc(sizeof(int) * (size_t)nprocs);
    MPI_Win win;
    CK(MPI_Win_create(w, (MPI_Aint)sizeof(int) * wlen, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* 1. fence epoch: Put to the right, Get from the left, Accumulate
     * (rank + j) into slot j of every rank */
    for (int i = 0; i < RMA_S; i++)
        src[i] = rval(rank, i, 0);
    for (int j = 0; j < nprocs; j++)
        a[j] = rank + j;
    CK(MPI_Win_fence(0, win));
    CK(MPI_Put(src, RMA_S, MPI_INT, right, 0, RMA_S, MPI_INT, win));
    CK(MPI_Get(got, RMA_G, MPI_INT, left, gsrc, RMA_G, MPI_INT, win));
    for (int t = 0; t < nprocs; t++)
        CK(MPI_Accumulate(a, nprocs, MPI_INT, t, acc, nprocs, MPI_INT, MPI_SUM, win));
    CK(MPI_Win_fence(0, win));
    for (int i = 0; i < RMA_G; i++)
        REQUIRE(got[i] == rval(left, i, 7), "fence: MPI_Get [%d] = %d, expected %d", i, got[i],
                rval(left, i, 7));
    rma_check_put(w, 0, "fence: MPI_Put");
    for (int j = 0; j < nprocs; j++) {
        int want = nprocs * (nprocs - 1) / 2 + nprocs * j;
        REQUIRE(w[acc + j] == want, "fence: MPI_Accumulate slot %d = %d, expected %d", j,
                w[acc + j], want);
    }
    CK(MPI_Win_fence(0, win));

    /* 2. passive target: under an exclusive lock of every rank in turn,
     * add rank+1 to its counter and Put a new round into the right
     * neighbour; under a shared lock, Get from the left */
    for (int i = 0; i < RMA_S; i++)
        src[i] = rval(rank, i, 1);
    CK(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < nprocs; k++) {
        int t = (rank + k) % nprocs, one = rank + 1;
        CK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        CK(MPI_Accumulate(&one, 1, MPI_INT, t, ctr, 1, MPI_INT, MPI_SUM, win));
        if (t == right)
            CK(MPI_Put(src, RMA_S, MPI_INT, t, 0, RMA_S, MPI_INT, win));
        CK(MPI_Win_unlock(t, win));
    }
    memset(got, 0, sizeof(int) * RMA_G);
    CK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
    CK(MPI_Get(got, RMA_G, MPI_INT, left, gsrc, RMA_G, MPI_INT, win));
    CK(MPI_Win_unlock(left, win));
    for (int i = 0; i < RMA_G; i++)
        REQUIRE(got[i] == rval(left, i, 7), "lock: MPI_Get [%d] = %d, expected %d", i, got[i],
                rval(left, i, 7));
    CK(MPI_Barrier(MPI_COMM_WORLD));
    /* one's own window is read inside a lock on oneself: right in the
     * separate memory model too */
    CK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    rma_check_put(w, 1, "lock: MPI_Put");
    REQUIRE(w[ctr] == nprocs * (nprocs + 1) / 2, "lock: MPI_Accumulate counter = %d, expected %d",
            w[ctr], nprocs * (nprocs + 1) / 2);
    CK(MPI_Win_unlock(rank, win));
    CK(MPI_Barrier(MPI_COMM_WORLD));
    CK(MPI_Win_free(&win));

    /* 3. MPI_Win_allocate: a large Accumulate of every rank into rank 0
     * (fence), then a large Get from the right neighbour (shared lock) */
    int *m = NULL;
    CK(MPI_Win_allocate((MPI_Aint)sizeof(int) * RMA_S, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &m, &win));
    CK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < RMA_S; i++)
        m[i] = rank == 0 ? 0 : rval(rank, i, 3);
    CK(MPI_Win_unlock(rank, win));
    for (int i = 0; i < RMA_S; i++)
        src[i] = rval(rank, i, 2);
    CK(MPI_Win_fence(0, win));
    CK(MPI_Accumulate(src, RMA_S, MPI_INT, 0, 0, RMA_S, MPI_INT, MPI_SUM, win));
    CK(MPI_Win_fence(0, win));
    if (rank == 0)
        for (int i = 0; i < RMA_S; i++) {
            int want = 0;
            for (int q = 0; q < nprocs; q++)
                want += rval(q, i, 2);
            REQUIRE(m[i] == want, "MPI_Win_allocate: MPI_Accumulate [%d] = %d, expected %d", i,
                    m[i], want);
        }
    CK(MPI_Win_fence(0, win));
    memset(got, 0, sizeof(int) * RMA_S);
    CK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CK(MPI_Get(got, RMA_S, MPI_INT, right, 0, RMA_S, MPI_INT, win));
    CK(MPI_Win_unlock(right, win));
    if (right != 0)
        for (int i = 0; i < RMA_S; i++)
            REQUIRE(got[i] == rval(right, i, 3), "MPI_Win_allocate: MPI_Get [%d] = %d, expected %d",
                    i, got[i], rval(right, i, 3));
    CK(MPI_Barrier(MPI_COMM_WORLD));
    CK(MPI_Win_free(&win));
    free(w); free(src); free(got); free(a);
}

/* ---- kill: rank 1 dies while the others wait for it --------------------- */

static void case_kill(void)
{
    char b[64];
    MPI_Status st;
    if (rank == 1) {
        CK(MPI_Recv(b, 64, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
        check(b, 64, 0, 1, "first exchange");
        fill(b, 64, 1, 2);
        CK(MPI_Send(b, 64, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
        fflush(NULL);
        raise(SIGKILL);
        _exit(3);   /* not reached */
    }
    if (rank == 0) {
        fill(b, 64, 0, 1);
        CK(MPI_Send(b, 64, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        CK(MPI_Recv(b, 64, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st));
        check(b, 64, 1, 2, "first exchange");
    }
    /* rank 1 never sends this: MPI (the launcher, or the transport noticing
     * the dead peer) must end the job */
    int rc = MPI_Recv(b, 64, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &st);
    if (rc == MPI_SUCCESS)
        fail("received a message rank 1 never sent");
    mpi_fail("MPI_Recv from the dead rank 1", rc, __LINE__);
}

/* ---- main ---------------------------------------------------------------- */

static const char *const cases[] = { "tags", "wildcard", "order", "trunc", "probe", "cancel",
                                     "ssend", "sizes", "coll", "threads", "rma", "kill" };

int main(int argc, char **argv)
{
    int ncases = (int)(sizeof cases / sizeof cases[0]), which = -1, provided = -1;
    if (argc >= 2)
        for (int i = 0; i < ncases; i++)
            if (!strcmp(argv[1], cases[i]))
                which = i;
    if (which < 0) {
        fprintf(stderr, "usage: mpi_fabric CASE [--token=X]; CASE:");
        for (int i = 0; i < ncases; i++)
            fprintf(stderr, " %s", cases[i]);
        fprintf(stderr, "\n");
        return 2;
    }
    case_name = cases[which];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(case_name, "threads")) {
        if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "mpi_fabric %s: MPI_Init_thread failed\n", case_name);
            return 1;
        }
    } else if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_fabric %s: MPI_Init failed\n", case_name);
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    REQUIRE(nprocs >= 2, "needs at least 2 ranks, has %d", nprocs);

    switch (which) {
    case 0: case_tags(); break;
    case 1: case_wildcard(); break;
    case 2: case_order(); break;
    case 3: case_trunc(); break;
    case 4: case_probe(); break;
    case 5: case_cancel(); break;
    case 6: case_ssend(); break;
    case 7: case_sizes(); break;
    case 8: case_coll(); break;
    case 9: case_threads(provided); break;
    case 10: case_rma(); break;
    case 11: case_kill(); break;
    }
    CK(MPI_Barrier(MPI_COMM_WORLD));
    CK(MPI_Finalize());
    /* after MPI_Finalize: "ok" also means the job came down cleanly */
    if (rank == 0)
        printf("ok %s (%d ranks)\n", case_name, nprocs);
    fflush(stdout);
    return 0;
}
