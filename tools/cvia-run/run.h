/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run's private state and the functions its files share:
 *   cvia-run.c  options, setup, spawning, the ranks' lifecycle, the loop
 *   run_host.c  --hosts: network namespaces as hosts, placement, entering
 *   run_io.c    forwarding the ranks' output
 *   run_kv.c    the launcher's side of src/boot/boot_proto.h: connections,
 *               HELLO, the key-value store, fences
 * Single-threaded: everything runs from one poll() loop, so nothing here
 * is locked. */
#ifndef CVIA_RUN_H
#define CVIA_RUN_H

#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/un.h>

#include "boot/boot_proto.h"

#define RUN_NP_MAX     65536
#define RUN_HOSTS_MAX  256    /* one descriptor each, opened before the limit is raised */
#define RUN_HOST_NAME_MAX 255  /* a namespace name, or a path to one */
#define RUN_OUTBUF     16384   /* per stream: longer lines are cut */
#define RUN_TERM_WAIT  2.0     /* SIGTERM -> SIGKILL */
#define RUN_KILL_WAIT  3.0     /* SIGKILL -> give up waiting */
#define RUN_GRACE_DFLT 5.0
#define RUN_INBUF      65536   /* stdin is forwarded a chunk of this at a time */

enum { RUN_BIND_AUTO = -1, RUN_BIND_NONE, RUN_BIND_CORE };
enum { RUN_MAP_CYCLIC, RUN_MAP_BLOCK };
enum { RUN_RUNNING, RUN_GRACE, RUN_TERM, RUN_KILL };
enum { RUN_STDIN_NONE = -2, RUN_STDIN_ALL = -1 };   /* else: the one rank that gets it */

struct run_stream {             /* one output pipe of one rank */
    int    fd;                  /* read end; -1 once closed */
    int    to;                  /* 1 or 2 */
    int    bol;                 /* the next byte starts a line */
    size_t len;
    char  *buf;                 /* RUN_OUTBUF bytes, allocated on first use */
};

struct run_conn {
    struct run_conn *next;
    int    fd;                  /* -1 once closed; freed by run_conn_sweep() */
    int    rank;                /* -1 until HELLO */
    int    wdead;               /* sending failed: read only */
    size_t inlen, outlen, outcap;
    char  *out;
    char   in[CVIA_BOOT_LINE_MAX];
};

struct run_rank {
    pid_t  pid;                 /* 0: never started */
    int    alive;               /* not yet seen exiting */
    int    hello, fini, in_fence;
    int    host, local_rank;    /* where it runs (run.hosts[host]) */
    pid_t  lib_pid;             /* pid in HELLO (differs under a wrapper) */
    char   event[48];           /* EXIT/KILLED line sent about it, for late HELLOs */
    struct run_conn  *conn;
    struct run_stream out, err;
    int    in_fd;               /* write end of its stdin pipe; -1: none or closed */
    size_t in_off;              /* bytes of run.inbuf it has been given */
};

/* A "host": a network namespace. Without --hosts there is one, the
 * launcher's own (name NULL, fd -1), and nobody changes namespace. */
struct run_host {
    char  *name;                /* as given on the command line */
    int    fd;                  /* the namespace, O_CLOEXEC; -1: stay */
    int    nranks;              /* CVIA_LOCAL_SIZE of its ranks */
};

struct run_state {
    int     np, bind, prefix, map;
    int     stdin_to;           /* RUN_STDIN_NONE, RUN_STDIN_ALL or a rank */
    double  timeout, grace;
    char  **argv;
    const char *hosts_arg;      /* --hosts, until run_hosts_open() */
    struct run_host *hosts;
    int     nhosts, hosts_given;
    char    dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sockaddr_un addr;
    int     lfd, sfd, info;
    pid_t   self;
    char    jobid[17];
    struct rlimit nofile;       /* as inherited, restored in ranks */
    struct sigaction ttin;      /* SIGTTIN as inherited, restored in ranks */
    int    *cpus, ncpus;
    struct run_rank *ranks;
    int     nalive, nanon;
    struct run_conn *conns;
    int     phase, cause, status, out_dead[3];
    double  job_deadline, phase_deadline;
    int     fence_count;        /* ranks in the current fence; 0 after each FENCED */
    void   *kv;
    char   *inbuf;              /* the chunk of our stdin being handed out */
    size_t  inlen;
    int     in_eof;             /* stdin ended (or nobody is left to read it) */
};

extern struct run_state run;

/* cvia-run.c */
void run_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void run_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int  run_int_ok(const char *s, long min, long max, int *out);
void run_teardown(int cause);

/* run_host.c */
void run_hosts_open(void);          /* exits 2 (bad name) or 1 (no permission) */
void run_hosts_place(void);         /* fills ranks[].host/local_rank, hosts[].nranks */
int  run_hosts_max_size(void);      /* ranks on the fullest host */
void run_host_enter(int r);         /* in the child: join rank r's namespace */
const char *run_host_name(int r);   /* NULL without --hosts */
void run_hosts_close(void);

/* run_io.c */
void run_stream_read(int r, struct run_stream *s);
void run_stream_close(int r, struct run_stream *s);
void run_rank_drain(int r);
int  run_stdin_gets(int r);         /* does rank r's stdin come from ours? */
int  run_stdin_want(void);          /* poll our stdin for reading? */
void run_stdin_read(void);
void run_stdin_write(int r);
void run_stdin_close(int r);

/* run_kv.c */
void run_send(struct run_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void run_broadcast(int except, const char *line);
void run_conn_read(struct run_conn *c);
void run_conn_flush(struct run_conn *c);
void run_conn_close(struct run_conn *c);
void run_conn_sweep(void);
void run_accept(void);
void run_kv_destroy(void);

#endif
