/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-info: what corevia is built with and how it is configured: version,
 * providers and their state, every CVIA_* variable, the topology, and
 * clean-up of segments left by dead processes. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <hwloc.h>
#if CVIA_FEATURE_PMIX
#include <pmix.h>
#endif
#if defined(__has_include)
#if __has_include(<linux/userfaultfd.h>)
#include <linux/userfaultfd.h>
#define INFO_HAVE_UFFD 1
#endif
#endif

#include <corevia/corevia.h>
#include "boot/boot_env.h"
#include "prov/prov.h"
#include "topo/topo.h"
#include "util/log.h"
#include "util/param.h"
#include "util/json.h"
#include "info_mem.h"

#define OPT_JSON 1000
#define OPT_MAN  1001
#define OPT_CLEANUP 1002
#define OPT_TIERS 1003
#define OPT_KIND 1004
#define OPT_CPUS 1005
#define OPT_MEM 1006
#define OPT_PID 1007

static void info_usage(FILE *f)
{
    fprintf(f,
"Usage: cvia-info [OPTIONS]\n"
"Show corevia's version, providers, configuration variables and topology.\n"
"With no option, shows everything except the environment.\n"
"\n"
"  -V, -v, --version  version, and the features this build has (PMIx, hwloc,\n"
"                     numa, libfabric, userfaultfd: + or -, then one line each)\n"
"  -l, --providers    providers and their state\n"
"  -c, --config       every CVIA_* variable with its current value, as a\n"
"                     config file (NAME=value lines)\n"
"  -f, --full         with -c: a comment with description and syntax per variable\n"
"  -C, --comment-defaults  with -c: comment out variables still at their default\n"
"  -F, --filter TEXT  with -c: only variables whose name contains TEXT\n"
"  -t, --topology     topology summary from hwloc (CVIA_TOPOLOGY=FILE.xml to\n"
"                     read a recorded machine)\n"
"  -e, --env          CVIA_* variables set in the environment, flagging unknown ones\n"
"      --json         machine-readable output of everything (JSON)\n"
"      --man          the CVIA_* reference as a markdown man page (cvia-config.7)\n"
"      --cleanup      remove shared-memory segments left by dead processes\n"
"      --tiers        memory tiers: NUMA nodes ranked fastest first, each core's\n"
"                     node in every tier (CVIA_TOPOLOGY, CVIA_MEM_TIERS apply)\n"
"      --kind KIND    with --tiers: where memory of KIND goes (default, hbw,\n"
"                     hbw-preferred, ddr, node:N, near-nic:IFNAME); repeatable\n"
"      --cpus LIST    with --kind: for a process on these PUs (default: the\n"
"                     CPUs cvia-info may run on; required with CVIA_TOPOLOGY)\n"
"      --mem          per NUMA node: bytes corevia placed there (move_pages) and\n"
"                     the process's total (numa_maps, as numastat -p), node free\n"
"      --pid PID      with --mem: that process instead of cvia-info itself\n"
"  -h, --help         this help\n");
}

static void info_fail_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "cvia-info: %s%s%s (try --help)\n", msg, arg ? " " : "", arg ? arg : "");
    exit(2);
}

/* The layers above the core register their variables with libcorevia
 * when they are loaded; load them so that every variable of this
 * installation is listed. Where they lie: beside libcorevia.so.0 (the DSM),
 * in its libfabric/ directory (the provider, installed) or fabric/ (the
 * build tree), or in FI_PROVIDER_PATH. A layer that is not installed
 * simply has no variables to show. */
static void info_load_layers(void)
{
    char dir[4096], path[4200];
    Dl_info di;

    if (!dladdr((void *)cvia_version, &di) || !di.dli_fname)
        return;
    snprintf(dir, sizeof(dir), "%s", di.dli_fname);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(path, sizeof(path), "%s/libcorevia_dsm.so.0", dir);
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
        snprintf(path, sizeof(path), "%s/src/dsm/libcorevia_dsm.so.0", dir);
        dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    const char *fpp = getenv("FI_PROVIDER_PATH");
    char list[8400];
    snprintf(list, sizeof(list), "%s/libfabric:%s/fabric%s%s", dir, dir, fpp ? ":" : "",
             fpp ? fpp : "");
    for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, sizeof(path), "%s/libcorevia-fi.so", d);
        if (access(path, R_OK) == 0 && dlopen(path, RTLD_NOW | RTLD_LOCAL))
            break;
    }
}

