/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* HLRC protocol core: intervals and their write notices, vector time, and
 * diffs.
 *
 * An interval ends at every synchronization (acquire, release, barrier,
 * CREATE, end of a created process) that finds written units. Its diffs
 * go to their homes first, each by RDMA write with immediate data into one
 * of the two buffers the home keeps for this writer, used alternately: the
 * home applies the diff in place and frees the buffer by writing its
 * sequence number back into our flag (with immediate data, so that our
 * service thread can wake us). Only when every diff of the interval is
 * applied does the interval get its number and its write notice (the
 * units it wrote) join the log: a notice can then never send a reader to
 * a home that lacks the data. Diffs are byte-exact, so writers of disjoint
 * bytes of one unit merge at the home. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/dsm.h"


int dsm_buf_put(struct dsm_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            dsm_fatal(-ENOMEM, "out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void dsm_buf_free(struct dsm_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Append @v to the growable array *@q of *@n entries (room for *@cap). */
static void u32_push(uint32_t **q, size_t *n, size_t *cap, uint32_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        uint32_t *p = realloc(*q, c * sizeof(*p));
        if (!p)
            dsm_fatal(-ENOMEM, "out of memory");
        *q = p;
        *cap = c;
    }
    (*q)[(*n)++] = v;
}

/* ---- the interval log ---------------------------------------------------------- */

static void log_append(struct dsm *d, int o, uint32_t id, uint32_t n, const uint32_t *units)
{
    struct dsm_ilog *L = &d->log[o];
    struct dsm_rec *r;

    if (!L->n)
        L->base = id;
    if (L->n == L->cap) {
        uint32_t cap = L->cap ? L->cap * 2 : 16;
        struct dsm_rec *q = realloc(L->recs, cap * sizeof(*q));
        if (!q)
            dsm_fatal(-ENOMEM, "out of memory");
        L->recs = q;
        L->cap = cap;
    }
    r = &L->recs[L->n++];
    r->id = id;
    r->n = n;
    r->units = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!r->units)
        dsm_fatal(-ENOMEM, "out of memory");
    memcpy(r->units, units, n * sizeof(uint32_t));
}

static void put_rec(struct dsm_buf *b, uint32_t o, const struct dsm_rec *r)
{
    uint32_t h[3] = { o, r->id, r->n };
    dsm_buf_put(b, h, sizeof(h));
    dsm_buf_put(b, r->units, r->n * sizeof(uint32_t));
}

void dsm_records_since(struct dsm *d, const uint32_t *vt, struct dsm_buf *b)
{
    for (int o = 0; o < d->size; o++) {
        const struct dsm_ilog *L = &d->log[o];
        for (uint32_t i = 0; i < L->n; i++) {
            if (L->recs[i].id > vt[o]) {
                put_rec(b, (uint32_t)o, &L->recs[i]);
                ADD(notices_sent, L->recs[i].n);
            }
        }
    }
}

void dsm_own_since_barrier(struct dsm *d, struct dsm_buf *b)
{
    const struct dsm_ilog *L = &d->log[d->rank];

    for (uint32_t i = 0; i < L->n; i++) {
        put_rec(b, (uint32_t)d->rank, &L->recs[i]);
        ADD(notices_sent, L->recs[i].n);
    }
}

/* Acquire: take the intervals we did not know, in order, and invalidate
 * what they wrote (a home's copy is always current). Under lock. */
