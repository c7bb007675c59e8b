/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Reliability tests of the network providers (issue 7), run over two
 * "hosts" by hosts.sh (rank r on host r % 2 + 1, so rank r and its
 * partner r ^ 1 are always on different hosts):
 *   func_net CASE [--token=X]
 *   stream     10,000 messages of random sizes (mostly small, some up to
 *              256 KiB) each way between partners, every byte checked, in
 *              order per (source, tag), wildcards mixed in; and a few
 *              hundred one-sided writes (most with immediate data) checked
 *              at the target, a few read back; then each region is
 *              withdrawn and unmapped (its read answers may not be
 *              acknowledged yet) and messages flow on. Run plain, under the
 *              provider's fault hooks (CVIA_DGRAM_FAULTS), under random
 *              loss in the namespaces (hosts.sh --loss), and with
 *              acknowledgements held back past the RTO.
 *   silent     rank 1 stops itself (SIGSTOP) in the middle of a stream of
 *              large messages it receives: rank 0 must get CVIA_ENOPEER from
 *              the provider's own peer timeout (CVIA_DGRAM_PEER_TIMEOUT);
 *              the launcher knows nothing of a stopped process.
 *   silent-rx  the same, rank 1 stopping in the middle of a large message
 *              it sends: rank 0 only receives.
 *   poll       a ping-pong of 2,000 8 B messages completed by cvia_test
 *              loops alone (no call that may block): with CVIA_UDP_WAIT=yes
 *              on one core the counters must show no receive that waited
 *              in the kernel for it (cvia_test never blocks; init's and
 *              finalize's blocking waits may).
 *   garbage    rank 0 sends, from a plain UDP socket of its own, garbage at
 *              rank 1's corevia port (CVIA_UDP_PORT, set here): random
 *              bytes, truncated headers, another job's datagrams, a bad
 *              checksum, right key from the wrong sender, impossible
 *              fields, a datagram for another rank; messages still flow
 *              around it. The counters
 *              (CVIA_DGRAM_STATS=1) are checked by net_stats.sh.
 *   forged     (udp or eth, MAC on) rank 0 captures its own frames to rank 1
 *              on the wire (AF_PACKET), then injects at rank 1, in parts
 *              with messages flowing between: exact replays of them, the
 *              same with a byte or the sequence number altered, random
 *              MACs, MACs under another secret (an earlier job's: same job
 *              tag, same ranks), unauthenticated ones (CRC under the public
 *              key, as CVIA_DGRAM_AUTH=no would send) and other jobs'
 *              (another job tag: the socket filter's). None may be
 *              delivered (payloads checked; nothing under the forged tag
 *              arrives); the counters account for them (net_stats.sh).
 *   authmix    rank 1 runs with CVIA_DGRAM_AUTH=no, rank 0 with yes: rank
 *              1 fails at connection with CVIA_ECONFIG.
 * Rank 0 prints "ok CASE"; the silent cases print "expected-error NAME"
 * from the survivor (run.sh --expect-fail).
 * FUNC_NET_PATH, when set, must appear in cvia_peer_info() of the partner
 * (which link mechanism the provider really took: eth's rings or its
 * plain socket, xdp's AF_XDP socket or eth standing in), checked before
 * `stream` runs. FUNC_NET_HOLD, when set, names a file rank 0 waits for
 * (60 s at most, progressing) before `stream` runs (hosts.sh --ping).
 * FUNC_NET_FORK=1: every rank forks right after cvia_init a child that
 * leaves the session and lives, without exec, until its rank has exited;
 * after cvia_finalize the rank checks (ip link, 3 s) that no XDP program
 * is left on its host's interfaces, and that a new AF_XDP socket can take
 * queue 0 of each (3 s): the child's inherited descriptors and mappings
 * must keep neither the rank's program attached nor its queue taken.
 * FUNC_NET_SEED (default 1) seeds sizes, tags and payloads of `stream`;
 * FUNC_NET_MSGS and FUNC_NET_WRITES change its counts, FUNC_NET_QUIET_MS
 * its pause after the withdrawal; FUNC_NET_PORT (default 47000) is the
 * base of the garbage case's ports. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "pattern.h"
#include "util/nh.h"        /* compiled in: the MAC an outsider computes */
#include "util/siphash.h"

static int rank, size;
static unsigned long long seed = 1;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d (FUNC_NET_SEED=%llu): ", rank, \
        __FILE__, __LINE__, seed); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
        exit(1); } while (0)
#define CHECK_RC(call) do { int rc_ = (call); if (rc_) \
        FAIL("%s -> %s (%s)", #call, cvia_err_name(rc_), cvia_strerror(rc_)); } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t z)   /* splitmix64 */
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The seed of item @i of stream @kind from @src to @dst. */
static uint64_t seed_of(unsigned kind, int src, int dst, unsigned i)
{
    uint64_t s = mix(seed ^ mix(((uint64_t)kind << 56) ^ ((uint64_t)src << 40) ^
                                ((uint64_t)dst << 20) ^ i));
    return s ? s : 1;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* ---- stream --------------------------------------------------------------- */

#define MAX_MSG  (256u << 10)
#define NTAGS    4
#define WIN      32      /* outstanding sends; receives trail them by as many */
#define RWIN     (2 * WIN)   /* outstanding receives */
#define SLOT     (64u << 10)   /* one write's place in the region */
#define WWIN     8       /* outstanding writes */

struct msg_spec {
    size_t len;
    int tag;
    int any_src, any_tag;   /* the receive uses a wildcard */
};

/* Message @i from @src to @dst: mostly small, some up to 256 KiB. */
static struct msg_spec msg_spec(int src, int dst, unsigned i)
{
    uint64_t r = seed_of(1, src, dst, i), r2 = mix(r);
    unsigned pct = (unsigned)(r % 100);
    struct msg_spec m;

    if (pct < 75)
        m.len = r2 % 513;                        /* 0 .. 512 */
    else if (pct < 93)
        m.len = 513 + r2 % (16384 - 512);        /* .. 16 KiB */
    else if (pct < 99)
        m.len = 16385 + r2 % (65536 - 16384);    /* .. 64 KiB */
    else
        m.len = 65537 + r2 % (MAX_MSG - 65536);  /* .. 256 KiB */
    m.tag = (int)((r >> 8) % NTAGS);
    /* never both: a message of another rank (the relay below) must not
     * match a receive of the stream */
    m.any_src = (r >> 16) % 10 == 0;
    m.any_tag = !m.any_src && (r >> 24) % 10 == 0;
    return m;
}

struct write_spec {
    size_t off, len;   /* in the target's region */
    int imm;
};

static struct write_spec write_spec(int src, int dst, unsigned j)
{
    uint64_t r = seed_of(2, src, dst, j), r2 = mix(r);
    unsigned pct = (unsigned)(r % 100);
    struct write_spec w;

    if (j % 50 == 7)
        w.len = 0;
    else if (pct < 60)
        w.len = 1 + r2 % 4096;
    else if (pct < 90)
        w.len = 4097 + r2 % (16384 - 4096);
    else
        w.len = 16385 + r2 % (SLOT - 16384);
    w.off = (size_t)j * SLOT + (size_t)((r2 >> 32) % (SLOT - w.len + 1));
    w.imm = j % 5 != 4;   /* every fifth a plain write */
    return w;
}

static void stream_check_msg(unsigned i, int partner, const unsigned char *buf,
                             const cvia_status_t *st)
{
    struct msg_spec m = msg_spec(partner, rank, i);
    size_t bad;

    if (st->source != partner || st->tag != m.tag || st->len != m.len || st->msg_len != m.len)
        FAIL("message %u: source %d tag %d len %zu msg_len %zu, expected %d/%d/%zu "
             "(out of order or lost)", i, st->source, st->tag, st->len, st->msg_len,
             partner, m.tag, m.len);
    if ((bad = verify(buf, m.len, seed_of(3, partner, rank, i))) != (size_t)-1)
        FAIL("message %u (%zu B, tag %d): byte %zu differs", i, m.len, m.tag, bad);
}

/* 1 if `ip link` in this rank's namespace still shows an XDP program
 * after `secs` seconds of looking (the last descriptor of a BPF link
 * detaches it as it closes) */
static int xdp_attached_for(double secs)
{
    const double until = now() + secs;

    for (;;) {
        char line[512];
        int seen = 0;
        FILE *f = popen("ip link show 2>/dev/null", "r");
        if (!f)
            FAIL("popen(ip link show): %s", strerror(errno));
        while (fgets(line, sizeof(line), f))
            if (strstr(line, " xdp ") || strstr(line, " xdp/") || strstr(line, " xdpgeneric") ||
                strstr(line, " xdpdrv"))
                seen = 1;
        pclose(f);
        if (!seen)
            return 0;
        if (now() > until)
            return 1;
        usleep(50000);
    }
}

/* Can a new AF_XDP socket take queue 0 of this host's interfaces (every
 * one but lo) now? 0 if so, else the errno of the first refused bind (the
 * socket that would take it is the next rank's: a UMEM, fill and
 * completion rings, an RX ring, a copy-mode bind). */
static int xdp_queue_refused(char *ifname, size_t cap)
{
    struct if_nameindex *ifs = if_nameindex(), *i;
    const size_t len = 16 * 4096;
    int err = 0;

    if (!ifs)
        FAIL("if_nameindex: %s", strerror(errno));
    for (i = ifs; i->if_index && !err; i++) {
        if (!strcmp(i->if_name, "lo"))
            continue;
        int fd = socket(AF_XDP, SOCK_RAW, 0), n = 64;
        void *area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct xdp_umem_reg mr = { .addr = (uintptr_t)area, .len = len, .chunk_size = 4096 };
        struct sockaddr_xdp sx = { .sxdp_family = AF_XDP, .sxdp_ifindex = i->if_index,
                                   .sxdp_queue_id = 0, .sxdp_flags = XDP_COPY };
        if (fd < 0 || area == MAP_FAILED)
            FAIL("an AF_XDP socket: %s", strerror(errno));
        if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) ||
            setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof(n)) ||
            setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof(n)) ||
            setsockopt(fd, SOL_XDP, XDP_RX_RING, &n, sizeof(n)))
            FAIL("setting up an AF_XDP socket: %s", strerror(errno));
        if (bind(fd, (struct sockaddr *)&sx, sizeof(sx))) {
            err = errno;
            snprintf(ifname, cap, "%s", i->if_name);
        }
        close(fd);
        munmap(area, len);
    }
    if_freenameindex(ifs);
    return err;
}