/* The @i-th variable, or 0 past the last. A value in the environment that
 * does not parse is reported once, naming the variable, and sets *bad. */
static int info_var(int i, cvia_var_info_t *v, int *bad)
{
    if (cvia_var_info(i, v, sizeof(*v)))
        return 0;
    if (!v->valid && bad) {
        fprintf(stderr, "cvia-info: %s: invalid value '%s' (expected %s)\n", v->name,
                getenv(v->name), v->syntax);
        *bad = 1;
    }
    return 1;
}

static int info_config(int full, int comment_defaults, const char *filter)
{
    cvia_var_info_t v;
    int bad = 0;

    for (int i = 0; info_var(i, &v, &bad); i++) {
        if (filter && !strcasestr(v.name, filter))
            continue;
        if (full) {
            printf("#\n# %s\n#\n# syntax:  %s\n# default: %s\n#\n", v.desc, v.syntax,
                   v.dflt[0] ? v.dflt : "(empty)");
        }
        printf("%s%s=%s\n", comment_defaults && !strcmp(v.value, v.dflt) ? "# " : "", v.name,
               v.value);
        if (full)
            printf("\n");
    }
    return bad;
}

static void info_providers(struct jw *w)
{
    cvia_provider_info_t p;

    for (int i = 0; cvia_provider_info(i, &p, sizeof(p)) == 0; i++) {
        if (w) {
            jw_obj(w, NULL);
            jw_str(w, "name", p.name);
            jw_str(w, "description", p.desc);
            jw_str(w, "state", p.state);
            jw_end_obj(w);
        } else {
            printf("  %-6s %s\n         %s\n", p.name, p.desc, p.state);
        }
    }
}

static int info_topology(struct jw *w)
{
    hwloc_topology_t topo;
    struct cvia_topo_summary s;
    char source[256];
    int rc = cvia__topo_open(&topo, source, sizeof(source));

    if (rc) {
        if (w)
            jw_null(w, "topology");
        return rc;
    }
    cvia__topo_summarize(topo, &s);
    hwloc_topology_destroy(topo);
    if (w) {
        jw_obj(w, "topology");
        jw_str(w, "source", source);
        jw_int(w, "packages", s.packages);
        jw_int(w, "cores", s.cores);
        jw_int(w, "pus", s.pus);
        jw_int(w, "numa_nodes", s.numa_nodes);
        jw_int(w, "hbm_numa_nodes", s.numa_hbm);
        jw_int(w, "l2_caches", s.l2);
        jw_int(w, "l3_caches", s.l3);
        jw_int(w, "l2_bytes", (long long)s.l2_bytes);
        jw_int(w, "l3_bytes", (long long)s.l3_bytes);
        jw_int(w, "cores_per_l2", s.cores_per_l2);
        jw_int(w, "cores_per_l3", s.cores_per_l3);
        jw_int(w, "memory_bytes", (long long)s.total_memory);
        jw_int(w, "network_devices", s.nics);
        jw_end_obj(w);
        return 0;
    }
    printf("  source        %s\n", source);
    printf("  packages      %d\n  cores         %d\n  PUs           %d\n", s.packages,
           s.cores, s.pus);
    printf("  NUMA nodes    %d (%d high-bandwidth), %.1f GiB in all\n", s.numa_nodes,
           s.numa_hbm, (double)s.total_memory / (1 << 30));
    if (s.l2)
        printf("  L2 caches     %d x %llu KiB, %d core(s) each\n", s.l2,
               (unsigned long long)(s.l2_bytes >> 10), s.cores_per_l2);
    if (s.l3)
        printf("  L3 caches     %d x %llu KiB, %d core(s) each\n", s.l3,
               (unsigned long long)(s.l3_bytes >> 10), s.cores_per_l3);
    printf("  network devs  %d\n", s.nics);
    return 0;
}