int dsm_records_apply(struct dsm *d, const char *p, size_t len)
{
    const char *end = p + len;

    while (p < end) {
        uint32_t h[3];
        const uint32_t *units;

        if ((size_t)(end - p) < sizeof(h))
            return -CVIA_EPROTO;
        memcpy(h, p, sizeof(h));
        p += sizeof(h);
        if (h[0] >= (uint32_t)d->size || (size_t)(end - p) / 4 < h[2])
            return -CVIA_EPROTO;
        units = (const uint32_t *)(const void *)p;
        p += (size_t)h[2] * 4;
        if (h[1] <= d->vt[h[0]])
            continue;
        if (h[1] != d->vt[h[0]] + 1) {
            dsm_err("interval %u of rank %u arrived before %u", h[1], h[0], d->vt[h[0]] + 1);
            return -CVIA_EPROTO;
        }
        uint32_t *copy = malloc((h[2] ? h[2] : 1) * sizeof(uint32_t));
        if (!copy)
            dsm_fatal(-ENOMEM, "out of memory");
        memcpy(copy, units, (size_t)h[2] * 4);
        log_append(d, (int)h[0], h[1], h[2], copy);
        d->vt[h[0]] = h[1];
        ADD(notices_recv, h[2]);
        for (uint32_t i = 0; i < h[2]; i++) {
            uint32_t u = copy[i];
            struct dsm_unit *x;
            if (u >= d->nunits)
                return -CVIA_EPROTO;
            x = &d->u[u];
            if (d->xg) {
                /* groups: a member's write is in this memory already; a
                 * unit of this host's homes is current; a dirty copy is
                 * merged (dsm_merge_acquired), not dropped */
                if ((d->gmask >> h[0]) & 1 || dsm_ghome(d, x->home))
                    continue;
                if (x->pf == PF_FLIGHT)
                    x->pf = PF_STALE;
                if (x->state == U_DIRTY) {
                    u32_push(&d->amq, &d->namq, &d->amq_cap, u);
                    continue;
                }
                if (x->state == U_CLEAN) {
                    x->state = U_INVALID;
                    x->used = 0;
                    ADD(invalidations, 1);
                }
                dsm_unit_prot(d, u, P_NONE);
                continue;
            }
            if (x->pf == PF_FLIGHT)   /* it may carry data older than this notice */
                x->pf = PF_STALE;
            if (x->home != d->rank && (x->state == U_CLEAN || x->state == U_DIRTY)) {
                x->state = U_INVALID;
                x->used = 0;
                dsm_unit_prot(d, u, P_NONE);
                ADD(invalidations, 1);
            }
        }
        free(copy);
    }
    return 0;
}

void dsm_log_gc(struct dsm *d)
{
    for (int o = 0; o < d->size; o++) {
        struct dsm_ilog *L = &d->log[o];
        for (uint32_t i = 0; i < L->n; i++)
            free(L->recs[i].units);
        L->n = 0;
    }
}

/* ---- diffs: the writer's side ---------------------------------------------------- */

/* Sleep until home @h has freed its diff buffer @b. */
static void wait_ack(struct dsm *d, int h, int b)
{
    _Atomic uint64_t *f = &d->flags[h * 2 + b];
    uint64_t want = d->dw_seq[h * 2 + b];

    while (atomic_load_explicit(f, memory_order_acquire) != want) {
        uint32_t w = atomic_load(&d->ack_word);
        if (atomic_load_explicit(f, memory_order_acquire) == want)
            break;
        atomic_fetch_add(&d->app_waiting, 1);
        dsm_kick(d);
        dsm_futex_wait(&d->ack_word, w, 0.001);
        atomic_fetch_sub(&d->app_waiting, 1);
    }
}

struct packer {
    struct dsm *d;
    int     home;
    int     s;           /* staging buffer in use */
    size_t  pos;
    size_t  uhdr;        /* where the current unit's header is */
    uint32_t unit, nruns;
    int     open_unit;
};

static void pk_open(struct packer *k)
{
    struct dsm *d = k->d;
    k->s = d->stage_next;
    d->stage_next ^= 1;
    if (d->stage_req[k->s]) {   /* its last write must be done with it */
        int rc = cvia_wait(&d->stage_req[k->s], NULL);
        if (rc)
            dsm_fatal(rc, "writing a diff: %s", cvia_strerror(rc));
    }
    k->pos = 0;
}

static void pk_send(struct packer *k)
{
    struct dsm *d = k->d;
    int h = k->home, b = d->dw_next[h], rc;
    uint64_t seq;

    if (!k->pos)
        return;
    wait_ack(d, h, b);
    seq = ++d->diff_seq & ((1ull << 48) - 1);
    d->dw_seq[h * 2 + b] = seq;
    d->dw_next[h] = (uint8_t)(b ^ 1);
    rc = cvia_write(d->stage[k->s], k->pos, &d->peer_diff[h],
                    ((size_t)d->rank * 2 + (size_t)b) * d->cfg.diff_buf, CVIA_WRITE_IMM,
                    ((uint64_t)IMM_DIFF << 56) | ((uint64_t)b << 48) | seq, &d->stage_req[k->s]);
    if (rc)
        dsm_fatal(rc, "writing a diff to rank %d: %s", h, cvia_strerror(rc));
    ADD(rdma_writes, 1);
    ADD(rdma_bytes, k->pos);
}

