/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* dgram wire format: the keyed CRC-32C, sealing and parsing a datagram
 * (SipHash-2-4 MAC, or the CRC with CVIA_DGRAM_AUTH=no), the job key and
 * secret, the fault-hook spec, and the CVIA_DGRAM_* variables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <corevia/cvia_errno.h>
#include "prov/dgram/dgram.h"
#include "util/nh.h"
#include "util/siphash.h"

static const char *const dg_cut_names[] = { "page", "mvia", "fill", NULL };

static const struct cvia_param dg_params[] = {
    { "SEGMENT", "0", CVIA_PARAM_SIZE, offsetof(struct dg_cfg, segment),
      "Payload bytes per datagram (0: the largest multiple of the page size that fits "
      "the link MTU, or all of the MTU when a page does not fit).", 0, 65000, NULL },
    { "CUT", "page", CVIA_PARAM_ENUM, offsetof(struct dg_cfg, cut),
      "How messages become segments: page (the automatic segment is the largest "
      "multiple of the page that fits the MTU; every segment full, so runs of them go "
      "as one GSO buffer), mvia (the same size, but a message is first cut at its page "
      "boundaries, as M-VIA cut descriptors: 1432+1432+1232 per page at MTU 1500) or "
      "fill (the automatic segment fills the MTU, the paper's MTU-filling).",
      0, 0, dg_cut_names },
    { "WINDOW", "512", CVIA_PARAM_INT, offsetof(struct dg_cfg, window),
      "Segments in flight per peer before the sender waits for acknowledgements (rounded "
      "down to a power of two).",
      8, 16384, NULL },
    { "INJECT", "16k", CVIA_PARAM_SIZE, offsetof(struct dg_cfg, inject),
      "Messages up to this size are copied into the send window and complete at once; "
      "larger ones go from the user's buffer and complete when acknowledged.", 0, 1L << 30,
      NULL },
    { "RTO", "5ms", CVIA_PARAM_TIME, offsetof(struct dg_cfg, rto),
      "Retransmission timeout until a round trip to the peer has been measured; from "
      "then on it is SRTT + max(4 RTTVAR, CVIA_DGRAM_RTO_MIN) (RFC 6298, from segments "
      "acknowledged on their first try), doubled at every timeout until the next "
      "measurement, up to CVIA_DGRAM_RTO_MAX.",
      0, 0, NULL },
    { "RTO_MIN", "500us", CVIA_PARAM_TIME, offsetof(struct dg_cfg, rto_min),
      "Least margin the retransmission timeout keeps above the smoothed round trip "
      "(SRTT + max(4 RTTVAR, this)): a microsecond link times out within about this "
      "long, and a receiver's delayed acknowledgement (CVIA_DGRAM_ACK_DELAY) is no "
      "timeout when it is at least as long.",
      0, 0, NULL },
    { "RTO_MAX", "250ms", CVIA_PARAM_TIME, offsetof(struct dg_cfg, rto_max),
      "Longest retransmission timeout.", 0, 0, NULL },
    { "ACK_DELAY", "500us", CVIA_PARAM_TIME, offsetof(struct dg_cfg, ack_delay),
      "Longest time a receiver keeps an acknowledgement back hoping to piggyback it.",
      0, 0, NULL },
    { "PEER_TIMEOUT", "30s", CVIA_PARAM_TIME, offsetof(struct dg_cfg, peer_timeout),
      "A peer that acknowledges nothing for this long while data to it is outstanding "
      "is declared dead (CVIA_ENOPEER). Without a launcher, a peer that a waiter "
      "finds silent for a quarter of this is probed, and declared dead once silent "
      "for all of it.", 0, 0, NULL },
    { "FAULTS", "", CVIA_PARAM_STRING, offsetof(struct dg_cfg, faults),
      "Fault injection on sent datagrams, for tests: drop=P,dup=P,reorder=P,corrupt=P "
      "with probabilities P in [0,1], and seed=N.", 0, 0, NULL },
    { "AUTH", "yes", CVIA_PARAM_BOOL, offsetof(struct dg_cfg, auth),
      "Authenticate every datagram with a 64-bit MAC (UMAC's NH hash under SipHash-2-4) "
      "keyed by the job's secret (16 random bytes drawn by rank 0 and handed to the "
      "others by the launcher or PMIx), over header, extension and payload, checked before anything is delivered or "
      "acknowledged: forged, altered and earlier jobs' datagrams are dropped and counted "
      "(forged). no: a CRC-32C keyed by the public job key instead, which catches "
      "corruption but not forgery. Every rank must have the same setting (checked at "
      "connection).", 0, 0, NULL },
    { "CSUM_PAYLOAD", "no", CVIA_PARAM_BOOL, offsetof(struct dg_cfg, csum_payload),
      "With CVIA_DGRAM_AUTH=no: cover the payload with the CRC-32C too, not only header "
      "and extension (no: the payload is trusted to the link's own check, UDP's checksum "
      "or Ethernet's FCS; forced on when CVIA_DGRAM_FAULTS corrupts datagrams, as that "
      "hook corrupts past the link's check). The MAC always covers the payload.",
      0, 0, NULL },
    { "STATS", "no", CVIA_PARAM_BOOL, offsetof(struct dg_cfg, stats),
      "Print the endpoint's datagram counters (sent, retransmitted, duplicate, out of "
      "order, corrupt, foreign, forged, replays) to stderr at finalize.", 0, 0, NULL },
    { "RCVBUF", "8m", CVIA_PARAM_SIZE, offsetof(struct dg_cfg, rcvbuf),
      "Socket receive and send buffer size asked for (forced past the system limit when "
      "privileged).", 0, 1L << 30, NULL },
    { "BATCH", "64", CVIA_PARAM_INT, offsetof(struct dg_cfg, batch),
      "Datagrams per sendmmsg/recvmmsg call.", 1, 1024, NULL },
    { "RX_GAP", "2us", CVIA_PARAM_TIME, offsetof(struct dg_cfg, rx_gap),
      "Links whose receive is a system call (udp; eth with CVIA_ETH_RING=no): after a "
      "send that followed a receive which emptied the socket, receives wait until this "
      "long after the send (a peer's death does not wait), so a rank that has just sent "
      "and waits for the answer gives up the CPU at once instead of asking the kernel "
      "again first; no answer comes back sooner than a round trip. Afterwards every "
      "progress call receives. 0: every progress call receives.", 0, 1000000, NULL },
    { NULL }
};