static int case_stream(void)
{
    const unsigned n = (unsigned)env_long("FUNC_NET_MSGS", 10000);
    const unsigned nw = (unsigned)env_long("FUNC_NET_WRITES", 300);
    const size_t rlen = (size_t)nw * SLOT;
    int partner = rank ^ 1;
    unsigned char *sbuf[WIN], *rbuf[RWIN], *wbuf[WWIN];
    cvia_req_t sreq[WIN] = { 0 }, rreq[RWIN] = { 0 }, wreq[WWIN] = { 0 };
    unsigned char *region, *local;
    cvia_mr_t mr;
    cvia_mr_desc_t mine, theirs;
    unsigned posted_r = 0, done_r = 0, posted_w = 0;
    unsigned long long bytes = 0;
    double t0;

    if (size % 2)
        FAIL("stream needs an even number of ranks (partners r, r ^ 1)");
    if (getenv("FUNC_NET_PATH")) {
        char path[512];
        CHECK_RC(cvia_peer_info(partner, path, sizeof(path)));
        if (!strstr(path, getenv("FUNC_NET_PATH")))
            FAIL("the path to rank %d is '%s', without '%s' (FUNC_NET_PATH)", partner, path,
                 getenv("FUNC_NET_PATH"));
    }
    if (getenv("FUNC_NET_HOLD") && rank == 0) {
        /* hosts.sh --ping: the interfaces are checked while we run; wait
         * (progressing, so peers see us alive) until it says so */
        const double until = now() + 60.0 * (double)env_long("CVIA_TEST_TIMEOUT_MULTIPLIER", 1);
        while (access(getenv("FUNC_NET_HOLD"), F_OK) != 0) {
            if (now() > until)
                FAIL("FUNC_NET_HOLD: %s never appeared", getenv("FUNC_NET_HOLD"));
            if (cvia_progress() < 0)
                FAIL("cvia_progress while held");
            usleep(2000);
        }
    }
    CHECK_RC(cvia_barrier());
    for (int k = 0; k < RWIN; k++)
        if (!(rbuf[k] = malloc(MAX_MSG)) || (k < WIN && !(sbuf[k] = malloc(MAX_MSG))))
            FAIL("out of memory");
    for (int k = 0; k < WWIN; k++)
        if (!(wbuf[k] = malloc(SLOT)))
            FAIL("out of memory");
    /* mapped, so that it can be unmapped at the end: a provider that still
     * touched it after cvia_mr_dereg would crash, sanitizer or not */
    region = mmap(NULL, rlen ? rlen : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    if (region == MAP_FAILED || !(local = malloc(SLOT)))
        FAIL("out of memory for the region");
    memset(region, 0xEE, rlen);
    CHECK_RC(cvia_mr_reg(region, rlen ? rlen : 1, CVIA_MR_REMOTE_READ | CVIA_MR_REMOTE_WRITE, &mr));
    CHECK_RC(cvia_mr_desc(mr, &mine));
    {
        cvia_req_t q;
        CHECK_RC(cvia_irecv(&theirs, sizeof(theirs), partner, 900, &q));
        CHECK_RC(cvia_send(&mine, sizeof(mine), partner, 900));
        CHECK_RC(cvia_wait(&q, NULL));
        if (theirs.rank != partner)
            FAIL("the region's descriptor names rank %d", theirs.rank);
    }
    if (rank == 0) {
        char info[256];
        CHECK_RC(cvia_peer_info(partner, info, sizeof(info)));
        printf("stream: seed %llu, %u messages and %u writes each way; %s\n", seed, n, nw, info);
        fflush(stdout);
    }
    CHECK_RC(cvia_barrier());
    t0 = now();
    for (unsigned i = 0; i <= n; i++) {
        /* receives posted ahead, RWIN at most outstanding */
        while (posted_r < n && posted_r - done_r < RWIN) {
            struct msg_spec m = msg_spec(partner, rank, posted_r);
            CHECK_RC(cvia_irecv(rbuf[posted_r % RWIN], MAX_MSG,
                                m.any_src ? CVIA_ANY_SOURCE : partner,
                                m.any_tag ? CVIA_ANY_TAG : m.tag, &rreq[posted_r % RWIN]));
            posted_r++;
        }
        if (i < n) {
            struct msg_spec m = msg_spec(rank, partner, i);
            unsigned k = i % WIN;
            if (sreq[k])
                CHECK_RC(cvia_wait(&sreq[k], NULL));
            fill(sbuf[k], m.len, seed_of(3, rank, partner, i));
            CHECK_RC(cvia_isend(sbuf[k], m.len, partner, m.tag, &sreq[k]));
            bytes += m.len;
            /* a write every n / nw messages */
            if (posted_w < nw && (unsigned long long)i * nw >= (unsigned long long)posted_w * n) {
                struct write_spec w = write_spec(rank, partner, posted_w);
                unsigned kw = posted_w % WWIN;
                if (wreq[kw])
                    CHECK_RC(cvia_wait(&wreq[kw], NULL));
                fill(wbuf[kw], w.len, seed_of(4, rank, partner, posted_w));
                CHECK_RC(cvia_write(wbuf[kw], w.len, &theirs, w.off, w.imm ? CVIA_WRITE_IMM : 0,
                                    posted_w, &wreq[kw]));
                posted_w++;
            }
        }
        /* the oldest receive once the sends are WIN ahead; all at the end */
        while (done_r < posted_r && (i >= done_r + WIN || i == n)) {
            cvia_status_t st;
            unsigned k = done_r % RWIN;
            int rc = cvia_wait(&rreq[k], &st);
            if (rc)
                FAIL("receive of message %u: %s", done_r, cvia_err_name(rc));
            stream_check_msg(done_r, partner, rbuf[k], &st);
            done_r++;
        }
    }
    CHECK_RC(cvia_waitall(WIN, sreq, NULL));
    while (posted_w < nw) {   /* nw > n: the rest */
        struct write_spec w = write_spec(rank, partner, posted_w);
        unsigned kw = posted_w % WWIN;
        if (wreq[kw])
            CHECK_RC(cvia_wait(&wreq[kw], NULL));
        fill(wbuf[kw], w.len, seed_of(4, rank, partner, posted_w));
        CHECK_RC(cvia_write(wbuf[kw], w.len, &theirs, w.off, w.imm ? CVIA_WRITE_IMM : 0,
                            posted_w, &wreq[kw]));
        posted_w++;
    }
    CHECK_RC(cvia_waitall(WWIN, wreq, NULL));
    /* every write of mine is complete: say so; plain writes are visible
     * to the partner once it has this message */
    CHECK_RC(cvia_send(NULL, 0, partner, 901));
    CHECK_RC(cvia_recv(NULL, 0, partner, 901, NULL));
    /* the immediate events: one per write with CVIA_WRITE_IMM, in order */
    for (unsigned j = 0; j < nw; j++) {
        struct write_spec w = write_spec(partner, rank, j);
        cvia_imm_event_t ev;
        if (!w.imm)
            continue;
        CHECK_RC(cvia_imm_wait(&ev));
        if (ev.source != partner || ev.imm != j || ev.key != mine.key || ev.off != w.off ||
            ev.len != w.len)
            FAIL("immediate event for write %u: source %d imm %llu off %llu len %llu, "
                 "expected off %zu len %zu", j, ev.source, (unsigned long long)ev.imm,
                 (unsigned long long)ev.off, (unsigned long long)ev.len, w.off, w.len);
    }
    {
        cvia_imm_event_t extra;
        if (cvia_imm_poll(&extra, 1) != 0)
            FAIL("an immediate event too many (imm %llu)", (unsigned long long)extra.imm);
    }
    /* every written byte in place, every other byte untouched */
    for (unsigned j = 0; j < nw; j++) {
        struct write_spec w = write_spec(partner, rank, j);
        const unsigned char *slot = region + (size_t)j * SLOT;
        size_t lo = w.off - (size_t)j * SLOT, bad;
        if ((bad = verify(region + w.off, w.len, seed_of(4, partner, rank, j))) != (size_t)-1)
            FAIL("write %u (%zu B at %zu, %s): byte %zu differs", j, w.len, w.off,
                 w.imm ? "immediate" : "plain", bad);
        for (size_t b = 0; b < SLOT; b++)
            if ((b < lo || b >= lo + w.len) && slot[b] != 0xEE)
                FAIL("write %u (%zu B at %zu): byte %zu of its slot was touched", j, w.len,
                     w.off, b);
    }
    /* read back a few of my writes from the partner's region */
    for (unsigned j = 0; j < nw; j += nw / 16 + 1) {
        struct write_spec w = write_spec(rank, partner, j);
        cvia_req_t q;
        size_t bad;
        memset(local, 0, w.len);
        CHECK_RC(cvia_read(local, w.len, &theirs, w.off, &q));
        CHECK_RC(cvia_wait(&q, NULL));
        if ((bad = verify(local, w.len, seed_of(4, rank, partner, j))) != (size_t)-1)
            FAIL("read back of write %u (%zu B): byte %zu differs", j, w.len, bad);
    }
    if (size % 4 == 0) {
        /* "done reading" reaches the region's owner around its link with
         * the reader: reader -> its host's other rank (shm) -> the owner's
         * other remote peer -> the owner. So the owner hears nothing more
         * from the reader (no acknowledgement of the last answer rides
         * along) before it withdraws the region below. */
        CHECK_RC(cvia_send(NULL, 0, rank ^ 2, 903));
        CHECK_RC(cvia_recv(NULL, 0, rank ^ 2, 903, NULL));
        CHECK_RC(cvia_send(NULL, 0, rank ^ 3, 904));
        CHECK_RC(cvia_recv(NULL, 0, rank ^ 3, 904, NULL));
    } else {
        CHECK_RC(cvia_barrier());
    }
    if (rank == 0) {
        double dt = now() - t0;
        printf("stream: %u messages (%.1f MB) and %u writes each way in %.2f s\n", n,
               (double)bytes / 1e6, nw, dt);
    }
    /* the partner has read what it wanted from my region: withdraw and
     * unmap it (the answers may still wait for their acknowledgement, and
     * with CVIA_DGRAM_ACK_DELAY above the RTO they are sent again), then
     * let the timers run, then keep the link busy a while */
    CHECK_RC(cvia_mr_dereg(mr));
    munmap(region, rlen ? rlen : 1);
    {   /* quiet a while: the timers run (FUNC_NET_QUIET_MS, default 30) */
        double until = now() + (double)env_long("FUNC_NET_QUIET_MS", 30) * 1e-3;
        while (now() < until) {
            int rc = cvia_progress();
            if (rc < 0)
                FAIL("cvia_progress: %s", cvia_err_name(rc));
        }
    }
    for (unsigned i = 0; i < 200; i++) {
        size_t len = i % 10 ? 100 : 100000;
        cvia_req_t q;
        fill(sbuf[0], len, seed_of(7, rank, partner, i));
        CHECK_RC(cvia_irecv(rbuf[0], MAX_MSG, partner, 902, &q));
        CHECK_RC(cvia_send(sbuf[0], len, partner, 902));
        CHECK_RC(cvia_wait(&q, NULL));
        if (verify(rbuf[0], len, seed_of(7, partner, rank, i)) != (size_t)-1)
            FAIL("message %u after the region's withdrawal differs", i);
    }
    CHECK_RC(cvia_barrier());
    for (int k = 0; k < RWIN; k++) {
        free(rbuf[k]);
        if (k < WIN)
            free(sbuf[k]);
    }
    for (int k = 0; k < WWIN; k++)
        free(wbuf[k]);
    free(local);
    return 0;
}

/* ---- silent ---------------------------------------------------------------- */

/* Rank 1 (on the other host) stops; rank 0 must be told by the provider.
 * @rx: rank 1 stops while sending rank 0 a large message, rank 0 sending
 * nothing; else while receiving a stream of large messages from rank 0. */
static int case_poll(void)
{
    const int n = 2000, partner = rank ^ 1;
    long v = 0;

    if (size != 2)
        FAIL("poll needs 2 ranks");
    for (int i = 0; i < n; i++) {
        cvia_req_t q;
        int done = 0;
        if ((i & 1) == rank) {
            long w = i;
            CHECK_RC(cvia_isend(&w, sizeof(w), partner, 7, &q));
        } else {
            CHECK_RC(cvia_irecv(&v, sizeof(v), partner, 7, &q));
        }
        while (!done)
            CHECK_RC(cvia_test(&q, &done, NULL));
        if ((i & 1) != rank && v != i)
            FAIL("message %d reads %ld", i, v);
    }
    printf("rank %d: ok poll (%d messages by cvia_test alone)\n", rank, n);
    return 0;
}

static int case_silent(int rx)
{
    enum { BIG = 256u << 10, NBUF = 8, BEFORE = 40 };
    const size_t huge = 64u << 20;
    const int victim = 1;
    const char *timeout = getenv("CVIA_DGRAM_PEER_TIMEOUT");

    if (size != 2)
        FAIL("silent needs 2 ranks");
    CHECK_RC(cvia_barrier());
    if (rank == victim) {
        unsigned char *b = malloc(huge);
        cvia_req_t q;
        if (!b)
            FAIL("out of memory");
        if (rx) {
            memset(b, 0x42, huge);
            CHECK_RC(cvia_isend(b, huge, 0, 5, &q));
            for (int k = 0; k < 20; k++)
                cvia_progress();
        } else {
            for (int i = 0; i < BEFORE; i++) {
                cvia_status_t st;
                CHECK_RC(cvia_recv(b, BIG, 0, 6, &st));
                if (st.len != BIG || verify(b, BIG, seed_of(5, 0, 1, (unsigned)i)) != (size_t)-1)
                    FAIL("message %d of the stream differs", i);
            }
        }
        printf("rank %d: stopping myself in the middle of %s\n", rank,
               rx ? "a 64 MiB send" : "a stream of 256 KiB messages");
        fflush(stdout);
        raise(SIGSTOP);
        /* continued: the job is over for us */
        _exit(4);
    }
    /* the survivor */
    cvia_req_t rq, sq[NBUF] = { 0 };
    unsigned char *r = malloc(huge), *s[NBUF] = { 0 };
    double last_ok = now(), t;
    int rc = 0, rrc;
    unsigned i = 0;

    if (!r)
        FAIL("out of memory");
    CHECK_RC(cvia_irecv(r, huge, victim, 5, &rq));
    if (!rx) {
        for (int k = 0; k < NBUF; k++)
            if (!(s[k] = malloc(BIG)))
                FAIL("out of memory");
        /* a stream that never ends: sends complete only when acknowledged */
        for (i = 0; !rc && i < 1000000; i++) {
            unsigned k = i % NBUF;
            if (sq[k]) {
                if ((rc = cvia_wait(&sq[k], NULL)))
                    break;
                last_ok = now();
            }
            fill(s[k], BIG, seed_of(5, 0, 1, i));
            rc = cvia_isend(s[k], BIG, victim, 6, &sq[k]);
        }
        if (rc != -CVIA_ENOPEER)
            FAIL("sending to a stopped rank: %s after %u messages, expected CVIA_ENOPEER",
                 cvia_err_name(rc), i);
        for (int k = 0; k < NBUF; k++)   /* the rest fail alike */
            if (sq[k] && (rrc = cvia_wait(&sq[k], NULL)) != -CVIA_ENOPEER)
                FAIL("another send to the stopped rank: %s", cvia_err_name(rrc));
    }
    rrc = cvia_wait(&rq, NULL);
    t = now();
    if (rrc != -CVIA_ENOPEER)
        FAIL("receiving from a stopped rank: %s, expected CVIA_ENOPEER", cvia_err_name(rrc));
    if (!rx)
        printf("rank %d: %u messages sent; the last acknowledged one completed %.2f s "
               "before the peer was declared dead (CVIA_DGRAM_PEER_TIMEOUT=%s)\n",
               rank, i, t - last_ok, timeout ? timeout : "default");
    else
        printf("rank %d: the peer was declared dead %.2f s after the barrier "
               "(CVIA_DGRAM_PEER_TIMEOUT=%s)\n", rank, t - last_ok, timeout ? timeout : "default");
    printf("rank %d: expected-error %s\n", rank, cvia_err_name(rrc));
    fflush(stdout);
    return 3;
}

/* ---- garbage ---------------------------------------------------------------- */

/* The datagram header as src/prov/dgram/dgram.h defines it, written out
 * again here: this program speaks the wire format as an outsider would. */
struct wire_hdr {
    uint64_t mac;      /* SipHash-2-4 with the job secret; AUTH=no: CRC-32C */
    uint8_t  type, flags;
    uint16_t job;      /* the job tag: the key's low 16 bits */
    uint32_t seq, ack, sack;
    int32_t  tag;
    uint8_t  src[3], dst[3], lenoff[6];   /* little-endian */
};
_Static_assert(sizeof(struct wire_hdr) == 40, "the dgram header is 40 bytes");
enum { W_MSG = 1, W_ACK = 16, W_F_FIRST = 1, W_F_LAST = 2, W_F_AUTH = 0x80, W_JOB_OFF = 10 };

static void put_le(uint8_t *p, int n, uint64_t v)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

/* What rank 0 sends, by the counter it must land in at rank 1 (the
 * test's CMake entry checks them: corrupt at most GB_CORRUPT). */
enum {
    GB_RANDOM = 200,     /* random bytes: foreign (random jobtag) */
    GB_SHORT = 100,      /* a header cut short: format */
    GB_BIG = 20,         /* over the MTU (IP fragments): truncated by the link, format;
                          * else whole, and foreign as an impostor's */
    GB_OTHERJOB = 100,   /* sealed with another job's key: foreign */
    GB_CORRUPT = 100,    /* our key, a bad checksum: corrupt */
    GB_IMPOSTOR = 60,    /* our key, right checksum, wrong sender: foreign */
    GB_BADFIELD = 60,    /* our key, right checksum, impossible fields: format */
    GB_OTHERDST = 20,    /* our key, right checksum, for another rank: other */
};

static uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return crc;
}