static void pk_end_unit(struct packer *k)
{
    if (k->open_unit) {
        memcpy(k->d->stage[k->s] + k->uhdr + 4, &k->nruns, 4);
        k->open_unit = 0;
    }
}

static void pk_begin_unit(struct packer *k, uint32_t u)
{
    uint32_t h[2] = { u, 0 };

    if (k->d->cfg.diff_buf - k->pos < sizeof(h) + 16) {
        pk_send(k);
        pk_open(k);
    }
    k->uhdr = k->pos;
    memcpy(k->d->stage[k->s] + k->pos, h, sizeof(h));
    k->pos += sizeof(h);
    k->unit = u;
    k->nruns = 0;
    k->open_unit = 1;
}

static void pk_run(struct packer *k, uint32_t off, uint32_t len, const char *data)
{
    while (len) {
        size_t room = k->d->cfg.diff_buf - k->pos;
        if (room < 8 + 8) {   /* no room for a useful run: next buffer */
            pk_end_unit(k);
            pk_send(k);
            pk_open(k);
            pk_begin_unit(k, k->unit);
            room = k->d->cfg.diff_buf - k->pos;
        }
        uint32_t n = (uint32_t)(room - 8 < len ? room - 8 : len);
        uint32_t rh[2] = { off, n };
        memcpy(k->d->stage[k->s] + k->pos, rh, 8);
        memcpy(k->d->stage[k->s] + k->pos + 8, data, n);
        k->pos += 8 + n;
        k->nruns++;
        off += n;
        data += n;
        len -= n;
    }
}

/* The runs of bytes that differ between unit @u (its bytes at @cur) and
 * its twin. */
static size_t diff_unit(struct packer *k, uint32_t u, const unsigned char *cur)
{
    struct dsm *d = k->d;
    const unsigned char *tw = (const unsigned char *)d->twins + (size_t)u * d->unit;
    size_t i = 0, n = d->unit, changed = 0;

    pk_begin_unit(k, u);
    while (i < n) {
        if (!(i & 7)) {
            while (i + 8 <= n && !memcmp(cur + i, tw + i, 8))
                i += 8;
            if (i >= n)
                break;
        }
        if (cur[i] == tw[i]) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && cur[j] != tw[j])
            j++;
        pk_run(k, (uint32_t)i, (uint32_t)(j - i), (const char *)cur + i);
        changed += j - i;
        i = j;
    }
    pk_end_unit(k);
    return changed;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Send the diffs of the non-home units in @keys ((home << 32) | unit,
 * sorted), then wait until every home has applied them. The bytes are
 * the units' own, or @scr[i] for keys[i] (groups: a copy taken once). */
static void flush_diffs(struct dsm *d, const uint64_t *keys, size_t n, const char *scr)
{
    struct packer k = { .d = d };
    uint64_t used[DSM_MAX_RANKS / 64 + 1] = { 0 };

    for (size_t i = 0; i < n;) {
        k.home = (int)(keys[i] >> 32);
        used[k.home / 64] |= 1ull << (k.home % 64);
        pk_open(&k);
        for (; i < n && (int)(keys[i] >> 32) == k.home; i++) {
            const char *cur = scr ? scr + i * d->unit : d->pview + (keys[i] & 0xffffffffu) * d->unit;
            size_t c = diff_unit(&k, (uint32_t)keys[i], (const unsigned char *)cur);
            ADD(diffs, 1);
            ADD(diff_bytes, c);
        }
        pk_send(&k);
    }
    for (int h = 0; h < d->size; h++) {
        if (used[h / 64] & (1ull << (h % 64))) {
            wait_ack(d, h, 0);
            wait_ack(d, h, 1);
        }
    }
}

/* dsm_end_interval with groups across hosts. The interval is the host's:
 * every unit in the host's dirty list, whoever wrote it (a member's bytes
 * released early are later values, which RC allows). Under the release
 * mutex, which keeps one release, merge or poll flush of the host at a
 * time: this rank write-protects what it wrote and clears its mark, takes
 * a copy of each dirty copy, sends its diff against the twin and makes
 * the copy the twin (a byte another member writes meanwhile differs from
 * it and goes with a later diff). A unit leaves the dirty list when no
 * member has written it since its last release and, for a copy, nothing
 * differs from the twin. */
