/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A driver for a libFuzzer harness where libFuzzer cannot be linked: the
 * sanitizer builds (gcc's AddressSanitizer and ThreadSanitizer runtimes do
 * not mix with clang's fuzzer runtime). It runs the harness over every
 * file of the given directories, then over mutations of them drawn from a
 * fixed seed (byte flips, overwrites, truncations, splices), so each run
 * replays the same inputs. No coverage guidance: this checks the corpus
 * under the sanitizer, it does not explore.
 *   fuzz_replay [-runs=N] [-seed=S] DIR...
 * A failing input is written to fuzz-replay-crash (in the working
 * directory) before the harness runs it, so the last one written is the
 * culprit when the harness aborts. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct input {
    uint8_t *d;
    size_t n;
};

static struct input *inputs;
static size_t ninputs, cap_inputs;

static uint64_t rng_state;

static uint64_t rng(void)
{   /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void add_input(uint8_t *d, size_t n)
{
    if (ninputs == cap_inputs) {
        size_t c = cap_inputs ? 2 * cap_inputs : 64;
        struct input *p = realloc(inputs, c * sizeof(*p));
        if (!p) {
            fprintf(stderr, "fuzz_replay: out of memory\n");
            exit(1);
        }
        inputs = p;
        cap_inputs = c;
    }
    inputs[ninputs].d = d;
    inputs[ninputs].n = n;
    ninputs++;
}

static int load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *d = NULL;
    size_t n = 0, cap = 0, k;

    if (!f)
        return -errno;
    do {
        if (n == cap) {
            uint8_t *p = realloc(d, cap = cap ? 2 * cap : 4096);
            if (!p) {
                free(d);
                fclose(f);
                return -ENOMEM;
            }
            d = p;
        }
        k = fread(d + n, 1, cap - n, f);
        n += k;
    } while (k);
    fclose(f);
    add_input(d, n);
    return 0;
}

static int load_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[4096];
    int rc;

    if (!dp) {
        fprintf(stderr, "fuzz_replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if ((rc = load_file(path)) < 0) {
            fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(-rc));
            closedir(dp);
            return -1;
        }
    }
    closedir(dp);
    return 0;
}

static void run_one(const uint8_t *d, size_t n)
{
    FILE *f = fopen("fuzz-replay-crash", "wb");

    if (f) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
    LLVMFuzzerTestOneInput(d, n);
}

/* One mutation of a corpus input into @out (capacity @cap). */
static size_t mutate(uint8_t *out, size_t cap)
{
    const struct input *a = &inputs[rng() % ninputs];
    size_t n = a->n < cap ? a->n : cap;
    unsigned k, nmut = 1 + (unsigned)(rng() % 4);

    memcpy(out, a->d, n);
    for (k = 0; k < nmut && n; k++) {
        size_t at = (size_t)(rng() % n);
        switch (rng() % 5) {
        case 0:   /* flip a bit */
            out[at] ^= (uint8_t)(1u << (rng() % 8));
            break;
        case 1:   /* overwrite a byte */
            out[at] = (uint8_t)rng();
            break;
        case 2:   /* a boundary value */
            out[at] = (uint8_t[]){ 0, 1, 0x7f, 0x80, 0xff }[rng() % 5];
            break;
        case 3:   /* truncate */
            n = at + 1;
            break;
        default: {   /* splice the tail of another input */
            const struct input *b = &inputs[rng() % ninputs];
            size_t from = b->n ? (size_t)(rng() % b->n) : 0;
            size_t m = b->n - from;
            if (m > cap - at)
                m = cap - at;
            memcpy(out + at, b->d + from, m);
            n = at + m;
            break;
        }
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    unsigned long runs = 2000;
    unsigned long long seed = 1;
    static uint8_t buf[1 << 16];
    int ndirs = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        char *end;
        if (!strncmp(argv[i], "-runs=", 6)) {
            errno = 0;
            runs = strtoul(argv[i] + 6, &end, 10);
            if (errno || *end || end == argv[i] + 6) {
                fprintf(stderr, "fuzz_replay: bad -runs: %s\n", argv[i] + 6);
                return 2;
            }
        } else if (!strncmp(argv[i], "-seed=", 6)) {
            errno = 0;
            seed = strtoull(argv[i] + 6, &end, 10);
            if (errno || *end || end == argv[i] + 6) {
                fprintf(stderr, "fuzz_replay: bad -seed: %s\n", argv[i] + 6);
                return 2;
            }
        } else if (argv[i][0] == '-') {
            continue;   /* a libFuzzer option this driver has no use for */
        } else {
            if (load_dir(argv[i]))
                return 2;
            ndirs++;
        }
    }
    if (!ndirs || !ninputs) {
        fprintf(stderr, "fuzz_replay: no inputs (give corpus directories)\n");
        return 2;
    }
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < ninputs; i++)
        run_one(inputs[i].d, inputs[i].n);
    for (unsigned long r = 0; r < runs; r++) {
        size_t n = mutate(buf, sizeof(buf));
        run_one(buf, n);
    }
    remove("fuzz-replay-crash");
    printf("fuzz_replay: %zu corpus inputs and %lu mutations (seed %llu): no failure\n",
           ninputs, runs, seed);
    for (size_t i = 0; i < ninputs; i++)
        free(inputs[i].d);
    free(inputs);
    return 0;
}