static uint64_t job_key(uint64_t jobid)
{
    uint64_t z = mix(jobid);
    return z ? z : 1;
}

/* CVIA_DGRAM_AUTH=no: CRC-32C seeded by the key, over all after the MAC
 * field, in the MAC field. */
static void seal(unsigned char *d, size_t len, uint64_t key)
{
    uint64_t mac = (uint32_t)~crc32c(crc32c(0xffffffffu, &key, sizeof(key)), d + 8, len - 8);

    memcpy(d, &mac, sizeof(mac));
}

static uint32_t dgram_dst = 1;

static size_t make_dgram(unsigned char *d, uint64_t key, uint32_t src, uint8_t type,
                         uint8_t flags, uint32_t seq, size_t plen, uint64_t *rng)
{
    struct wire_hdr h = { .type = type, .flags = flags, .job = (uint16_t)key, .seq = seq,
                          .ack = 1, .tag = 3 };
    put_le(h.src, 3, src);
    put_le(h.dst, 3, dgram_dst);
    put_le(h.lenoff, 6, plen);
    memcpy(d, &h, sizeof(h));
    for (size_t i = 0; i < plen; i++) {
        *rng = mix(*rng);
        d[sizeof(h) + i] = (unsigned char)*rng;
    }
    seal(d, sizeof(h) + plen, key);
    return sizeof(h) + plen;
}