static int end_interval_xg(struct dsm *d)
{
    const uint64_t me = 1ull << d->rank;
    uint32_t *units;
    uint64_t *keys;
    char *scr = NULL;
    size_t n, nk = 0, nd, nt;

    atomic_store(&d->in_release, 1);
    dsm_rel_lock(d);
    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < d->nmine; i++) {
        uint32_t u = d->mine[i];
        d->u[u].wmask &= ~me;
        dsm_unit_prot(d, u, P_READ);
    }
    d->nmine = 0;
    nd = d->xctl->ndirty;
    nt = (size_t)(d->xctl->ntracked - d->trk_rel);
    n = nd + nt;
    if (!n) {
        cvia_spin_unlock(d->lk);
        dsm_rel_unlock(d);
        atomic_store(&d->in_release, 0);
        return 0;
    }
    units = malloc(n * sizeof(*units));
    keys = malloc(n * sizeof(*keys));
    if (!units || !keys)
        dsm_fatal(-ENOMEM, "out of memory");
    memcpy(units, d->dirty, nd * sizeof(*units));
    /* home units tracked again since this rank's last release: it may
     * have written them without a fault meanwhile, so its notice names
     * them, and its next write faults */
    for (size_t i = 0; i < nt; i++) {
        uint32_t u = d->tracked[d->trk_rel + i];
        units[nd + i] = u;
        if (d->uprot[u] == P_RW && !(d->u[u].state == U_DIRTY && (d->u[u].wmask & me)))
            dsm_unit_prot(d, u, P_READ);
    }
    d->trk_rel += nt;
    for (size_t i = 0; i < nd; i++) {
        struct dsm_unit *x = &d->u[units[i]];
        if (!dsm_ghome(d, x->home) && x->state == U_DIRTY)
            keys[nk++] = ((uint64_t)(uint16_t)x->home << 32) | units[i];
    }
    cvia_spin_unlock(d->lk);

    if (nk) {
        qsort(keys, nk, sizeof(*keys), cmp_u64);
        if (!(scr = malloc(nk * d->unit)))
            dsm_fatal(-ENOMEM, "out of memory");
        for (size_t i = 0; i < nk; i++)
            memcpy(scr + i * d->unit, d->pview + (keys[i] & 0xffffffffu) * d->unit, d->unit);
        flush_diffs(d, keys, nk, scr);
        for (size_t i = 0; i < nk; i++)
            memcpy(d->twins + (keys[i] & 0xffffffffu) * d->unit, scr + i * d->unit, d->unit);
    }

    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < nd; i++) {
        struct dsm_unit *x = &d->u[units[i]];
        size_t off = (size_t)units[i] * d->unit;
        if (x->state != U_DIRTY || x->wmask)
            continue;
        if (!dsm_ghome(d, x->home) && memcmp(d->pview + off, d->twins + off, d->unit))
            continue;
        x->state = U_CLEAN;
        x->indirty = 0;
    }
    {
        size_t k = 0;
        for (size_t i = 0; i < d->xctl->ndirty; i++)
            if (d->u[d->dirty[i]].indirty)
                d->dirty[k++] = d->dirty[i];
        d->xctl->ndirty = k;
    }
    log_append(d, d->rank, d->vt[d->rank] + 1, (uint32_t)n, units);
    d->vt[d->rank]++;
    ADD(intervals, 1);
    cvia_spin_unlock(d->lk);
    dsm_rel_unlock(d);
    atomic_store(&d->in_release, 0);
    free(scr);
    free(units);
    free(keys);
    return 0;
}