static void info_env(void)
{
    extern char **environ;
    int any = 0;
    for (char **e = environ; *e; e++) {
        if (!strncmp(*e, "CVIA_", 5)) {
            printf("  %s\n", *e);
            any = 1;
        }
    }
    if (!any)
        printf("  (no CVIA_* variable is set)\n");
    /* warnings for unknown names go to stderr */
    cvia_var_check();
}

static void info_man(void)
{
    printf("%% cvia-config(7) corevia %s | corevia manual\n\n", cvia_version());
    printf("# NAME\n\ncvia-config - environment variables that configure corevia\n\n");
    printf("# DESCRIPTION\n\nEvery run-time setting of corevia is a `CVIA_*` environment "
           "variable, read once by `cvia_init()` (and by the tools). A value that does "
           "not parse makes `cvia_init()` fail with `CVIA_ECONFIG` and an error that "
           "names the variable; a `CVIA_*` name that corevia does not know gives one "
           "warning that suggests the nearest known name. `cvia-info -c` prints the "
           "values in force as a config file; `cvia-info -c -f` adds these "
           "descriptions.\n\nThis page is generated from the parameter tables in the "
           "source (`cvia-info --man`); do not edit it by hand.\n\n");
    printf("# SYNTAX OF VALUES\n\n"
           "size\n:   bytes, with an optional unit k, m, g, t (powers of 1024): `64k`, `4m`.\n\n"
           "time\n:   seconds, or with a unit ns, us, ms, s, m, h: `10us`, `20ms`, `2s`.\n\n"
           "boolean\n:   y, yes, on, true, 1 / n, no, off, false, 0.\n\n"
           "tri-state\n:   a boolean, or auto.\n\n");
    printf("# VARIABLES\n\n");
    {
        cvia_var_info_t v;
        const char *comp = "";

        for (int i = 0; info_var(i, &v, NULL); i++) {
            if (strcmp(comp, v.component))
                printf("## %s\n\n", v.component);
            comp = v.component;
            printf("`%s`=*%s* (default: `%s`)\n:   %s\n\n", v.name, v.syntax,
                   v.dflt_text[0] ? v.dflt_text : "unset", v.desc);
        }
    }
    printf("# SEE ALSO\n\ncvia-info(1), cvia-run(1), cvia-bench(1)\n");
}

/* --version: the one format of every tool, then what this build can do.
 * CVIA_FEATURE_* come from CMake (cvia-info's compile definitions). */
#ifndef CVIA_FEATURE_PMIX
#define CVIA_FEATURE_PMIX 0
#endif
#ifndef CVIA_FEATURE_FABRIC
#define CVIA_FEATURE_FABRIC 0
#endif
static void info_version(void)
{
    char pmix[96], hw[96], numa[160], uffd[160];
    int have_numa = 0, have_uffd = 0, nodes = 0;
    unsigned api = hwloc_get_api_version();
    hwloc_topology_t t;

#if CVIA_FEATURE_PMIX
    {
        const char *v = PMIx_Get_version();    /* "OpenPMIx 4.2.2 (PMIx Standard: ...)" */
        snprintf(pmix, sizeof(pmix), "%.*s: bootstrap under mpirun, prterun, srun --mpi=pmix",
                 (int)strcspn(v, "("), v);
        char *sp = strstr(pmix, " :");
        if (sp)
            memmove(sp, sp + 1, strlen(sp));
    }
#else
    snprintf(pmix, sizeof(pmix), "built without libpmix: only cvia-run starts jobs");
#endif
    snprintf(hw, sizeof(hw), "hwloc %u.%u.%u at run time, built with API %u.%u.%u",
             api >> 16, (api >> 8) & 0xff, api & 0xff, HWLOC_API_VERSION >> 16,
             (HWLOC_API_VERSION >> 8) & 0xff, HWLOC_API_VERSION & 0xff);
    if (hwloc_topology_init(&t) == 0) {
        if (hwloc_topology_load(t) == 0)
            nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
        hwloc_topology_destroy(t);
    }
#if defined(SYS_mbind) && defined(SYS_move_pages)
    have_numa = 1;
    snprintf(numa, sizeof(numa), "memory tiers and segment placement by mbind(2), "
             "accounting by move_pages(2); %d NUMA node(s) here", nodes);
#else
    snprintf(numa, sizeof(numa), "no mbind(2) on this architecture: placement is the kernel's");
#endif
#ifdef INFO_HAVE_UFFD
    {
        /* user-mode-only faults need no privilege; else the plain kind */
        long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
        int e = errno;
        if (fd < 0)
            fd = syscall(SYS_userfaultfd, O_CLOEXEC), e = errno;
        if (fd >= 0)
            close((int)fd);
        have_uffd = 1;
        snprintf(uffd, sizeof(uffd), "<linux/userfaultfd.h> (bench/dsm's fault-cost "
                 "comparison); kernel: %s%s", fd >= 0 ? "available" : "refused: ",
                 fd >= 0 ? "" : strerror(e));
    }
#else
    snprintf(uffd, sizeof(uffd), "no <linux/userfaultfd.h> at build time");
#endif
    printf("cvia-info (corevia) %s\n", cvia_version());
    printf("features: %cpmix %chwloc %cnuma %clibfabric %cuserfaultfd\n",
           CVIA_FEATURE_PMIX ? '+' : '-', '+', have_numa ? '+' : '-',
           CVIA_FEATURE_FABRIC ? '+' : '-', have_uffd ? '+' : '-');
    printf("  %-12s %-3s  %s\n", "pmix", CVIA_FEATURE_PMIX ? "yes" : "no", pmix);
    printf("  %-12s %-3s  %s\n", "hwloc", "yes", hw);
    printf("  %-12s %-3s  %s\n", "numa", have_numa ? "yes" : "no", numa);
    printf("  %-12s %-3s  %s\n", "libfabric", CVIA_FEATURE_FABRIC ? "yes" : "no",
           CVIA_FEATURE_FABRIC ? "the libfabric provider libcorevia-fi.so (FI_PROVIDER=corevia)" :
           "built without libfabric-dev: no libfabric provider");
    printf("  %-12s %-3s  %s\n", "userfaultfd", have_uffd ? "yes" : "no", uffd);
}