static void send_raw(int fd, const struct sockaddr_in *to, const void *d, size_t len)
{
    /* a full socket buffer drops, as the network may: counted as sent */
    if (sendto(fd, d, len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0 && errno != EAGAIN &&
        errno != ENOBUFS)
        FAIL("sendto: %s", strerror(errno));
}

/* All the kinds of refused datagrams, a few of each kind per call. */
static void send_garbage(int fd, const struct sockaddr_in *to, uint64_t key, int part, int parts,
                         uint64_t *rng)
{
    static unsigned char d[4000];
    const uint64_t other = job_key(strtoull(getenv("CVIA_JOBID"), NULL, 16) ^ 1);
    size_t len;

#define SHARE(total) ((total) * (part + 1) / parts - (total) * part / parts)
    for (int i = 0; i < SHARE(GB_RANDOM); i++) {
        *rng = mix(*rng);
        len = *rng % 1400;
        for (size_t b = 0; b < len; b++) {
            *rng = mix(*rng);
            d[b] = (unsigned char)*rng;
        }
        if (len >= sizeof(struct wire_hdr) && !memcmp(d + W_JOB_OFF, &key, 2))
            d[W_JOB_OFF] ^= 1;   /* not by chance ours (the job tag) */
        send_raw(fd, to, d, len);
    }
    for (int i = 0; i < SHARE(GB_SHORT); i++) {
        len = make_dgram(d, key, 0, W_MSG, W_F_FIRST | W_F_LAST, 1, 0, rng);
        send_raw(fd, to, d, (size_t)i % len);
    }
    for (int i = 0; i < SHARE(GB_BIG); i++) {
        len = make_dgram(d, key, 0, W_MSG, W_F_FIRST | W_F_LAST, 1, 3000, rng);
        send_raw(fd, to, d, len);
    }
    for (int i = 0; i < SHARE(GB_OTHERJOB); i++) {
        len = make_dgram(d, other, 0, W_MSG, W_F_FIRST | W_F_LAST, 1 + (uint32_t)i, 100, rng);
        send_raw(fd, to, d, len);
    }
    for (int i = 0; i < SHARE(GB_CORRUPT); i++) {
        size_t i2;
        *rng = mix(*rng);
        len = make_dgram(d, key, 0, W_MSG, W_F_FIRST | W_F_LAST, 1, 64 + *rng % 1000, rng);
        i2 = (*rng >> 16) % (len - 2);   /* any bit but the job tag's */
        d[i2 < W_JOB_OFF ? i2 : i2 + 2] ^= (unsigned char)(1u << (*rng & 7));
        send_raw(fd, to, d, len);
    }
    for (int i = 0; i < SHARE(GB_IMPOSTOR); i++) {
        /* claims to be rank 0 (the socket is not rank 0's), rank 1
         * itself, or a rank that does not exist */
        uint32_t src = i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : 1000;
        len = i % 2 ? make_dgram(d, key, src, W_MSG, W_F_FIRST | W_F_LAST, 0x40000000u, 100, rng)
                    : make_dgram(d, key, src, W_ACK, 0, 0, 0, rng);
        send_raw(fd, to, d, len);
    }
    for (int i = 0; i < SHARE(GB_BADFIELD); i++) {
        /* types that do not exist, an acknowledgement with a payload */
        len = make_dgram(d, key, 0, i % 2 ? (uint8_t)(9 + i % 7) : W_ACK, W_F_FIRST, 1,
                         i % 2 ? 10 : 20, rng);
        send_raw(fd, to, d, len);
    }
    dgram_dst = 0;
    for (int i = 0; i < SHARE(GB_OTHERDST); i++) {
        len = make_dgram(d, key, 0, W_MSG, W_F_FIRST | W_F_LAST, 1, 30, rng);
        send_raw(fd, to, d, len);
    }
    dgram_dst = 1;
#undef SHARE
}

/* The IPv4 address of the first interface that is up and not loopback
 * (where the udp provider binds when CVIA_UDP_IF is not set). */
static void my_ip(char *buf, size_t cap)
{
    struct ifaddrs *ifa, *i;

    snprintf(buf, cap, "127.0.0.1");
    if (getifaddrs(&ifa) < 0)
        return;
    for (i = ifa; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK)) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf,
                      (socklen_t)cap);
            break;
        }
    freeifaddrs(ifa);
}