int dsm_end_interval(struct dsm *d, int barrier)
{
    if (d->xg)
        return end_interval_xg(d);

    uint32_t *units;
    uint64_t *keys;
    size_t n, nk = 0;

    /* a poll flush (service thread) writes bytes of dirty units to their
     * homes and moves their twins: let it finish first, and keep the next
     * one out until this interval is closed */
    atomic_store(&d->in_release, 1);
    while (atomic_load(&d->pflush))
        sched_yield();
    cvia_spin_lock(d->lk);
    n = d->ndirty;
    if (!n) {
        cvia_spin_unlock(d->lk);
        atomic_store(&d->in_release, 0);
        return 0;
    }
    units = malloc(n * sizeof(*units));
    keys = malloc(n * sizeof(*keys));
    if (!units || !keys)
        dsm_fatal(-ENOMEM, "out of memory");
    memcpy(units, d->dirty, n * sizeof(*units));
    d->ndirty = 0;
    for (size_t i = 0; i < n; i++) {
        struct dsm_unit *x = &d->u[units[i]];
        x->indirty = 0;
        if (x->home == d->rank) {
            x->state = U_CLEAN;
            /* at a barrier the protection waits for the new copyset: the
             * unit may well become exclusive (and writable) again */
            if (!barrier)
                dsm_unit_prot(d, units[i], P_READ);
        } else if (x->state == U_DIRTY) {
            /* (one a poll note dropped is at its home already, and invalid) */
            keys[nk++] = ((uint64_t)(uint16_t)x->home << 32) | units[i];
        }
    }
    cvia_spin_unlock(d->lk);

    if (nk) {
        qsort(keys, nk, sizeof(*keys), cmp_u64);
        flush_diffs(d, keys, nk, NULL);
    }

    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < nk; i++) {
        uint32_t u = (uint32_t)keys[i];
        /* a poll note came while the diff was on its way: our copy may
         * lack another rank's write that is at the home now */
        d->u[u].state = d->u[u].noted ? U_INVALID : U_CLEAN;
        dsm_unit_prot(d, u, d->u[u].noted ? P_NONE : P_READ);
    }
    log_append(d, d->rank, d->vt[d->rank] + 1, (uint32_t)n, units);
    d->vt[d->rank]++;
    ADD(intervals, 1);
    cvia_spin_unlock(d->lk);
    atomic_store(&d->in_release, 0);
    free(units);
    free(keys);
    return 0;
}

/* ---- polling without synchronization (issue 18) ------------------------------------
 *
 * HLRC shows a write to a rank only after it acquires from the writer,
 * which a program spinning on a flag never does. Every CVIA_DSM_POLL the
 * service thread takes the units written since the last tick (each first
 * write after a tick faults: units made dirty, and dirty ones that the
 * tick write-protected again), writes the bytes that changed in those not
 * released yet straight into their homes' memory (byte-exact, as a diff;
 * the twin moves along, so the release's diff carries only what changed
 * after), and sends every other rank the list (with the epoch of each
 * write). A rank that holds a clean copy of a unit named drops it, and
 * its next read fetches the home's. The release still
 * sends its notice for the unit: acquire semantics are unchanged. */

struct prun { uint32_t u, off, len; int home; };

/* The bytes of non-home unit @u that differ from its twin: into @bytes as
 * runs, and into the twin (what is written home is no change any more).
 * Under lock, with the unit write-protected for this process. Another rank
 * of the host (groups across hosts) may still be writing the unit, so the
 * runs, the bytes sent and the new twin all come from one copy taken
 * first: reading the page twice could send one value and record another
 * in the twin, and that write would never be sent. */
static void collect_runs(struct dsm *d, uint32_t u, int home, struct prun **runs, size_t *nr,
                         size_t *cap, struct dsm_buf *bytes)
{
    unsigned char *tw = (unsigned char *)d->twins + (size_t)u * d->unit;
    unsigned char *cur = malloc(d->unit);

    if (!cur)
        dsm_fatal(-ENOMEM, "out of memory");
    memcpy(cur, (unsigned char *)d->pview + (size_t)u * d->unit, d->unit);

    for (size_t b = 0; b < d->unit;) {
        if (cur[b] == tw[b]) {
            b++;
            continue;
        }
        size_t e = b + 1;
        while (e < d->unit && cur[e] != tw[e])
            e++;
        if (*nr == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            struct prun *r = realloc(*runs, *cap * sizeof(*r));
            if (!r)
                dsm_fatal(-ENOMEM, "out of memory");
            *runs = r;
        }
        (*runs)[(*nr)++] = (struct prun){ u, (uint32_t)b, (uint32_t)(e - b), home };
        dsm_buf_put(bytes, cur + b, e - b);
        memcpy(tw + b, cur + b, e - b);
        b = e;
    }
    free(cur);
}

/* The @n units written since the last tick (d->pollw, under lock): each
 * named in @note with its write epoch; a dirty one write-protected (the
 * next write faults again and marks it for the next tick) and, when its
 * home is not on this host, its changed bytes collected. */
