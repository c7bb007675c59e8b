/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: the command line. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <corevia/corevia.h>
#include "util/param.h"
#include "bench.h"
#include "boot/boot_env.h"

#define BENCH_MAX_SIZE     (1ul << 30)
#define BENCH_MAX_SIZES    4096

/* Before cvia_init(): under a launcher (cvia-run, mpirun, srun), only
 * rank 0 speaks. */
int bench_rank0(void)
{
    return cvia__launch_env().rank <= 0;
}

void bench_usage_error(const char *fmt, ...)
{
    va_list ap;

    if (bench_rank0()) {
        fputs("cvia-bench: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (try --help)\n", stderr);
    }
    exit(2);
}

/* ---- options -------------------------------------------------------------- */

static size_t *bench_add_size(size_t *v, size_t *n, size_t s)
{
    if (*n >= BENCH_MAX_SIZES)
        bench_usage_error("--sizes: more than %d sizes", BENCH_MAX_SIZES);
    if (s > BENCH_MAX_SIZE)
        bench_usage_error("--sizes: %zu bytes is above the limit of 1 GiB", s);
    if (!(v = realloc(v, (*n + 1) * sizeof(*v)))) {
        fprintf(stderr, "cvia-bench: out of memory\n");
        exit(1);
    }
    v[(*n)++] = s;
    return v;
}

static size_t bench_size_arg(const char *item, const char *text, size_t len)
{
    char buf[64];
    size_t s;

    if (len == 0 || len >= sizeof(buf))
        bench_usage_error("--sizes: bad item '%s'", item);
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (cvia__parse_size(buf, &s))
        bench_usage_error("--sizes: '%s' is not a size", buf);
    return s;
}

static int bench_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* "0,8,4k,1-64k:x4" -> ascending sizes without repeats. */
static void bench_parse_sizes(const char *text, struct bench_opts *o)
{
    char *copy = strdup(text), *save = NULL, *item;
    size_t *v = NULL, n = 0, k = 0;

    if (!copy || !*text || text[strlen(text) - 1] == ',' || *text == ',' ||
        strstr(text, ",,"))
        bench_usage_error("--sizes: empty item in '%s'", text);
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(item, '-'), *colon = strchr(item, ':');
        size_t lo, hi, f = 2;

        if (!dash) {
            if (colon)
                bench_usage_error("--sizes: ':xF' needs a range in '%s'", item);
            v = bench_add_size(v, &n, bench_size_arg(item, item, strlen(item)));
            continue;
        }
        lo = bench_size_arg(item, item, (size_t)(dash - item));
        hi = bench_size_arg(item, dash + 1,
                            colon ? (size_t)(colon - dash - 1) : strlen(dash + 1));
        if (colon) {
            long l;
            const char *fs = colon + 1;
            if (*fs == 'x' || *fs == 'X' || *fs == '*')
                fs++;
            if (cvia__parse_long(fs, &l) || l < 2 || l > 1024)
                bench_usage_error("--sizes: bad factor in '%s' (want :x2 .. :x1024)", item);
            f = (size_t)l;
        }
        if (lo == 0 || hi < lo)
            bench_usage_error("--sizes: bad range '%s' (want 1 <= LO <= HI)", item);
        for (size_t s = lo; s <= hi; s *= f) {
            v = bench_add_size(v, &n, s);
            if (s > hi / f)
                break;
        }
    }
    free(copy);
    qsort(v, n, sizeof(*v), bench_cmp_size);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1])
            v[k++] = v[i];
    free(o->sizes);
    o->sizes = v;
    o->nsizes = k;
}

static long bench_long_arg(const char *opt, const char *text, long min, long max)
{
    long l;

    if (cvia__parse_long(text, &l) || l < min || l > max)
        bench_usage_error("%s: '%s' is not a number in %ld..%ld", opt, text, min, max);
    return l;
}

static void bench_add_kind(struct bench_opts *o, enum bench_kind k)
{
    for (int i = 0; i < o->nkinds; i++)
        if (o->order[i] == k)
            return;
    o->order[o->nkinds++] = k;
}