static void exchange(int round, int n)
{
    /* n messages of 1 .. 5000 bytes each way between ranks 0 and 1 */
    static unsigned char s[5000], r[5000];
    int peer = rank ^ 1;

    for (int i = 0; i < n; i++) {
        size_t len = 1 + (size_t)(mix((uint64_t)round << 32 | (unsigned)i) % 5000);
        unsigned id = (unsigned)(round * 100000 + i);
        cvia_req_t rq, sq;
        cvia_status_t st;
        fill(s, len, seed_of(6, rank, peer, id));
        CHECK_RC(cvia_irecv(r, sizeof(r), peer, 20, &rq));
        CHECK_RC(cvia_isend(s, len, peer, 20, &sq));
        CHECK_RC(cvia_wait(&sq, NULL));
        CHECK_RC(cvia_wait(&rq, &st));
        if (st.len != len || verify(r, len, seed_of(6, peer, rank, id)) != (size_t)-1)
            FAIL("round %d message %d (%zu B) corrupted or lost", round, i, len);
    }
}

static int case_garbage(void)
{
    enum { PARTS = 10 };
    const long port = env_long("FUNC_NET_PORT", 47000) + 1;
    uint64_t key = job_key(strtoull(getenv("CVIA_JOBID"), NULL, 16)), rng = 12345;
    char ip[64];

    if (size != 2)
        FAIL("garbage needs 2 ranks");
    exchange(0, 50);
    if (rank == 1)
        my_ip(ip, sizeof(ip));
    if (rank == 1)
        CHECK_RC(cvia_send(ip, sizeof(ip), 0, 30));
    else
        CHECK_RC(cvia_recv(ip, sizeof(ip), 1, 30, NULL));
    if (rank == 0) {
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd < 0 || inet_pton(AF_INET, ip, &to.sin_addr) != 1)
            FAIL("socket to %s:%ld: %s", ip, port, strerror(errno));
        printf("garbage: at rank 1's corevia port %s:%ld\n", ip, port);
        /* in parts, with messages flowing in between */
        for (int part = 0; part < PARTS; part++) {
            cvia_req_t q;
            CHECK_RC(cvia_isend(NULL, 0, 1, 31, &q));
            send_garbage(fd, &to, key, part, PARTS, &rng);
            CHECK_RC(cvia_wait(&q, NULL));
            exchange(1 + part, 10);
        }
        CHECK_RC(cvia_send(NULL, 0, 1, 32));   /* all of it sent */
        close(fd);
        printf("garbage: sent random %d short %d oversize %d other-job %d corrupt %d "
               "impostor %d bad-field %d other-rank %d\n", GB_RANDOM, GB_SHORT, GB_BIG,
               GB_OTHERJOB, GB_CORRUPT, GB_IMPOSTOR, GB_BADFIELD, GB_OTHERDST);
    } else {
        for (int part = 0; part < PARTS; part++) {
            CHECK_RC(cvia_recv(NULL, 0, 0, 31, NULL));
            exchange(1 + part, 10);
        }
        CHECK_RC(cvia_recv(NULL, 0, 0, 32, NULL));
    }
    /* after it all, the provider still carries everything */
    exchange(100, 200);
    CHECK_RC(cvia_barrier());
    return 0;
}