static void poll_collect(struct dsm *d, uint32_t *note, size_t n, struct prun **runs,
                         size_t *nr, size_t *cap, struct dsm_buf *bytes)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = d->pollw[i];
        struct dsm_unit *x = &d->u[u];
        note[2 * i] = u;
        note[2 * i + 1] = x->wepoch;
        d->upollw[u] = 0;
        if (x->state != U_DIRTY)
            continue;
        dsm_unit_prot(d, u, P_READ);
        if (!dsm_ghome(d, x->home))
            collect_runs(d, u, x->home, runs, nr, cap, bytes);
    }
}

/* Write the runs into their homes' memory and wait until they are there. */
static void write_runs(struct dsm *d, const struct prun *runs, size_t nr,
                       const struct dsm_buf *bytes, cvia_req_t *reqs)
{
    for (size_t i = 0, pos = 0; i < nr; pos += runs[i].len, i++) {
        int rc = cvia_write(bytes->p + pos, runs[i].len, &d->peer_view[runs[i].home],
                            (uint64_t)runs[i].u * d->unit + runs[i].off, 0, 0, &reqs[i]);
        if (rc)
            dsm_fatal(rc, "writing unit %u to rank %d: %s", runs[i].u, runs[i].home,
                      cvia_strerror(rc));
        ADD(rdma_writes, 1);
        ADD(rdma_bytes, runs[i].len);
    }
    for (size_t i = 0; i < nr; i++) {
        int rc = cvia_wait(&reqs[i], NULL);
        if (rc)
            dsm_fatal(rc, "writing unit %u to rank %d: %s", runs[i].u, runs[i].home,
                      cvia_strerror(rc));
    }
}

/* dsm_poll_tick with groups across hosts: this rank's writes since its
 * last tick (its own marks: protections are per process), flushed under
 * the release mutex (a release or merge that holds it carries them, and
 * the marks wait for the next tick), announced to the ranks of the other
 * hosts only (this host's see them in the one memory). */
static void poll_tick_xg(struct dsm *d)
{
    uint32_t *note = NULL;
    struct prun *runs = NULL;
    struct dsm_buf bytes = { 0 };
    size_t n, nr = 0, cap = 0;
    cvia_req_t *reqs = NULL;

    size_t np, nt;

    atomic_store(&d->pflush, 1);
    if (atomic_load(&d->in_fin) || !dsm_rel_trylock(d)) {
        atomic_store(&d->pflush, 0);
        return;
    }
    cvia_spin_lock(d->lk);
    np = d->npollw;
    nt = (size_t)(d->xctl->ntracked - d->trk_tick);
    n = np + nt;
    if (!n || d->scratch) {
        cvia_spin_unlock(d->lk);
        dsm_rel_unlock(d);
        atomic_store(&d->pflush, 0);
        return;
    }
    if (!(note = malloc(n * 2 * sizeof(*note))))
        dsm_fatal(-ENOMEM, "out of memory");
    /* home units tracked again since the last tick: this rank may have
     * written them without a fault; named, and write-protected here */
    for (size_t i = 0; i < nt; i++) {
        uint32_t u = d->tracked[d->trk_tick + i];
        note[2 * (np + i)] = u;
        note[2 * (np + i) + 1] = d->epoch;
        if (d->uprot[u] == P_RW &&
            !(d->u[u].state == U_DIRTY && (d->u[u].wmask & (1ull << d->rank))))
            dsm_unit_prot(d, u, P_READ);
    }
    d->trk_tick += nt;
    poll_collect(d, note, np, &runs, &nr, &cap, &bytes);
    d->npollw = 0;
    cvia_spin_unlock(d->lk);
    if (nr && !(reqs = calloc(nr, sizeof(*reqs))))
        dsm_fatal(-ENOMEM, "out of memory");
    write_runs(d, runs, nr, &bytes, reqs);
    dsm_rel_unlock(d);
    free(reqs);
    for (int r = 0; r < d->size; r++) {
        struct dsm_hdr h = { .type = M_POLLNOTE, .a = (uint32_t)n };
        if (!((d->gmask >> r) & 1))
            dsm_send(d, r, &h, note, n * 2 * sizeof(*note));
    }
    atomic_store(&d->pflush, 0);
    free(note);
    free(runs);
    dsm_buf_free(&bytes);
}

