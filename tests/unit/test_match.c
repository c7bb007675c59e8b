/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The core's matching engine (src/core/req.c) against a reference model.
 *
 * Random sequences of events drive the real engine the way providers and
 * the API do: receives posted (any source, any tag, truncating capacities),
 * messages beginning (the provider's match upcall) and ending later (its
 * complete upcall; one message in flight per sender, as providers deliver
 * each sender's messages in order), cancels. A reference model written
 * from MPI's rules (an arriving message takes the oldest matching posted
 * receive, else waits unexpected; a new receive takes the oldest matching
 * unexpected message; cancel succeeds only before a match) says after each
 * event which receive holds which message; every receive the engine says
 * is complete is checked for source, tag, length, status and every byte.
 *
 *   test_match [SEQUENCES [SEED]]   (default 2000 sequences, seed 1)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include <corevia/cvia_errno.h>
#include "core/core.h"
#include "tap.h"

#define NSRC   4
#define NTAG   3
#define MAXR   64      /* receives per sequence */
#define MAXM   64      /* messages per sequence */
#define MAXLEN 300

static uint64_t rng_s;
static unsigned rnd(unsigned n)
{
    rng_s ^= rng_s << 13;
    rng_s ^= rng_s >> 7;
    rng_s ^= rng_s << 17;
    return (unsigned)(rng_s % n);
}

static unsigned char pat(int m, size_t i)
{
    return (unsigned char)(m * 31 + i * 7 + 1);
}

struct mrecv {                  /* the model's view of a receive */
    int src, tag;               /* wanted (CVIA_ANY_* allowed) */
    size_t cap;
    int msg;                    /* bound message, -1: none yet */
    int cancelled;
    struct cvia_req *req;
    unsigned char *buf;
};
struct mmsg {
    int src, tag;
    size_t len;
    int recv;                   /* bound receive, -1: unexpected */
    int done;                   /* the provider completed it */
    struct cvia_xfer *x;        /* what match returned */
};

static struct mrecv R[MAXR + MAXM];   /* room for the drain's receives */
static struct mmsg M[MAXM];
static int nr, nm, inflight[NSRC];

static int wants(const struct mrecv *r, const struct mmsg *m)
{
    return (r->src == CVIA_ANY_SOURCE || r->src == m->src) &&
           (r->tag == CVIA_ANY_TAG || r->tag == m->tag);
}

/* Is receive @i complete, in the model? */
static int model_done(int i)
{
    return !R[i].cancelled && R[i].msg >= 0 && M[R[i].msg].done;
}

static int check(struct cvia_ctx *c, int seq, int step, const char **why)
{
    for (int i = 0; i < nr; i++) {
        struct mrecv *r = &R[i];
        if (r->cancelled || !r->req)
            continue;
        int got = cvia__req_done(r->req), want = model_done(i);
        if (got != want) {
            *why = got ? "engine completed a receive the model has not" :
                         "engine did not complete a receive the model has";
            tap_diag("sequence %d step %d receive %d (src %d tag %d): %s", seq, step, i,
                     r->src, r->tag, *why);
            return 0;
        }
        if (!got)
            continue;
        const struct mmsg *m = &M[r->msg];
        struct cvia_req *q = r->req;
        int st = m->len > r->cap ? -CVIA_ETRUNC : 0;
        size_t n = m->len < r->cap ? m->len : r->cap;
        if (q->x.peer != m->src || q->x.tag != m->tag || q->x.msg_len != m->len ||
            q->status != st) {
            tap_diag("sequence %d step %d receive %d: got src %d tag %d len %zu status %d, "
                     "model message %d src %d tag %d len %zu status %d", seq, step, i,
                     q->x.peer, q->x.tag, q->x.msg_len, q->status, r->msg, m->src, m->tag,
                     m->len, st);
            *why = "wrong message";
            return 0;
        }
        for (size_t k = 0; k < n; k++)
            if (r->buf[k] != pat(r->msg, k)) {
                tap_diag("sequence %d step %d receive %d: byte %zu of message %d wrong",
                         seq, step, i, k, r->msg);
                *why = "wrong bytes";
                return 0;
            }
        cvia__req_free(c, r->req);   /* taken, as cvia_wait would */
        r->req = NULL;
    }
    return 1;
}

static void post(struct cvia_ctx *c)
{
    struct mrecv *r = &R[nr];
    int i = nr++;

    r->src = rnd(4) ? (int)rnd(NSRC) : CVIA_ANY_SOURCE;
    r->tag = rnd(4) ? (int)rnd(NTAG) : CVIA_ANY_TAG;
    r->cap = rnd(5) ? MAXLEN : rnd(MAXLEN / 2);
    r->msg = -1;
    r->cancelled = 0;
    r->buf = malloc(MAXLEN);
    if (cvia__irecv_ctx(c, r->buf, r->cap, r->src, r->tag, CVIA_CTX_USER, &r->req)) {
        fprintf(stderr, "test_match: irecv failed\n");
        exit(1);
    }
    /* model: the oldest matching unexpected message */
    for (int m = 0; m < nm; m++)
        if (M[m].recv < 0 && wants(r, &M[m])) {
            M[m].recv = i;
            r->msg = m;
            break;
        }
}