/* ---- forged ---------------------------------------------------------------- */

enum {
    FG_TEMPLATES = 64,    /* of rank 0's data frames to rank 1, captured */
    FG_REPLAY = 16,       /* exact replays of each: dup at rank 1 */
    FG_ALTERED = 3000,    /* a captured frame, a byte or the sequence changed: forged */
    FG_RANDOM = 2000,     /* a random MAC: forged */
    FG_EARLIER = 2000,    /* MAC under another secret (an earlier job's): forged */
    FG_NOAUTH = 1000,     /* no AUTH flag, CRC under the public key: forged */
    FG_OTHERJOB = 1000,   /* another job tag: dropped by the socket filter */
    FG_PARTS = 50,        /* so that the eth receive ring (512 frames) never fills */
    FG_TAG = 3,           /* the tag forged messages carry (make_dgram's) */
};

struct fg_frame {
    unsigned char b[2048];
    size_t len, off;      /* frame length; where the corevia datagram starts */
    size_t udp_csum;      /* offset of the UDP checksum (0: eth) */
};

static struct fg_frame fg_tmpl[FG_TEMPLATES];
static int fg_ntmpl;

/* The first interface that is up and not loopback: its index. */
static int fg_ifindex(void)
{
    struct ifaddrs *ifa, *i;
    int idx = 0;

    if (getifaddrs(&ifa) < 0)
        return 0;
    for (i = ifa; i && !idx; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK))
            idx = (int)if_nametoindex(i->ifa_name);
    freeifaddrs(ifa);
    return idx;
}

