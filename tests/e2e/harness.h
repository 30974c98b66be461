/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * End-to-end test helpers: start loomd ($LOOMD) in a private temporary
 * directory, talk to its admin socket, and play fake agents on its Unix
 * socket with the raw protocol (proto/wire.h). Everything is bounded in
 * time; the directory is removed and loomd killed at the end.
 *
 * Every daemon a test spawns is stopped through h_check_exit() (loomd:
 * h_loomd_stop_clean()): it must have exited with the expected status and
 * left no sanitizer report in the file its stderr went to.
 *
 * Built once (harness.c, with netns.c) into the static library every e2e
 * test links (tests/e2e/meson.build).
 */
#ifndef LOOM_TESTS_E2E_HARNESS_H
#define LOOM_TESTS_E2E_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/wire.h"

/* The bound on every single exchange with loomd (admin call, hello, sync). */
#define H_TIMEOUT_MS 5000

/* A loomd of the test's own: its private directory, the paths in it, its pid (0: none). */
struct h_loomd {
	char dir[256];
	char sock[300], admin[300], journal[300], log[300];
	pid_t pid;
};

/* The monotonic clock in milliseconds (deadlines). */
uint64_t h_mono_ms(void);

/* Sleeps ms milliseconds. */
void h_sleep_ms(unsigned ms);

/* Prints the last 16 KiB of the file at path to stderr, under a header naming it. */
void h_print_log(const char *path);

/*
 * Whether the file at path (a spawned program's stderr) holds a sanitizer
 * report: AddressSanitizer, LeakSanitizer, ThreadSanitizer, or UBSan's
 * "runtime error:" (which does not change the exit status). The first such
 * line is printed. A file that cannot be read counts as a report: the check
 * must not pass because it saw nothing.
 */
bool h_log_has_sanitizer_report(const char *path);

/*
 * Checks how a process the test spawned ended. status is its wait status
 * (-1: it did not end in time and was killed); it must have exited with
 * want. log, unless NULL, is the file its stderr went to: it must hold no
 * sanitizer report. 0, or -1 after printing what was wrong and the log's tail.
 */
int h_check_exit(const char *what, int status, int want, const char *log);

/* Whether this process may run on CPUs 0..n-1 (e.g. a DPDK EAL given "-l 0-1"). */
bool h_cpus_usable(int n);

/* Makes the private directory and the paths; no process yet. 0 or -errno. */
int h_loomd_prepare(struct h_loomd *h);

/*
 * Starts loomd with the harness's sockets and journal plus the NULL-ended
 * extra "-o" settings, and waits (bounded) until its admin socket answers.
 * loomd dies with the test process. 0, or -errno (then the log is printed).
 */
int h_loomd_start(struct h_loomd *h, const char *const *extra);

/* Waits (bounded) for pid; its wait status, or -1 after killing it with SIGKILL. */
int h_wait(pid_t pid, uint64_t deadline_ms);

/*
 * Stops loomd with sig (SIGTERM: waits up to 10 s, then SIGKILL). Returns its
 * wait status, or -1 when it was not running or had to be killed.
 */
int h_loomd_stop(struct h_loomd *h, int sig);

/*
 * Stops loomd with SIGTERM and checks its end: exited 0, no sanitizer report
 * in its log (every run of it in this directory). 0, or -1 after saying why.
 */
int h_loomd_stop_clean(struct h_loomd *h);

/* Stops loomd if running and removes the directory. */
void h_loomd_cleanup(struct h_loomd *h);

/*
 * The TCP port of loomd's /metrics, from the "metrics on http://HOST:PORT/"
 * line it logs at start (loomd started with metrics=HOST:0 picks a free one);
 * -1 when the log has no such line.
 */
int h_loomd_metrics_port(const struct h_loomd *h);

/*
 * GET path from 127.0.0.1:port over HTTP/1.0, bounded by H_TIMEOUT_MS. The
 * body goes into body (NUL-terminated; at most size - 1 bytes, the rest of a
 * longer one is dropped). Returns the HTTP status code, or -1 (nothing
 * answered in time, or not HTTP) after saying why.
 */
int h_http_get(uint16_t port, const char *path, char *body, size_t size);

/* Admin call; returns the result (caller decrefs) or NULL, printing the error. */
json_t *h_admin(struct h_loomd *h, const char *cmd, int argc, const char *const *argv);

/* Admin call that must succeed; the integer member key of its result object (-1: no result). */
long long h_admin_int(struct h_loomd *h, const char *cmd, const char *key);

/* A Unix stream connection to path; fd or -errno. */
int h_connect(const char *path);

/*
 * Sends env and waits for the envelope with the same seq (other envelopes are
 * dropped); the reply (caller wire_free()s it), or NULL.
 */
Loom__Envelope *h_call(int fd, Loom__Envelope *env);

/* Hello as role; returns the reply's error code (0 OK) or -1 when no reply came. */
int h_hello(int fd, Loom__Role role, uint32_t host, uint32_t vmin, uint32_t vmax);

/* ---- a fake agent that keeps the table loomd sends it ---------------------------------------- */

#define H_MAX_ENTRIES 4096

/*
 * The table as the agent holds it after applying every table message
 * (full or delta) that h_agent_sync() read: flows with their coflow, coflows
 * with their class. tables, fulls and gaps count the messages, the full ones
 * and the deltas whose base was not the version held.
 */
struct h_agent {
	int fd;
	uint32_t host;
	uint64_t version;
	uint32_t nflows, ncoflows;
	struct wire_tuple flow_tuple[H_MAX_ENTRIES];
	uint64_t flow_coflow[H_MAX_ENTRIES];
	uint64_t coflow_id[H_MAX_ENTRIES];
	uint32_t coflow_class[H_MAX_ENTRIES];
	uint64_t seq;
	uint32_t tables, fulls, gaps;
};

/* The class the agent holds for coflow id, or -1 when it holds none. */
int h_agent_coflow_class(const struct h_agent *a, uint64_t id);

/* Connects and says hello as host's agent; 0 or -1. */
int h_agent_connect(struct h_agent *a, const char *sock, uint32_t host);

/*
 * Sends a heartbeat and reads until its echo, applying every table before
 * it: afterwards the agent has seen everything loomd sent it so far, and
 * loomd has processed everything the agent sent. 0 or -1.
 */
int h_agent_sync(struct h_agent *a);

/* A synthetic, unique TCP tuple for flow number i (10.x.y.z addresses). */
void h_tuple(uint32_t i, struct wire_tuple *t);

/* Sends one FlowStats (no reply). 0 or -1. */
int h_agent_stats(struct h_agent *a, const struct wire_tuple *t, uint64_t bytes, bool done);

#endif