const struct cvia_param_table cvia__dgram_param_table = {
    .component = "dgram", .prefix = "DGRAM_", .params = dg_params,
    .cfg_size = sizeof(struct dg_cfg),
};

/* ---- CRC-32C (Castagnoli), hardware where the CPU has it ----------- */

static uint32_t crc_table[8][256];

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v ^= crc;
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
              crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
              crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
              crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;

    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    while (len--)
        crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#endif

static uint32_t crc_first(uint32_t crc, const unsigned char *p, size_t len);
static uint32_t (*crc_impl)(uint32_t, const unsigned char *, size_t) = crc_first;

static uint32_t crc_first(uint32_t crc, const unsigned char *p, size_t len)
{
    uint32_t (*f)(uint32_t, const unsigned char *, size_t) = crc_sw;

    crc_table_init();
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        f = crc_hw;
#endif
    __atomic_store_n(&crc_impl, f, __ATOMIC_RELEASE);
    return f(crc, p, len);
}

/* Raw CRC-32C state update (no pre/post inversion: the caller seeds). */
uint32_t cvia__crc32c(uint32_t crc, const void *buf, size_t len)
{
    return __atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE)(crc, buf, len);
}

static uint32_t dg_seed(uint64_t key)
{
    return cvia__crc32c(0xffffffffu, &key, sizeof(key));
}