/* Keep the captured frames that carry a data datagram from rank 0 to 1. */
static void fg_capture(int fd, int eth, unsigned port)
{
    for (int n = 0; n < 100000 && fg_ntmpl < FG_TEMPLATES; n++) {
        struct fg_frame *f = &fg_tmpl[fg_ntmpl];
        struct sockaddr_ll from;
        socklen_t fl = sizeof(from);
        ssize_t r = recvfrom(fd, f->b, sizeof(f->b), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        size_t off;
        if (r < 0)
            break;
        /* one datagram per frame: not the GSO batches the udp link sends */
        if (from.sll_pkttype != PACKET_OUTGOING || r < 14 || r > 14 + 1500)
            continue;
        f->len = (size_t)r;
        f->udp_csum = 0;
        if (eth) {
            if (f->b[12] != 0x88 || f->b[13] != 0xb5)
                continue;
            off = 14;
        } else {
            size_t ihl;
            if (f->b[12] != 0x08 || f->b[13] != 0x00 || r < 14 + 20 || f->b[14 + 9] != 17)
                continue;
            ihl = (size_t)(f->b[14] & 15) * 4;
            if ((size_t)r < 14 + ihl + 8 ||
                ((unsigned)f->b[14 + ihl + 2] << 8 | f->b[14 + ihl + 3]) != port)
                continue;
            off = 14 + ihl + 8;
            f->udp_csum = 14 + ihl + 6;
        }
        if (f->len < off + sizeof(struct wire_hdr) || f->b[off + 8] != W_MSG)
            continue;
        f->off = off;
        if (f->udp_csum)   /* captured before the device's checksum offload: none */
            f->b[f->udp_csum] = f->b[f->udp_csum + 1] = 0;
        fg_ntmpl++;
    }
}

/* The MAC as the wire format defines it (src/prov/dgram/dgram.h), under
 * @secret: SipHash-2-4 of the length and NH of all after the MAC field
 * (NH's key: SipHash of counters). */
static uint64_t fg_mac(const unsigned char secret[16], const unsigned char *d, size_t len)
{
    static uint32_t nh[CVIA_NH_KEY_WORDS(2048)];
    uint64_t tail[3] = { len - 8, 0, 0 };

    for (size_t i = 0; i < sizeof(nh) / sizeof(nh[0]); i += 2) {
        uint64_t ctr = 0x6e68000000000000ull | i, w = cvia__siphash24(secret, &ctr, sizeof(ctr));
        nh[i] = (uint32_t)w;
        nh[i + 1] = (uint32_t)(w >> 32);
    }
    cvia__nh2_scalar(d + 8, len - 8, nh, tail + 1);
    return cvia__siphash24(secret, tail, sizeof(tail));
}

static void fg_send(int fd, int ifindex, const struct fg_frame *f)
{
    struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6 };

    memcpy(to.sll_addr, f->b, 6);
    /* a full device queue refuses for a moment: every frame must go, as
     * the counters are checked exactly (bounded: 2 s) */
    for (int tries = 0; sendto(fd, f->b, f->len, 0, (const struct sockaddr *)&to, sizeof(to)) !=
                        (ssize_t)f->len; tries++) {
        struct timespec ts = { 0, 100000 };
        if ((errno != ENOBUFS && errno != EAGAIN && errno != EINTR) || tries >= 20000)
            FAIL("injecting a frame: %s", strerror(errno));
        nanosleep(&ts, NULL);
    }
}

/* Part @part of every kind, each datagram made from a captured template. */
static void fg_inject(int fd, int ifindex, uint64_t key, int part, uint64_t *rng,
                      unsigned long sent[6])
{
    static struct fg_frame f;
    unsigned char earlier[16];

#define SHARE(total) ((total) * (part + 1) / FG_PARTS - (total) * part / FG_PARTS)
    for (int i = 0; i < SHARE(FG_TEMPLATES * FG_REPLAY); i++) {
        fg_send(fd, ifindex, &fg_tmpl[(part * 7 + i) % fg_ntmpl]);
        sent[0]++;
    }
    for (int kind = 1; kind <= 5; kind++) {
        static const int total[6] = { 0, FG_ALTERED, FG_RANDOM, FG_EARLIER, FG_NOAUTH,
                                      FG_OTHERJOB };
        for (int i = 0; i < SHARE(total[kind]); i++) {
            unsigned char *d;
            size_t dl;
            uint32_t seq;
            *rng = mix(*rng);
            f = fg_tmpl[*rng % (uint64_t)fg_ntmpl];
            d = f.b + f.off;
            dl = f.len - f.off;
            memcpy(&seq, d + 12, 4);
            seq += 1 + (uint32_t)(*rng >> 32) % 64;   /* the next ones rank 1 expects */
            memcpy(d + 12, &seq, 4);
            d[24] = FG_TAG;   /* the tag, low byte: a delivered forgery shows */
            d[25] = d[26] = d[27] = 0;
            switch (kind) {
            case 1:   /* altered: the MAC of the original, a byte changed too */
                if (dl > sizeof(struct wire_hdr))
                    d[sizeof(struct wire_hdr) + (*rng >> 8) % (dl - sizeof(struct wire_hdr))] ^= 0x5a;
                break;
            case 2: {
                uint64_t mac = mix(*rng);
                memcpy(d, &mac, 8);
                break;
            }
            case 3: {
                uint64_t mac;
                for (int b = 0; b < 16; b++)
                    earlier[b] = (unsigned char)(mix(*rng + (uint64_t)b + (uint64_t)part * 16));
                mac = fg_mac(earlier, d, dl);
                memcpy(d, &mac, 8);
                break;
            }
            case 4:
                d[9] &= (unsigned char)~W_F_AUTH;
                seal(d, dl, key);
                break;
            case 5:
                d[W_JOB_OFF] ^= 0x5a;
                break;
            }
            fg_send(fd, ifindex, &f);
            sent[kind]++;
        }
    }
#undef SHARE
}