void dsm_poll_tick(struct dsm *d)
{
    if (d->xg) {
        poll_tick_xg(d);
        return;
    }
    uint32_t *note = NULL;
    struct prun *runs = NULL;
    struct dsm_buf bytes = { 0 };
    size_t n, nr = 0, cap = 0;
    cvia_req_t *reqs = NULL;

    cvia_spin_lock(d->lk);
    for (uint32_t i = 0; i < d->nrenote; i++) {   /* dsm_fault's late notes */
        struct dsm_unit *x = &d->u[d->renote[i]];
        if (x->state == U_CLEAN && x->noted) {
            x->state = U_INVALID;
            x->used = 0;
            dsm_unit_prot(d, d->renote[i], P_NONE);
            ADD(invalidations, 1);
        }
    }
    d->nrenote = 0;
    cvia_spin_unlock(d->lk);
    atomic_store(&d->pflush, 1);
    if (atomic_load(&d->in_release) || atomic_load(&d->in_fin)) {
        /* the application ends the interval itself; or it is leaving */
        atomic_store(&d->pflush, 0);
        return;
    }
    cvia_spin_lock(d->lk);
    n = d->npollw;
    if (!n || d->scratch) {
        cvia_spin_unlock(d->lk);
        atomic_store(&d->pflush, 0);
        return;
    }
    if (!(note = malloc(n * 2 * sizeof(*note))))
        dsm_fatal(-ENOMEM, "out of memory");
    poll_collect(d, note, n, &runs, &nr, &cap, &bytes);
    d->npollw = 0;
    cvia_spin_unlock(d->lk);

    if (nr && !(reqs = calloc(nr, sizeof(*reqs))))
        dsm_fatal(-ENOMEM, "out of memory");
    write_runs(d, runs, nr, &bytes, reqs);
    free(reqs);
    atomic_store(&d->pflush, 0);
    /* every write listed is at its home now: tell the readers */
    for (int r = 0; r < d->size; r++) {
        struct dsm_hdr h = { .type = M_POLLNOTE, .a = (uint32_t)n };
        if (r != d->rank)
            dsm_send(d, r, &h, note, n * 2 * sizeof(*note));
    }
    free(note);
    free(runs);
    dsm_buf_free(&bytes);
}

/* A unit this rank writes too (not released yet) was written elsewhere:
 * its copy cannot simply be dropped. Unless the application is ending the
 * interval (then dsm_end_interval drops it, seeing noted), the unit is
 * made inaccessible and queued; drop_dirty() then writes our changes home
 * (as a poll tick does) and leaves the unit invalid: the next access
 * fetches the home's copy, which has both. Under lock. */
static int stale_dirty(struct dsm *d, uint32_t u)
{
    uint32_t *q;

    if (d->nstale == d->stale_cap) {
        size_t cap = d->stale_cap ? 2 * d->stale_cap : 16;
        if (!(q = realloc(d->stale, cap * sizeof(*q))))
            return 0;
        d->stale = q;
        d->stale_cap = cap;
    }
    d->stale[d->nstale++] = u;
    return 1;
}

static void drop_dirty(struct dsm *d)
{
    struct prun *runs = NULL;
    struct dsm_buf bytes = { 0 };
    size_t nr = 0, cap = 0;
    cvia_req_t *reqs = NULL;

    if (!d->nstale)
        return;
    atomic_store(&d->pflush, 1);
    if (atomic_load(&d->in_release) || atomic_load(&d->in_fin)) {
        d->nstale = 0;    /* dsm_end_interval sees noted; or we are leaving */
        atomic_store(&d->pflush, 0);
        return;
    }
    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < d->nstale; i++) {
        uint32_t u = d->stale[i];
        struct dsm_unit *x = &d->u[u];
        if (x->state != U_DIRTY || x->home == d->rank)
            continue;
        dsm_unit_prot(d, u, P_NONE);
        collect_runs(d, u, x->home, &runs, &nr, &cap, &bytes);
        x->state = U_INVALID;
        x->used = 0;
        ADD(invalidations, 1);
    }
    d->nstale = 0;
    cvia_spin_unlock(d->lk);
    if (nr && !(reqs = calloc(nr, sizeof(*reqs))))
        dsm_fatal(-ENOMEM, "out of memory");
    write_runs(d, runs, nr, &bytes, reqs);
    atomic_store(&d->pflush, 0);
    free(reqs);
    free(runs);
    dsm_buf_free(&bytes);
}