uint64_t cvia__dg_job_key(uint64_t jobid)
{
    /* splitmix64 of the job id: a different job (or none) gives another
     * key, so its datagrams fail both the tag and the checksum */
    uint64_t z = jobid + 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

int cvia__dg_new_secret(unsigned char secret[16])
{
    size_t got = 0;

    while (got < 16) {
        ssize_t n = getrandom(secret + got, 16 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        got += (size_t)n;
    }
    return 0;
}

int cvia__dg_keys_derive(struct dg_keys *k)
{
    const size_t n = CVIA_NH_KEY_WORDS(DG_NH_MAX);
    void *mem;

    /* 32 bytes past a cache line: the sender's payload, which follows the
     * 32 bytes of header the MAC covers, then runs with its key words
     * line-aligned (the payload itself lies where the user put it); the
     * receiver, whose datagrams the link puts line-aligned from the MAC
     * on (udp), pays nothing for the key's offset. A 64-byte load that
     * spans two lines costs NH 7-20 % on Zen 4 (BENCHMARKS.md). */
    if (posix_memalign(&mem, 64, 32 + n * sizeof(*k->nh)))
        return -ENOMEM;
    k->nh_mem = mem;
    k->nh = (uint32_t *)(void *)((unsigned char *)mem + 32);
    /* SipHash of a counter, keyed by the secret: 8-byte inputs, so never
     * one of the MAC's (40 bytes and more) */
    for (size_t i = 0; i < n; i += 2) {
        uint64_t ctr = 0x6e68000000000000ull | i, w = cvia__siphash24(k->secret, &ctr, sizeof(ctr));
        k->nh[i] = (uint32_t)w;
        if (i + 1 < n)
            k->nh[i + 1] = (uint32_t)(w >> 32);
    }
    return 0;
}

void cvia__dg_keys_free(struct dg_keys *k)
{
    if (k->nh) {
        volatile uint32_t *v = k->nh;
        for (size_t i = 0; i < CVIA_NH_KEY_WORDS(DG_NH_MAX); i++)
            v[i] = 0;
        free(k->nh_mem);
        k->nh = NULL;
        k->nh_mem = NULL;
    }
}

/* The SipHash-2-4 input of the MAC, keyed by the secret: the length, NH
 * of the datagram after the MAC field (two words), the high halves of its
 * sequence and ack; four words as numbers (cvia__siphash24_4w),
 * whatever the datagram's size. NH runs over the pieces where they lie
 * (header, extension, payload) in one pass: every piece but the last is
 * a multiple of 16 bytes, so that is NH of them concatenated, what the
 * receiver computes over the datagram whole. */
static void dg_mac_in(const struct dg_keys *k, const void *hdr, const void *ext,
                      const void *payload, size_t plen, uint64_t esn, uint64_t tail[4])
{
    struct cvia_nh_piece pc[3];
    int n = 0;

    _Static_assert((sizeof(struct dg_hdr) - DG_MAC_SKIP) % 16 == 0 &&
                   sizeof(struct dg_ext) % 16 == 0, "NH pieces: whole 16-byte blocks");
    pc[n].p = (const uint8_t *)hdr + DG_MAC_SKIP;
    pc[n++].len = sizeof(struct dg_hdr) - DG_MAC_SKIP;
    if (ext) {
        pc[n].p = ext;
        pc[n++].len = sizeof(struct dg_ext);
    }
    if (plen) {
        pc[n].p = payload;
        pc[n++].len = plen;
    }
    cvia__nh2v(pc, n, k->nh, tail + 1);
    tail[0] = sizeof(struct dg_hdr) - DG_MAC_SKIP + (ext ? sizeof(struct dg_ext) : 0) + plen;
    tail[3] = esn;
}

int cvia__dg_seal_begin(struct dg_hdr *h, const struct iovec *iov, int n, int covered,
                        const struct dg_keys *k, uint64_t esn, uint64_t tail[4])
{
    if (k->auth) {
        int ext = (h->flags & DG_F_EXT) && n > 1 && iov[1].iov_len == sizeof(struct dg_ext);
        dg_mac_in(k, iov[0].iov_base, ext ? iov[1].iov_base : NULL,
                  n > 1 + ext ? iov[1 + ext].iov_base : NULL,
                  n > 1 + ext ? iov[1 + ext].iov_len : 0, esn, tail);
        return 1;
    } else {
        uint32_t crc = cvia__crc32c(dg_seed(k->job), (const uint8_t *)iov[0].iov_base + DG_MAC_SKIP,
                                    iov[0].iov_len - DG_MAC_SKIP);
        for (int i = 1; i < covered; i++)
            crc = cvia__crc32c(crc, iov[i].iov_base, iov[i].iov_len);
        h->mac = ~crc;
        return 0;
    }
}

void cvia__dg_seal(struct dg_hdr *h, const struct iovec *iov, int n, int covered,
                   const struct dg_keys *k, uint64_t esn)
{
    uint64_t tail[4];

    if (cvia__dg_seal_begin(h, iov, n, covered, k, esn, tail))
        cvia__siphash24_4w_scalar(k->secret, (const uint64_t (*)[4])tail, &h->mac, 1);
}

/* The checks before the MAC: 0 or a DG_BAD_* code. */
static int dg_pre(const uint8_t *p, size_t len, const struct dg_keys *k, struct dg_hdr *h)
{
    if (len < sizeof(*h))
        return DG_BAD_SHORT;
    memcpy(h, p, sizeof(*h));
    if (h->job != dg_jobtag(k->job))
        return DG_BAD_FOREIGN;
    /* the other setting of CVIA_DGRAM_AUTH is refused whole: a receiver
     * that authenticates never takes a datagram that is not */
    if (!(h->flags & DG_F_AUTH) != !k->auth)
        return DG_BAD_MAC;
    if (k->auth && len - DG_MAC_SKIP > DG_NH_MAX)
        return DG_BAD_MAC;
    return 0;
}

int cvia__dg_mac_batch(const struct dg_keys *k, struct dg_in *in, int n,
                       uint64_t (*esn)(const void *arg, const struct dg_hdr *h), const void *arg,
                       uint64_t (*tail)[4], uint64_t *tag, dg_place_fn *place_fn)
{
    struct dg_hdr h;
    int m = 0;

    _Static_assert(sizeof(struct dg_hdr) - DG_MAC_SKIP == CVIA_NH2C_SKIP,
                   "cvia__nh2c copies what follows the header");
    for (int i = 0; i < n; i++) {
        uint8_t *place = in[i].place;

        in[i].mac_ok = 0;
        in[i].place = NULL;
        if (!k->auth || dg_pre(in[i].data, in[i].len, k, &h))
            continue;
        if (place_fn) {
            int cut = 0;
            place = place_fn(arg, in, i, n, &h, &in[i].place_gen, &cut);
            if (cut)
                n = i + 1;   /* the rest after this one is delivered */
        }
        tail[m][0] = in[i].len - DG_MAC_SKIP;
        /* the payload copied where it belongs in the same pass, if the
         * plan said where: used only if the MAC is good (dg_deliver) */
        if (place && in[i].len > sizeof(h) && !(h.flags & DG_F_EXT)) {
            cvia__nh2c(in[i].data + DG_MAC_SKIP, in[i].len - DG_MAC_SKIP, k->nh, &tail[m][1],
                       place);
            in[i].place = place;
        } else {
            cvia__nh2(in[i].data + DG_MAC_SKIP, in[i].len - DG_MAC_SKIP, k->nh, &tail[m][1]);
        }
        tail[m][3] = esn ? esn(arg, &h) : 0;
        in[i].mac_ok = 2;   /* computed: tag[m] to compare */
        m++;
    }
    if (!m)
        return n;
    cvia__siphash24_4w(k->secret, (const uint64_t (*)[4])tail, tag, (size_t)m);
    m = 0;
    for (int i = 0; i < n; i++)
        if (in[i].mac_ok) {
            memcpy(&h.mac, in[i].data, sizeof(h.mac));
            in[i].mac_ok = tag[m++] == h.mac;
        }
    return n;
}

static int dg_parse(const void *buf, size_t len, const struct dg_keys *k, struct dg_hdr *h,
                    struct dg_ext *ext, const uint8_t **payload, size_t *plen,
                    uint64_t (*esn)(const void *arg, const struct dg_hdr *h), const void *arg,
                    int mac_ok)
{
    const uint8_t *p = buf;
    size_t off = sizeof(*h);
    int bad = dg_pre(p, len, k, h);

    if (bad)
        return bad;
    if (k->auth && !mac_ok) {
        uint64_t tail[4] = { len - DG_MAC_SKIP, 0, 0, esn ? esn(arg, h) : 0 }, tag;
        cvia__nh2(p + DG_MAC_SKIP, len - DG_MAC_SKIP, k->nh, tail + 1);
        cvia__siphash24_4w_scalar(k->secret, (const uint64_t (*)[4])tail, &tag, 1);
        if (tag != h->mac)
            return DG_BAD_MAC;
    } else if (!k->auth) {
        size_t covered = len;
        if (h->flags & DG_F_HCSUM) {   /* header and extension only */
            covered = sizeof(*h) + ((h->flags & DG_F_EXT) ? sizeof(*ext) : 0);
            if (covered > len)
                covered = len;
        }
        if ((uint64_t)~cvia__crc32c(dg_seed(k->job), p + DG_MAC_SKIP, covered - DG_MAC_SKIP) !=
            h->mac)
            return DG_BAD_CSUM;
    }
    if (h->flags & DG_F_EXT) {
        if (len < off + sizeof(*ext))
            return DG_BAD_FORMAT;
        memcpy(ext, p + off, sizeof(*ext));
        off += sizeof(*ext);
    } else {
        memset(ext, 0, sizeof(*ext));
    }
    if (h->type == 0 || (h->type > DG_TYPE_DATA_MAX && h->type < DG_ACK) || h->type > DG_TYPE_MAX)
        return DG_BAD_FORMAT;
    if (h->type >= DG_HELLO && ((h->flags & DG_F_EXT) || len != off + sizeof(struct dg_hello)))
        return DG_BAD_FORMAT;
    if ((h->type == DG_ACK || h->type == DG_PING) && len != off)
        return DG_BAD_FORMAT;
    if ((h->type == DG_RMAW || h->type == DG_WACK || h->type == DG_RMAR ||
         h->type == DG_RRESP) && (h->flags & DG_F_FIRST) && !(h->flags & DG_F_EXT))
        return DG_BAD_FORMAT;
    if ((h->flags & DG_F_CTX) && h->type != DG_MSG)
        return DG_BAD_FORMAT;
    *payload = p + off;
    *plen = len - off;
    return DG_OK;
}

int cvia__dg_parse(const void *buf, size_t len, const struct dg_keys *k, struct dg_hdr *h,
                   struct dg_ext *ext, const uint8_t **payload, size_t *plen,
                   uint64_t (*esn)(const void *arg, const struct dg_hdr *h), const void *arg)
{
    return dg_parse(buf, len, k, h, ext, payload, plen, esn, arg, 0);
}

int cvia__dg_parse_macd(const void *buf, size_t len, const struct dg_keys *k, struct dg_hdr *h,
                        struct dg_ext *ext, const uint8_t **payload, size_t *plen)
{
    return dg_parse(buf, len, k, h, ext, payload, plen, NULL, NULL, 1);
}

/* ---- the socket filter ---------------------------------------------- */

int cvia__dg_attach_filter(int fd, uint32_t base, int not_outgoing, uint64_t jobkey, int rank)
{
    /* cBPF loads are big-endian: compare with the header's bytes as such */
    uint16_t job = dg_jobtag(jobkey);
    uint8_t jb[2];
    uint32_t want_job, want_dst;
    struct sock_filter code[9];
    unsigned n = 0;

    memcpy(jb, &job, 2);
    want_job = (uint32_t)jb[0] << 8 | jb[1];
    want_dst = ((uint32_t)rank & 0xff) << 16 | ((uint32_t)rank & 0xff00) | ((uint32_t)rank >> 16 & 0xff);
    if (not_outgoing) {
        code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS,
                                                 (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE));
        code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 6, 0);
    }
    /* a load past the end of the packet drops it (too short for a header) */
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, base + DG_HDR_JOB_OFF);
    code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, want_job, 0, 4);
    /* the word before the 3-byte destination rank, masked to it */
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, base + DG_HDR_DST_OFF - 1);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x00ffffff);
    code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, want_dst, 0, 1);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0x40000);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
    struct sock_fprog prog = { .len = (unsigned short)n, .filter = code };

    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
        return -errno;
    return 0;
}

/* ---- fault hooks --------------------------------------------------- */

int cvia__dg_faults_parse(const char *text, struct dg_faults *f)
{
    char buf[CVIA_PARAM_STRLEN], *save = NULL;

    memset(f, 0, sizeof(*f));
    f->rng = 0x2545f4914f6cdd1dull;
    if (strlen(text) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, text);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '='), *end;
        double v;
        if (!eq)
            return -EINVAL;
        *eq = '\0';
        v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end)
            return -EINVAL;
        if (!strcmp(t, "seed")) {
            f->rng = (uint64_t)v ? (uint64_t)v : 1;
            continue;
        }
        if (v < 0 || v > 1)
            return -ERANGE;
        if (!strcmp(t, "drop"))
            f->drop = v;
        else if (!strcmp(t, "dup"))
            f->dup = v;
        else if (!strcmp(t, "reorder"))
            f->reorder = v;
        else if (!strcmp(t, "corrupt"))
            f->corrupt = v;
        else
            return -EINVAL;
    }
    return 0;
}