static void begin(struct cvia_ctx *c, int s)
{
    struct mmsg *m = &M[nm];
    int k = nm++;

    m->src = s;
    m->tag = (int)rnd(NTAG);
    m->len = rnd(MAXLEN + 1);
    m->done = 0;
    m->recv = -1;
    m->x = cvia__core_match(c, s, CVIA_CTX_USER, m->tag, m->len, 0, 0);
    inflight[s] = k + 1;
    for (int i = 0; i < nr; i++)   /* model: the oldest matching posted receive */
        if (!R[i].cancelled && R[i].msg < 0 && wants(&R[i], m)) {
            R[i].msg = k;
            m->recv = i;
            break;
        }
}

/* The provider's side of the end of a message: the bytes, then complete.
 * Bytes past the descriptor's capacity are dropped, as providers do. */
static void finish(struct cvia_ctx *c, int s)
{
    int k = inflight[s] - 1;
    struct mmsg *m = &M[k];
    struct cvia_xfer *x = m->x;
    size_t n = m->len < x->len ? m->len : x->len;

    for (size_t i = 0; i < n; i++)
        ((unsigned char *)x->buf)[i] = pat(k, i);
    x->done = m->len;
    m->done = 1;
    inflight[s] = 0;
    cvia__core_complete(c, x, m->len > x->len ? -CVIA_ETRUNC : 0);
}

static int cancel(struct cvia_ctx *c, int seq, int step)
{
    int i = (int)rnd((unsigned)nr);
    struct mrecv *r = &R[i];

    if (r->cancelled || !r->req || cvia__req_done(r->req))
        return 1;
    int rc = cvia__cancel(c, r->req), want = r->msg < 0 ? 0 : -EBUSY;
    if (rc != want) {
        tap_diag("sequence %d step %d: cancel of receive %d gave %d, model %d", seq, step, i,
                 rc, want);
        return 0;
    }
    if (!rc) {
        r->cancelled = 1;
        r->req = NULL;   /* freed by cancel */
    }
    return 1;
}

static int sequence(struct cvia_ctx *c, int seq, int steps)
{
    const char *why = "";
    int ok = 1;

    nr = nm = 0;
    memset(inflight, 0, sizeof(inflight));
    for (int step = 0; step < steps && ok; step++) {
        unsigned e = rnd(10);
        int s = (int)rnd(NSRC);
        if (e < 3 && nr < MAXR)
            post(c);
        else if (e < 6 && nm < MAXM && !inflight[s])
            begin(c, s);
        else if (e < 9 && inflight[s])
            finish(c, s);
        else if (e == 9 && nr)
            ok = cancel(c, seq, step);
        if (ok)
            ok = check(c, seq, step, &why);
    }
    /* drain: finish what is in flight, post a wildcard receive for each
     * message still unexpected, then everything must be complete */
    for (int s = 0; s < NSRC && ok; s++)
        if (inflight[s])
            finish(c, s);
    for (int m = 0; m < nm && ok; m++)
        if (M[m].recv < 0) {
            struct mrecv *r = &R[nr];
            int i = nr++;
            memset(r, 0, sizeof(*r));
            r->src = CVIA_ANY_SOURCE;
            r->tag = CVIA_ANY_TAG;
            r->cap = MAXLEN;
            r->msg = -1;
            r->buf = malloc(MAXLEN);
            if (cvia__irecv_ctx(c, r->buf, r->cap, r->src, r->tag, CVIA_CTX_USER, &r->req))
                exit(1);
            for (int k = 0; k < nm; k++)
                if (M[k].recv < 0) {
                    M[k].recv = i;
                    r->msg = k;
                    break;
                }
        }
    if (ok)
        ok = check(c, seq, steps, &why);
    /* what is left posted: cancel it (the model says it is unmatched) */
    for (int i = 0; i < nr; i++) {
        if (R[i].req && !R[i].cancelled && R[i].msg < 0 && cvia__cancel(c, R[i].req) != 0) {
            tap_diag("sequence %d: an unmatched receive could not be cancelled", seq);
            ok = 0;
        }
        free(R[i].buf);
    }
    return ok;
}

int main(int argc, char **argv)
{
    static struct cvia_ctx c;
    int nseq = argc > 1 ? atoi(argv[1]) : 2000;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int ok = 1, seq;

    rng_s = seed * 0x9e3779b97f4a7c15ull + 1;
    c.size = c.cap = NSRC;
    atomic_store(&c.npeers, NSRC);   /* the valid peer indices */
    c.peer_lost = calloc(NSRC, 1);
    c.peer_prov = calloc(NSRC, 1);
    cvia_mlock_init(&c.lock);
    if (!c.peer_lost || !c.peer_prov || nseq < 1)
        return 1;
    printf("1..1\n");
    for (seq = 0; seq < nseq && ok; seq++)
        ok = sequence(&c, seq, 40 + (int)rnd(160));
    tap_ok(ok, "matching engine = reference model over %d random sequences (seed %llu): "
           "posts, arrivals in flight, completions, cancels, wildcards, truncation", seq, seed);
    cvia__req_pool_fini(&c);
    free(c.peer_lost);
    free(c.peer_prov);
    return ok ? 0 : 1;
}