static int case_forged(void)
{
    const char *net = getenv("CVIA_NET");
    const int eth = net && (!strcmp(net, "eth") || !strcmp(net, "xdp"));
    const unsigned port = (unsigned)env_long("FUNC_NET_PORT", 47000) + 1;
    uint64_t key = job_key(strtoull(getenv("CVIA_JOBID"), NULL, 16)), rng = 4242;
    unsigned long sent[6] = { 0 };
    int fd = -1, ifindex = 0;

    if (size != 2)
        FAIL("forged needs 2 ranks");
    if (rank == 0) {
        ifindex = fg_ifindex();
        fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        if (fd < 0 || !ifindex)
            FAIL("a packet socket on this host's interface: %s (needs CAP_NET_RAW)",
                 strerror(errno));
        {
            struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                                       .sll_ifindex = ifindex };
            int b = 4 << 20;
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b));
            if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
                FAIL("bind the packet socket: %s", strerror(errno));
        }
    }
    exchange(0, 50);
    if (rank == 0) {
        fg_capture(fd, eth, port);
        if (fg_ntmpl < 8)
            FAIL("captured only %d of rank 0's data frames to rank 1", fg_ntmpl);
    }
    CHECK_RC(cvia_barrier());
    for (int part = 0; part < FG_PARTS; part++) {
        if (rank == 0) {
            cvia_req_t q;
            CHECK_RC(cvia_isend(NULL, 0, 1, 31, &q));
            fg_inject(fd, ifindex, key, part, &rng, sent);
            CHECK_RC(cvia_wait(&q, NULL));
        } else {
            CHECK_RC(cvia_recv(NULL, 0, 0, 31, NULL));
        }
        exchange(1 + part, 4);
    }
    exchange(100, 100);
    CHECK_RC(cvia_barrier());
    if (rank == 1) {   /* nothing forged became a message */
        cvia_req_t rq;
        int done = 1;
        char buf[64];
        CHECK_RC(cvia_irecv(buf, sizeof(buf), CVIA_ANY_SOURCE, CVIA_ANY_TAG, &rq));
        for (int i = 0; i < 100; i++) {
            int rc = cvia_progress();   /* > 0: events */
            if (rc < 0)
                FAIL("cvia_progress: %s", cvia_err_name(rc));
        }
        CHECK_RC(cvia_test(&rq, &done, NULL));
        if (done)
            FAIL("a message arrived that no rank sent (a forgery was delivered)");
        CHECK_RC(cvia_cancel(&rq));
        CHECK_RC(cvia_wait(&rq, NULL));
    } else {
        close(fd);
        printf("forged: %d frames captured; sent %lu replays, %lu altered, %lu random-MAC, "
               "%lu earlier-secret, %lu unauthenticated, %lu other-job: %lu in all\n", fg_ntmpl,
               sent[0], sent[1], sent[2], sent[3], sent[4], sent[5],
               sent[0] + sent[1] + sent[2] + sent[3] + sent[4] + sent[5]);
    }
    CHECK_RC(cvia_barrier());
    return 0;
}

static int case_authmix(void)
{
    return 0;   /* reached only if the mismatch went unnoticed */
}

int main(int argc, char **argv)
{
    int rc, ret = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: func_net stream|silent|silent-rx|garbage|forged|authmix\n");
        return 2;
    }
    seed = (unsigned long long)env_long("FUNC_NET_SEED", 1);
    if (!strcmp(argv[1], "authmix") && env_long("CVIA_RANK", 0) == 1)
        setenv("CVIA_DGRAM_AUTH", "no", 1);
    if (!strcmp(argv[1], "garbage") || !strcmp(argv[1], "forged")) {
        /* a known port, so that rank 0 can aim at rank 1's */
        char port[16];
        snprintf(port, sizeof(port), "%ld",
                 env_long("FUNC_NET_PORT", 47000) + env_long("CVIA_RANK", 0));
        setenv("CVIA_UDP_PORT", port, 1);
    }
    if ((rc = cvia_init(&argc, &argv))) {
        fprintf(stderr, "func_net: cvia_init: %s\n", cvia_strerror(rc));
        if (!strcmp(argv[1], "authmix") && rc == -CVIA_ECONFIG) {
            printf("rank %ld: expected-error %s\n", env_long("CVIA_RANK", 0), cvia_err_name(rc));
            fflush(stdout);
        }
        return 1;
    }
    rank = cvia_rank();
    size = cvia_size();
    if (getenv("FUNC_NET_FORK")) {
        /* a child forked without exec that outlives its rank by seconds:
         * it must not keep what the rank held on the interface (hosts.sh
         * checks, once the job is over, that no XDP program is left) */
        pid_t parent = getpid(), pid = fork();
        if (pid < 0)
            FAIL("fork: %s", strerror(errno));
        if (pid == 0) {
            int null = open("/dev/null", O_RDWR);
            setsid();
            if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
            }
            /* until the rank is gone (60 s at most) */
            for (int i = 0; i < 1200 && getppid() == parent; i++)
                usleep(50000);
            _exit(0);
        }
    }
    if (!strcmp(argv[1], "stream"))         ret = case_stream();
    else if (!strcmp(argv[1], "poll"))      ret = case_poll();
    else if (!strcmp(argv[1], "silent"))    return case_silent(0);
    else if (!strcmp(argv[1], "silent-rx")) return case_silent(1);
    else if (!strcmp(argv[1], "garbage"))   ret = case_garbage();
    else if (!strcmp(argv[1], "forged"))    ret = case_forged();
    else if (!strcmp(argv[1], "authmix"))   ret = case_authmix();
    else {
        fprintf(stderr, "func_net: unknown case %s\n", argv[1]);
        return 2;
    }
    if ((rc = cvia_finalize()))
        FAIL("cvia_finalize: %s", cvia_strerror(rc));
    if (getenv("FUNC_NET_FORK") && !ret && xdp_attached_for(3.0))
        FAIL("an XDP program is still attached to this host's interface 3 s after "
             "cvia_finalize, while the child forked at init lives on");
    if (getenv("FUNC_NET_FORK") && !ret) {
        /* the queue: a new rank's socket takes it (3 s at most) */
        char ifname[IF_NAMESIZE + 1] = "";
        int err = 0;
        for (double until = now() + 3.0; (err = xdp_queue_refused(ifname, sizeof(ifname))) &&
             now() < until;)
            usleep(50000);
        if (err)
            FAIL("queue 0 of %s still taken 3 s after cvia_finalize, while the child forked "
                 "at init lives on: a new AF_XDP socket's bind: %s", ifname, strerror(err));
    }
    if (rank == 0 && !ret)
        printf("ok %s (%d ranks)\n", argv[1], size);
    return ret;
}