/* Which launcher this process is a rank of (-e and the full report). */
static void info_launcher(void)
{
    struct cvia_launch_env le = cvia__launch_env();
    static const char *const name[] = { "none (a job of one; tools start their own jobs)",
                                        "cvia-run", "a PMIx launcher (mpirun, prterun, srun --mpi=pmix)" };

    printf("launcher: %s", name[le.kind]);
    if (le.kind != CVIA_LAUNCHER_NONE)
        printf(", from %s; rank %d of %d (-1: known after cvia_init)", le.var, le.rank, le.size);
    printf("\n");
}

static int info_json(void)
{
    cvia_var_info_t v;
    int bad = 0;
    struct jw w;

    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "version", cvia_version());
    jw_arr(&w, "providers");
    info_providers(&w);
    jw_end_arr(&w);
    jw_arr(&w, "variables");
    for (int i = 0; info_var(i, &v, &bad); i++) {
        jw_obj(&w, NULL);
        jw_str(&w, "name", v.name);
        jw_str(&w, "component", v.component);
        jw_str(&w, "value", v.value);
        jw_str(&w, "default", v.dflt);
        jw_str(&w, "syntax", v.syntax);
        jw_str(&w, "description", v.desc);
        jw_end_obj(&w);
    }
    jw_end_arr(&w);
    info_topology(&w);
    jw_end_obj(&w);
    return bad;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "version", no_argument, NULL, 'v' },
        { "providers", no_argument, NULL, 'l' },
        { "config", no_argument, NULL, 'c' },
        { "full", no_argument, NULL, 'f' },
        { "comment-defaults", no_argument, NULL, 'C' },
        { "filter", required_argument, NULL, 'F' },
        { "topology", no_argument, NULL, 't' },
        { "env", no_argument, NULL, 'e' },
        { "json", no_argument, NULL, OPT_JSON },
        { "man", no_argument, NULL, OPT_MAN },
        { "cleanup", no_argument, NULL, OPT_CLEANUP },
        { "tiers", no_argument, NULL, OPT_TIERS },
        { "kind", required_argument, NULL, OPT_KIND },
        { "cpus", required_argument, NULL, OPT_CPUS },
        { "mem", no_argument, NULL, OPT_MEM },
        { "pid", required_argument, NULL, OPT_PID },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int version = 0, prov = 0, config = 0, full = 0, cdef = 0, topo = 0, env = 0;
    int json = 0, man = 0, cleanup = 0, any, c, rc = 0;
    int tiers = 0, mem = 0, nkinds = 0;
    char *kinds[INFO_MAX_KINDS];
    const char *cpus = NULL;
    long pid = 0;
    const char *filter = NULL;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "vVlcfCF:teh", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
        case 'V': version = 1; break;
        case 'l': prov = 1; break;
        case 'c': config = 1; break;
        case 'f': full = 1; break;
        case 'C': cdef = 1; break;
        case 'F': filter = optarg; break;
        case 't': topo = 1; break;
        case 'e': env = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_MAN: man = 1; break;
        case OPT_CLEANUP: cleanup = 1; break;
        case OPT_TIERS: tiers = 1; break;
        case OPT_KIND:
            if (nkinds == INFO_MAX_KINDS)
                info_fail_usage("too many --kind options", NULL);
            kinds[nkinds++] = optarg;
            break;
        case OPT_CPUS: cpus = optarg; break;
        case OPT_MEM: mem = 1; break;
        case OPT_PID:
            if (cvia__parse_long(optarg, &pid) || pid <= 0 || pid > 0x3fffffff)
                info_fail_usage("--pid: not a process id:", optarg);
            break;
        case 'h': info_usage(stdout); return 0;
        case '?':
            if (optopt == 'F')
                info_fail_usage("option requires an argument:", "-F");
            if (optopt >= OPT_KIND && optopt <= OPT_PID)
                info_fail_usage("option requires an argument:", argv[optind - 1]);
            if (optopt) {
                char opt[3] = { '-', (char)optopt, '\0' };
                info_fail_usage("unknown option", opt);
            }
            info_fail_usage("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        info_fail_usage("unexpected argument", argv[optind]);
    if ((full || cdef || filter) && !config)
        config = 1;
    {
        /* honour CVIA_LOG for the tool's own diagnostics */
        const char *l = getenv("CVIA_LOG");
        if (l && cvia__log_set_level(l) < 0) {
            fprintf(stderr, "cvia-info: CVIA_LOG: invalid value '%s' (expected "
                    "error|warn|info|debug|trace)\n", l);
            rc = 1;
        }
    }
    info_load_layers();
    if (json)
        return info_json() ? 1 : rc;
    if (man) {
        info_man();
        return rc;
    }
    if (tiers || nkinds || mem) {
        if ((nkinds || cpus) && !tiers)
            tiers = 1;
        if (pid && !mem)
            info_fail_usage("--pid needs --mem", NULL);
        /* this process's CPUs are this machine's, not the recording's */
        if (nkinds && !cpus && getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY"))
            info_fail_usage("--kind on a recorded machine (CVIA_TOPOLOGY): say for which "
                            "of its CPUs with --cpus", NULL);
        if (tiers && (c = info_tiers(cpus, kinds, nkinds)))
            rc = c;
        if (mem && info_mem((pid_t)pid))
            rc = 1;
        return rc;
    }
    if (cleanup) {
        cvia_provider_info_t p;
        for (int i = 0; cvia_provider_info(i, &p, sizeof(p)) == 0; i++) {
            int n = cvia_provider_cleanup(i);
            if (n < 0) {
                fprintf(stderr, "cvia-info: cleanup of %s failed: %s\n", p.name,
                        cvia_strerror(n));
                rc = 1;
            } else {
                printf("%s: removed %d stale resource(s)\n", p.name, n);
            }
        }
        return rc;
    }
    any = version || prov || config || topo || env;
    if (version)
        info_version();
    if (!any)
        printf("# cvia-info (corevia) %s\n", cvia_version());
    if (prov || !any) {
        if (!any)
            printf("\n# providers\n");
        info_providers(NULL);
    }
    if (config || !any) {
        if (!any)
            printf("\n# configuration (cvia-info -c -f describes each variable)\n");
        if (info_config(full, cdef, filter))
            rc = 1;
    }
    if (topo || !any) {
        if (!any)
            printf("\n# topology\n");
        if (info_topology(NULL))
            rc = 1;
    }
    if (env) {
        printf("# environment\n");
        info_launcher();
        info_env();
    }
    return rc;
}