void dsm_on_pollnote(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    if (len != (size_t)h->a * 8)
        dsm_fatal(-CVIA_EPROTO, "a malformed poll note from rank %d", h->src);
    cvia_spin_lock(d->lk);
    for (uint32_t i = 0; i < h->a; i++) {
        uint32_t v[2];
        struct dsm_unit *x;
        memcpy(v, p + 8 * (size_t)i, 8);
        if (v[0] >= d->nunits) {
            cvia_spin_unlock(d->lk);
            dsm_fatal(-CVIA_EPROTO, "a poll note from rank %d names unit %u", h->src, v[0]);
        }
        x = &d->u[v[0]];
        if (dsm_ghome(d, x->home) || x->home < 0)
            continue;
        if (d->xg) {
            /* the host's copy: dropped for every member (each member's
             * own access is dropped by its own copy of the note); a copy
             * the host writes is merged by the service thread */
            if (x->pf == PF_FLIGHT)
                x->pf = PF_STALE;
            if (x->state == U_DIRTY) {
                u32_push(&d->mq, &d->nmq, &d->mq_cap, v[0]);
                continue;
            }
            if (x->state == U_CLEAN) {
                x->state = U_INVALID;
                x->used = 0;
                ADD(invalidations, 1);
            }
            dsm_unit_prot(d, v[0], P_NONE);
            continue;
        }
        x->noted = 1;
        if (x->pf == PF_FLIGHT)
            x->pf = PF_STALE;
        /* every clean copy named is dropped: keeping those fetched after
         * a barrier that released the write (epoch > v[1]) was tried, and
         * one run in about forty of the two-host test then kept a stale
         * copy for 60 s; v[1] stays on the wire for such a filter */
        if (x->state == U_CLEAN) {
            x->state = U_INVALID;
            x->used = 0;
            dsm_unit_prot(d, v[0], P_NONE);
            ADD(invalidations, 1);
        } else if (x->state == U_DIRTY && !stale_dirty(d, v[0])) {
            cvia_spin_unlock(d->lk);
            dsm_fatal(-ENOMEM, "out of memory");
        }
    }
    cvia_spin_unlock(d->lk);
    drop_dirty(d);
}

/* ---- diffs: the home's side (service thread) --------------------------------------- */

void dsm_diff_apply(struct dsm *d, int src, uint64_t off, uint64_t len, uint64_t imm)
{
    const char *p = d->diffarea + off, *end = p + len;
    int b = (int)((imm >> 48) & 0xff), rc;
    cvia_req_t req = NULL;

    if (src < 0 || src >= d->size || b > 1 ||
        off != ((uint64_t)src * 2 + (uint64_t)b) * d->cfg.diff_buf || len > d->cfg.diff_buf)
        dsm_fatal(-CVIA_EPROTO, "a diff from rank %d does not fit its buffer", src);
    while (p < end) {
        uint32_t h[2];
        char *base;

        if (end - p < 8)
            goto bad;
        memcpy(h, p, 8);
        p += 8;
        if (h[0] >= d->nunits)
            goto bad;
        base = d->pview + (size_t)h[0] * d->unit;
        for (uint32_t r = 0; r < h[1]; r++) {
            uint32_t rh[2];
            if (end - p < 8)
                goto bad;
            memcpy(rh, p, 8);
            p += 8;
            if (rh[0] > d->unit || rh[1] > d->unit - rh[0] || (uint64_t)(end - p) < rh[1])
                goto bad;
            memcpy(base + rh[0], p, rh[1]);
            p += rh[1];
        }
        ADD(diffs_applied, 1);
    }
    d->ack_src[src * 2 + b] = imm & ((1ull << 48) - 1);
    rc = cvia_write(&d->ack_src[src * 2 + b], sizeof(uint64_t), &d->peer_flags[src],
                    ((uint64_t)d->rank * 2 + (uint64_t)b) * sizeof(uint64_t), CVIA_WRITE_IMM,
                    ((uint64_t)IMM_ACK << 56) | ((uint64_t)b << 48) | d->ack_src[src * 2 + b],
                    &req);
    if (rc)
        dsm_fatal(rc, "freeing rank %d's diff buffer: %s", src, cvia_strerror(rc));
    dsm_pending_add(d, req, NULL);
    ADD(rdma_writes, 1);
    ADD(rdma_bytes, sizeof(uint64_t));
    return;
bad:
    dsm_fatal(-CVIA_EPROTO, "a malformed diff from rank %d", src);
}