void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    enum { OPT_CSV = 256, OPT_JSON, OPT_PLACEMENT, OPT_PLAN, OPT_CPUS, OPT_BUFFERS,
           OPT_ARENA, OPT_THREAD };
    static const struct option lopts[] = {
        { "sizes",   required_argument, NULL, 's' },
        { "iters",   required_argument, NULL, 'i' },
        { "warmup",  required_argument, NULL, 'w' },
        { "window",  required_argument, NULL, 'W' },
        { "repeat",  required_argument, NULL, 'r' },
        { "check",   no_argument,       NULL, 'c' },
        { "csv",     no_argument,       NULL, OPT_CSV },
        { "json",    no_argument,       NULL, OPT_JSON },
        { "output",  required_argument, NULL, 'o' },
        { "plot",    required_argument, NULL, 'p' },
        { "bind",    required_argument, NULL, 'b' },
        { "quiet",   no_argument,       NULL, 'q' },
        { "placement", required_argument, NULL, OPT_PLACEMENT },
        { "plan",    no_argument,       NULL, OPT_PLAN },
        { "cpus",    required_argument, NULL, OPT_CPUS },
        { "buffers", required_argument, NULL, OPT_BUFFERS },
        { "arena",   no_argument,       NULL, OPT_ARENA },
        { "thread",  required_argument, NULL, OPT_THREAD },
        { "help",    no_argument,       NULL, 'h' },
        { "version", no_argument,       NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    int c;

    memset(o, 0, sizeof(*o));
    o->iters = o->warmup = -1;
    o->window = 64;
    o->repeat = 1;
    o->buffers = 1;
    o->placement = -1;
    o->bind = "core";
    o->thread = CVIA_THREAD_SINGLE;   /* one thread, as an MPI_Init benchmark */
    bench_parse_sizes("1-4m", o);

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:i:w:W:r:co:p:b:qhV", lopts, NULL)) != -1) {
        switch (c) {
        case 's': bench_parse_sizes(optarg, o); o->sizes_given = 1; break;
        case 'i': o->iters = bench_long_arg("--iters", optarg, 1, 100000000); break;
        case 'w': o->warmup = bench_long_arg("--warmup", optarg, 0, 100000000); break;
        case 'W': o->window = bench_long_arg("--window", optarg, 1, 1 << 20); break;
        case 'r':
            o->repeat = bench_long_arg("--repeat", optarg, 1, 10000);
            o->repeat_given = 1;
            break;
        case 'c': o->check = 1; break;
        case OPT_CSV:  o->csv = 1; break;
        case OPT_JSON: o->json = 1; break;
        case 'o': o->output = optarg; break;
        case 'p': o->plot = optarg; break;
        case 'b':
            if (strcmp(optarg, "core") && strcmp(optarg, "none"))
                bench_usage_error("--bind: '%s' is not core or none", optarg);
            o->bind = optarg;
            break;
        case 'q': o->quiet = 1; break;
        case OPT_PLACEMENT:
            if ((o->placement = bench_class_parse(optarg)) < 0)
                bench_usage_error("--placement: '%s' is not l2, l3, package, remote or any",
                                  optarg);
            break;
        case OPT_PLAN: o->plan = 1; break;
        case OPT_CPUS: o->cpus = optarg; break;
        case OPT_BUFFERS:
            if (!strcmp(optarg, "auto"))
                o->buffers = 0;
            else if (cvia__parse_long(optarg, &o->buffers) || o->buffers < 1 ||
                     o->buffers > 1 << 20)
                bench_usage_error("--buffers: '%s' is not auto nor a number in 1..%d",
                                  optarg, 1 << 20);
            break;
        case OPT_ARENA: o->arena = 1; break;
        case OPT_THREAD: {
            static const char *const names[] = { "single", "funneled", "serialized",
                                                 "multiple" };
            o->thread = -1;
            for (int i = 0; i < 4; i++)
                if (!strcmp(optarg, names[i]))
                    o->thread = i;
            if (o->thread < 0)
                bench_usage_error("--thread: '%s' is not single, funneled, serialized "
                                  "or multiple", optarg);
            break;
        }
        case 'h':
            if (bench_rank0())
                bench_help();
            exit(0);
        case 'V':
            if (bench_rank0())
                printf("cvia-bench (corevia) %s\n", cvia_version());
            exit(0);
        case ':':
            bench_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                bench_usage_error("unknown option '-%c'", optopt);
            bench_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->csv && o->json)
        bench_usage_error("--csv and --json exclude each other");
    if (o->output && !*o->output)
        bench_usage_error("--output: empty file name");
    if (o->plot && (!*o->plot || strchr(o->plot, '\n')))
        bench_usage_error("--plot: bad file name");
    if (o->output && !o->csv && !o->json) {
        size_t l = strlen(o->output);
        if (l >= 5 && !strcasecmp(o->output + l - 5, ".json"))
            o->json = 1;
        else
            o->csv = 1;
    }
    if (o->cpus && o->placement < 0 && !o->plan)
        bench_usage_error("--cpus: only with --placement or --plan");
    /* before any topology is read or rank started: a recorded machine's
     * CPUs are not this one's (mbw says the same for its pairings) */
    if (o->placement >= 0 && !o->plan && getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY"))
        bench_usage_error("--placement: CVIA_TOPOLOGY names a recorded machine (%s): its "
                          "placement can be printed (--plan), not run here",
                          getenv("CVIA_TOPOLOGY"));
    if (optind >= argc && !o->plan)
        bench_usage_error("no benchmark given (latency, bw, bibw, all, memcpy or crossover)");
    for (; optind < argc; optind++) {
        const char *b = argv[optind];
        if (!strcmp(b, "all")) {
            for (int k = 0; k < BENCH_MEMCPY; k++)
                bench_add_kind(o, (enum bench_kind)k);
            continue;
        }
        if (!strcmp(b, "crossover")) {
            o->crossover = 1;
            continue;
        }
        int k;
        for (k = 0; k < BENCH_NKINDS; k++)
            if (!strcmp(b, bench_kind_name[k]))
                break;
        if (k == BENCH_NKINDS)
            bench_usage_error("unknown benchmark '%s' (latency, bw, bibw, all, memcpy, "
                              "crossover)", b);
        bench_add_kind(o, (enum bench_kind)k);
    }
    if (o->crossover) {
        if (o->nkinds)
            bench_usage_error("crossover runs alone: it measures latency and bw itself");
        if (!o->sizes_given)
            bench_parse_sizes("1k-1m", o);
        if (!o->repeat_given)
            o->repeat = 5;
        if (o->nsizes > BENCH_MAX_XSIZES)
            bench_usage_error("crossover: at most %d sizes", BENCH_MAX_XSIZES);
    }
}
