/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-bench-loomd: the live controller (loomd) under load, driven over its
 * own protocol (proto/wire.h) the way frameworks and agents drive it.
 *
 *   ready     waits until loomd's admin socket answers
 *   announce  N framework connections (threads), each with its own job of
 *             open coflows, announce flows in batches of B for a fixed
 *             time, each request waiting for its reply (blocking, like
 *             libloom): flows/s, requests/s, reply latency
 *   agents    M fake agents on one epoll loop take their tables and ack
 *             every version; a framework registers coflows one at a time and
 *             the time from sending RegisterJob to the last source host's
 *             agent holding a table with the coflow's class is measured
 *   rss       loomd's resident memory idle, with M agents, and with F flows
 *
 * loomd is started and stopped by bench/loomd.sh, not here. Progress goes to
 * stderr, a result table to stdout, and with --csv one row per figure
 * (bench,config,metric,value,unit) is appended to a file. Every wait is
 * bounded; a failure says what failed and the subcommand exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/admin.h"
#include "common/clock.h"
#include "common/rng.h"
#include "proto/wire.h"

#define CALL_TIMEOUT_MS  5000
#define ADMIN_TIMEOUT_MS 5000
#define MAX_FRAME        WIRE_MAX_FRAME_DEFAULT

/* ---- options ---------------------------------------------------------------------------------- */

struct opts {
	const char *sock, *admin, *csv, *label;
	pid_t pid;      /* loomd's, for its CPU time and peak RSS; 0 = unknown */
	uint32_t hosts; /* loomd's fabric size (its 'hosts' setting) */
	uint64_t seed;
	uint64_t id_base; /* first job/coflow id this run uses */
	int timeout_ms;   /* ready: how long to wait; agents: per-coflow deadline */
	/* announce */
	uint32_t conns, batch, coflows_per_job;
	uint64_t rotate; /* flows per job before it is replaced; 0 = one job per connection */
	double seconds;
	/* agents, rss */
	uint32_t agents, ncoflows, interval_min_ms, interval_max_ms, src_min, src_max, window;
	uint32_t flows, flows_per_coflow;
};

static void opts_default(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->label = "";
	o->hosts = 150;
	o->seed = 1;
	o->id_base = 1000000;
	o->timeout_ms = 0;
	o->conns = 8;
	o->batch = 1;
	o->coflows_per_job = 4;
	o->seconds = 5;
	o->agents = 1000;
	o->ncoflows = 300;
	o->interval_min_ms = 10;
	o->interval_max_ms = 20;
	o->src_min = 4;
	o->src_max = 16;
	o->window = 50;
	o->flows = 10000;
	o->flows_per_coflow = 100;
}

/* ---- small helpers ---------------------------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A growable array of nanosecond samples. */
struct samples {
	uint64_t *v;
	size_t n, cap;
};

static int samples_add(struct samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void samples_sort(struct samples *s)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
}

/* Nearest-rank q-quantile of sorted samples (0 when empty). */
static uint64_t samples_q(const struct samples *s, double q)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)(q * (double)s->n + 0.999999);
	if (i > 0)
		i--;
	return s->v[i < s->n ? i : s->n - 1];
}

static void samples_done(struct samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* One figure as a CSV row (bench,config,metric,value,unit) appended to o->csv. */
static void csv_row(const struct opts *o, const char *bench, const char *metric, double value,
		    const char *unit)
{
	FILE *f;

	if (!o->csv)
		return;
	f = fopen(o->csv, "a");
	if (!f) {
		fprintf(stderr, "loom-bench-loomd: %s: %s\n", o->csv, strerror(errno));
		return;
	}
	fprintf(f, "%s,%s,%s,%.10g,%s\n", bench, o->label, metric, value, unit);
	fclose(f);
}

/* loomd's admin "stats" (caller decrefs) or NULL, saying why on stderr. */
static json_t *admin_stats(const struct opts *o)
{
	json_t *res = NULL;
	struct loom_err err;

	if (!o->admin) {
		fprintf(stderr, "admin stats: no --admin socket given\n");
		return NULL;
	}
	if (loom_admin_call(o->admin, "stats", 0, NULL, ADMIN_TIMEOUT_MS, &res, &err) < 0) {
		fprintf(stderr, "admin stats on %s: %s\n", o->admin, loom_err_str(&err));
		return NULL;
	}
	return res;
}

static double jnum(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return v && json_is_number(v) ? json_number_value(v) : -1;
}

/* One number of loomd's stats, or -1 (said on stderr). */
static double stat_num(const struct opts *o, const char *key)
{
	json_t *st = admin_stats(o);
	double v = st ? jnum(st, key) : -1;

	json_decref(st);
	return v;
}

/* CPU seconds (user + system) pid has used, or -1. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, stt = 0;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
		return -1;
	return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* A "VmXXX:" line of /proc/pid/status in bytes, or 0. */
static uint64_t proc_status_bytes(pid_t pid, const char *key)
{
	char path[64], line[256];
	uint64_t v = 0;
	size_t klen = strlen(key);
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, 10) * 1024;
			break;
		}
	fclose(f);
	return v;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/*
 * A synthetic TCP tuple, unique for each (space, i) with space < 2^16 and
 * i < 2^40: 10.a.b.c:port -> 172.(space >> 8).(space & 255).1:5001. Runs
 * derive space from their ids (--id-base), so that runs against one loomd
 * never collide.
 */
static void bench_tuple(uint32_t space, uint64_t i, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->protocol = 6;
	t->src[0] = 10;
	t->src[1] = (uint8_t)(i >> 16);
	t->src[2] = (uint8_t)(i >> 8);
	t->src[3] = (uint8_t)i;
	t->src_port = (uint16_t)(1024 + (i >> 24));
	t->dst[0] = 172;
	t->dst[1] = (uint8_t)(space >> 8);
	t->dst[2] = (uint8_t)space;
	t->dst[3] = 1;
	t->dst_port = 5001;
}

/* ---- framework side: blocking requests -------------------------------------------------------- */

/*
 * A stream connection to loomd's Unix socket at path (common/addr.h), within
 * 30 s; fd or -errno with err. nonblock: a non-blocking socket, and a full
 * backlog is -EAGAIN at once, so that the caller serves its other
 * connections meanwhile.
 */
static int unix_connect(const char *path, bool nonblock, struct loom_err *err)
{
	struct loom_addr a;
	int r;

	r = loom_addr_unix("--socket", path, &a, err);
	if (r < 0)
		return r;
	return loom_addr_dial("connect", &a, loom_clock_mono_ns() + 30 * LOOM_NS_PER_S,
			      nonblock ? LOOM_ADDR_NONBLOCK | LOOM_ADDR_NOWAIT : 0, err);
}

/*
 * Sends env and waits (timeout_ms in all) for the envelope with its seq,
 * dropping others. Returns 0 with a Reply's accepted count in
 * *ret_accepted, the refusal as -errno with the controller's words in msg,
 * or the I/O failure as -errno (msg says so).
 */
static int fw_call(int fd, Loom__Envelope *env, int timeout_ms, uint32_t *ret_accepted, char *msg,
		   size_t msz)
{
	uint64_t deadline = loom_clock_mono_ns() + (uint64_t)timeout_ms * 1000000ULL;
	int r;

	r = wire_send(fd, env, MAX_FRAME, timeout_ms);
	if (r < 0) {
		snprintf(msg, msz, "sending %s: %s", wire_type_name(env->body_case), strerror(-r));
		return r;
	}
	for (;;) {
		Loom__Envelope *rep = NULL;
		uint64_t now = loom_clock_mono_ns();
		const Loom__Error *e = NULL;

		if (now >= deadline) {
			snprintf(msg, msz, "no reply to %s within %d ms",
				 wire_type_name(env->body_case), timeout_ms);
			return -ETIMEDOUT;
		}
		r = wire_recv(fd, MAX_FRAME, (int)((deadline - now) / 1000000ULL) + 1, &rep);
		if (r < 0) {
			snprintf(msg, msz, "waiting for the reply to %s: %s",
				 wire_type_name(env->body_case), strerror(-r));
			return r;
		}
		if (rep->seq != env->seq || (rep->body_case != LOOM__ENVELOPE__BODY_REPLY &&
					     rep->body_case != LOOM__ENVELOPE__BODY_HELLO_REPLY)) {
			wire_free(rep);
			continue;
		}
		if (rep->body_case == LOOM__ENVELOPE__BODY_REPLY) {
			e = rep->reply->error;
			if (ret_accepted)
				*ret_accepted = rep->reply->accepted;
		} else {
			e = rep->hello_reply->error;
		}
		r = e && e->code ? wire_error_to_errno(e->code) : 0;
		if (r < 0)
			snprintf(msg, msz, "%s refused: %s: %s", wire_type_name(env->body_case),
				 wire_error_name(e->code), e->message ? e->message : "");
		wire_free(rep);
		return r;
	}
}

/* A framework connection after Hello; fd or -errno with msg. */
static int fw_connect(const char *sock, const char *name, char *msg, size_t msz)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	struct loom_err err;
	int fd = unix_connect(sock, false, &err), r;

	if (fd < 0) {
		snprintf(msg, msz, "%.*s", (int)msz - 1, err.msg);
		return fd;
	}
	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__FRAMEWORK;
	h.name = (char *)name;
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	r = fw_call(fd, &env, CALL_TIMEOUT_MS, NULL, msg, msz);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* A flow for job_register(). */
struct flow_def {
	uint32_t src, dst;
	uint64_t bytes;
	struct wire_tuple tuple;
};

/*
 * Registers job_id with ncoflows coflows (ids coflow_ids[]), each with
 * flows_per_coflow flows from flows[] in order, or open (no flows) when
 * flows_per_coflow is 0. 0 or -errno with msg.
 */
static int job_register(int fd, uint64_t seq, uint64_t job_id, const uint64_t *coflow_ids,
			uint32_t ncoflows, const struct flow_def *flows, uint32_t flows_per_coflow,
			char *msg, size_t msz)
{
	size_t nf = (size_t)ncoflows * flows_per_coflow;
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec *cs = calloc(ncoflows + 1, sizeof(*cs));
	Loom__CoflowSpec **csp = calloc(ncoflows + 1, sizeof(*csp));
	Loom__FlowSpec *fs = calloc(nf + 1, sizeof(*fs));
	Loom__FlowSpec **fsp = calloc(nf + 1, sizeof(*fsp));
	Loom__FiveTuple *pt = calloc(nf + 1, sizeof(*pt));
	char name[40];
	int r = -ENOMEM;

	if (!cs || !csp || !fs || !fsp || !pt) {
		snprintf(msg, msz, "out of memory building job %llu", (unsigned long long)job_id);
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		loom__flow_spec__init(&fs[i]);
		wire_tuple_to_pb(&flows[i].tuple, &pt[i]);
		fs[i].src_host = flows[i].src;
		fs[i].dst_host = flows[i].dst;
		fs[i].bytes = flows[i].bytes;
		fs[i].tuple = &pt[i];
		fsp[i] = &fs[i];
	}
	for (uint32_t c = 0; c < ncoflows; c++) {
		loom__coflow_spec__init(&cs[c]);
		cs[c].id = coflow_ids[c];
		cs[c].n_flows = flows_per_coflow;
		cs[c].flows = flows_per_coflow ? &fsp[(size_t)c * flows_per_coflow] : NULL;
		csp[c] = &cs[c];
	}
	snprintf(name, sizeof(name), "bench-%llu", (unsigned long long)job_id);
	rj.job_id = job_id;
	rj.weight = 1;
	rj.name = name;
	rj.n_coflows = ncoflows;
	rj.coflows = csp;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	r = fw_call(fd, &env, CALL_TIMEOUT_MS, NULL, msg, msz);
out:
	free(cs);
	free(csp);
	free(fs);
	free(fsp);
	free(pt);
	return r;
}

static int job_unregister(int fd, uint64_t seq, uint64_t job_id, char *msg, size_t msz)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Unregister un = LOOM__UNREGISTER__INIT;

	un.job_id = job_id;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
	env.unregister = &un;
	return fw_call(fd, &env, CALL_TIMEOUT_MS, NULL, msg, msz);
}

/* ---- fake agents on one epoll loop ------------------------------------------------------------ */

/* One fake agent: its socket, partial frames both ways, and its table version. */
struct agent {
	int fd;
	uint32_t host;
	bool hello_ok, dead, want_out;
	uint8_t *in, *out;
	size_t in_len, in_cap, out_len, out_cap;
	uint64_t version, seq;
	uint32_t tables, fulls, gaps;
};

/* Called for every table an agent reads (after the version bookkeeping, before the ack). */
typedef void (*pool_table_fn)(void *ctx, struct agent *a, const Loom__PriorityTable *t,
			      uint64_t now_ns);

/* Every agent of a run, served by one thread on one epoll set. */
struct pool {
	int ep;
	struct agent *a;
	uint32_t n;
	uint32_t hellos, with_table, dead;
	uint64_t tables, acks, bytes_in, last_table_ns;
	pool_table_fn on_table;
	void *ctx;
	bool measure; /* record each table's delivery time (its sent_ns to its arrival) */
	struct samples delivery;
	char err[256]; /* the first failure */
};

/* Marks a dead (it is no longer served) and keeps the pool's first failure: what + detail. */
static void pool_fail(struct pool *p, struct agent *a, const char *what, const char *detail)
{
	if (!a->dead) {
		a->dead = true;
		p->dead++;
		if (a->fd >= 0)
			epoll_ctl(p->ep, EPOLL_CTL_DEL, a->fd, NULL);
	}
	if (!p->err[0])
		snprintf(p->err, sizeof(p->err), "agent of host %u: %s%s", a->host, what, detail);
}

static void agent_flush(struct pool *p, struct agent *a)
{
	while (a->out_len) {
		ssize_t w = send(a->fd, a->out, a->out_len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			pool_fail(p, a, "write: ", strerror(errno));
			return;
		}
		memmove(a->out, a->out + w, a->out_len - (size_t)w);
		a->out_len -= (size_t)w;
	}
	if ((a->out_len > 0) != a->want_out) {
		struct epoll_event ev = {.events = EPOLLIN | (a->out_len ? EPOLLOUT : 0),
					 .data.u32 = (uint32_t)(a - p->a)};

		a->want_out = a->out_len > 0;
		epoll_ctl(p->ep, EPOLL_CTL_MOD, a->fd, &ev);
	}
}

/* Frames env onto a's output and tries to send it. */
static void agent_queue(struct pool *p, struct agent *a, const Loom__Envelope *env)
{
	size_t n = loom__envelope__get_packed_size(env);
	uint8_t *q;

	if (a->out_len + n + WIRE_HDR_BYTES > a->out_cap) {
		size_t cap = (a->out_len + n + WIRE_HDR_BYTES) * 2 + 256;
		uint8_t *b = realloc(a->out, cap);

		if (!b) {
			pool_fail(p, a, "out of memory", "");
			return;
		}
		a->out = b;
		a->out_cap = cap;
	}
	q = a->out + a->out_len;
	q[0] = (uint8_t)(n >> 24);
	q[1] = (uint8_t)(n >> 16);
	q[2] = (uint8_t)(n >> 8);
	q[3] = (uint8_t)n;
	loom__envelope__pack(env, q + WIRE_HDR_BYTES);
	a->out_len += n + WIRE_HDR_BYTES;
	agent_flush(p, a);
}

static void agent_hello(struct pool *p, struct agent *a)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	char name[32];

	snprintf(name, sizeof(name), "bench-agent-%u", a->host);
	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__AGENT;
	h.name = name;
	h.host_id = a->host;
	h.classes = 8;
	h.enforcer = LOOM__ENFORCER__ENFORCER_NULL;
	env.seq = ++a->seq;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	agent_queue(p, a, &env);
}

static void agent_handle(struct pool *p, struct agent *a, const Loom__Envelope *env,
			 uint64_t now_ns)
{
	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_HELLO_REPLY: {
		const Loom__Error *e = env->hello_reply->error;

		if (e && e->code) {
			pool_fail(p, a, "hello refused: ", e->message ? e->message : "?");
			return;
		}
		if (!a->hello_ok) {
			a->hello_ok = true;
			p->hellos++;
		}
		return;
	}
	case LOOM__ENVELOPE__BODY_TABLE: {
		const Loom__PriorityTable *t = env->table;
		Loom__Envelope ack = LOOM__ENVELOPE__INIT;
		Loom__TableAck ta = LOOM__TABLE_ACK__INIT;

		if (!a->tables)
			p->with_table++;
		a->tables++;
		p->tables++;
		p->last_table_ns = now_ns;
		if (t->full)
			a->fulls++;
		else if (t->base_version != a->version)
			a->gaps++;
		a->version = t->version;
		if (p->measure) {
			struct timespec ts;
			uint64_t wall;

			/* sent_ns is loomd's wall clock; this machine's is the same clock */
			clock_gettime(CLOCK_REALTIME, &ts);
			wall = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
			samples_add(&p->delivery, wall > t->sent_ns ? wall - t->sent_ns : 0);
		}
		if (p->on_table)
			p->on_table(p->ctx, a, t, now_ns);
		ta.version = t->version;
		ack.seq = ++a->seq;
		ack.body_case = LOOM__ENVELOPE__BODY_TABLE_ACK;
		ack.table_ack = &ta;
		agent_queue(p, a, &ack);
		p->acks++;
		return;
	}
	case LOOM__ENVELOPE__BODY_REPLY:
		if (env->reply->error && env->reply->error->code)
			pool_fail(p, a, "loomd replied with an error: ",
				  env->reply->error->message ? env->reply->error->message : "?");
		return;
	default:
		return;
	}
}

static void agent_read(struct pool *p, struct agent *a)
{
	size_t off = 0;
	uint64_t now;

	for (;;) {
		ssize_t r;

		if (a->in_cap - a->in_len < 4096) {
			size_t cap = a->in_cap ? a->in_cap * 2 : 16384;
			uint8_t *b = realloc(a->in, cap);

			if (!b) {
				pool_fail(p, a, "out of memory", "");
				return;
			}
			a->in = b;
			a->in_cap = cap;
		}
		r = read(a->fd, a->in + a->in_len, a->in_cap - a->in_len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			pool_fail(p, a, "read: ", strerror(errno));
			return;
		}
		if (r == 0) {
			pool_fail(p, a, "loomd closed the connection", "");
			return;
		}
		a->in_len += (size_t)r;
		p->bytes_in += (uint64_t)r;
	}
	now = loom_clock_mono_ns();
	while (a->in_len - off >= WIRE_HDR_BYTES && !a->dead) {
		Loom__Envelope *env;
		uint32_t n;

		if (wire_hdr_parse(a->in + off, MAX_FRAME, &n) < 0) {
			pool_fail(p, a, "bad frame length from loomd", "");
			return;
		}
		if (a->in_len - off < WIRE_HDR_BYTES + (size_t)n)
			break;
		env = wire_decode(a->in + off + WIRE_HDR_BYTES, n);
		off += WIRE_HDR_BYTES + (size_t)n;
		if (!env) {
			pool_fail(p, a, "a frame that is not a loom.Envelope", "");
			return;
		}
		agent_handle(p, a, env, now);
		wire_free(env);
	}
	memmove(a->in, a->in + off, a->in_len - off);
	a->in_len -= off;
}

/* Handles what is ready within timeout_ms. Returns events handled, or -errno. */
static int pool_pump(struct pool *p, int timeout_ms)
{
	struct epoll_event ev[256];
	int n = epoll_wait(p->ep, ev, 256, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct agent *a = &p->a[ev[i].data.u32];

		if (a->dead)
			continue;
		if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			agent_read(p, a);
		if (!a->dead && (ev[i].events & EPOLLOUT))
			agent_flush(p, a);
	}
	return n;
}

static void pool_free(struct pool *p)
{
	for (uint32_t i = 0; p->a && i < p->n; i++) {
		if (p->a[i].fd >= 0)
			close(p->a[i].fd);
		free(p->a[i].in);
		free(p->a[i].out);
	}
	free(p->a);
	samples_done(&p->delivery);
	if (p->ep >= 0)
		close(p->ep);
	memset(p, 0, sizeof(*p));
	p->ep = -1;
}

/*
 * Connects n agents (hosts 0..n-1) to sock and sends their Hello, then
 * waits (timeout_ms in all) until each has its HelloReply and first table.
 * 0 or -errno with p->err.
 */
static int pool_start(struct pool *p, const char *sock, uint32_t n, int timeout_ms)
{
	uint64_t deadline = loom_clock_mono_ns() + (uint64_t)timeout_ms * 1000000ULL;
	uint64_t t0 = loom_clock_mono_ns();

	p->ep = epoll_create1(EPOLL_CLOEXEC);
	p->a = calloc(n + 1, sizeof(*p->a));
	if (p->ep < 0 || !p->a) {
		snprintf(p->err, sizeof(p->err), "epoll/calloc: %s", strerror(errno));
		return -ENOMEM;
	}
	p->n = n;
	for (uint32_t i = 0; i < n; i++)
		p->a[i].fd = -1;
	for (uint32_t i = 0; i < n; i++) {
		struct agent *a = &p->a[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
		struct loom_err err;
		int fd;

		a->host = i;
		/* a full backlog answers EAGAIN: let loomd accept while we serve the others */
		while ((fd = unix_connect(sock, true, &err)) == -EAGAIN &&
		       loom_clock_mono_ns() < deadline)
			pool_pump(p, 1);
		if (fd < 0) {
			snprintf(p->err, sizeof(p->err), "agent %u of %u: %.200s", i, n, err.msg);
			return fd;
		}
		a->fd = fd;
		if (epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			snprintf(p->err, sizeof(p->err), "epoll_ctl: %s", strerror(errno));
			return -errno;
		}
		agent_hello(p, a);
		if (i % 64 == 63)
			pool_pump(p, 0);
		if (i % 250 == 249)
			fprintf(stderr, "  %u agents connected\n", i + 1);
	}
	while ((p->hellos < n || p->with_table < n) && !p->dead && loom_clock_mono_ns() < deadline)
		pool_pump(p, 10);
	if (p->dead)
		return -EPIPE;
	if (p->hellos < n || p->with_table < n) {
		snprintf(p->err, sizeof(p->err),
			 "after %d ms only %u of %u agents have their hello reply and %u their "
			 "first table",
			 timeout_ms, p->hellos, n, p->with_table);
		return -ETIMEDOUT;
	}
	fprintf(stderr, "  %u agents connected, greeted and holding a full table in %.0f ms\n", n,
		(double)(loom_clock_mono_ns() - t0) * 1e-6);
	return 0;
}

/* Pumps until no table came for quiet_ms (or max_ms passed). Returns 0 or -errno. */
static int pool_settle(struct pool *p, int quiet_ms, int max_ms)
{
	uint64_t end = loom_clock_mono_ns() + (uint64_t)max_ms * 1000000ULL;
	uint64_t last = p->tables, since = loom_clock_mono_ns();

	while (loom_clock_mono_ns() < end) {
		int r = pool_pump(p, 10);

		if (r < 0)
			return r;
		if (p->dead)
			return -EPIPE;
		if (p->tables != last) {
			last = p->tables;
			since = loom_clock_mono_ns();
		} else if (loom_clock_mono_ns() - since >= (uint64_t)quiet_ms * 1000000ULL) {
			return 0;
		}
	}
	return 0;
}

/* ---- ready -------------------------------------------------------------------------------------- */

static int cmd_ready(const struct opts *o)
{
	int timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
	uint64_t deadline = loom_clock_mono_ns() + (uint64_t)timeout_ms * 1000000ULL;
	struct loom_err err = {{0}};

	if (!o->admin) {
		fprintf(stderr, "ready: --admin is required\n");
		return 1;
	}
	while (loom_clock_mono_ns() < deadline) {
		json_t *res = NULL;

		if (loom_admin_call(o->admin, "stats", 0, NULL, 1000, &res, &err) == 0) {
			json_decref(res);
			return 0;
		}
		if (o->pid > 0 && kill(o->pid, 0) < 0) {
			fprintf(stderr, "ready: loomd (pid %d) is gone\n", (int)o->pid);
			return 1;
		}
		sleep_ns(20 * 1000000ULL);
	}
	fprintf(stderr, "ready: %s did not answer within %d ms (%s)\n", o->admin, timeout_ms,
		loom_err_str(&err));
	return 1;
}

/* ---- announce ----------------------------------------------------------------------------------- */

struct ann {
	const struct opts *o;
	uint32_t idx;
	int fd;
	uint64_t job_id, job_flows; /* the job flows are announced for now, and its count */
	uint32_t space;             /* of this connection's tuples (bench_tuple) */
	uint64_t *coflow_ids;
	pthread_barrier_t *start;
	atomic_bool *stop;
	atomic_uint_least64_t flows; /* read by the main thread for the per-second progress */
	uint64_t reqs, end_ns, rotations;
	struct samples lat;
	int rc;
	char err[512];
};

/*
 * --rotate: unregisters the connection's job and registers a fresh one (the
 * next id of this connection), as a framework whose jobs finish would.
 */
static int ann_rotate(struct ann *t, uint64_t *seq)
{
	const struct opts *o = t->o;
	char msg[400];
	int r;

	r = job_unregister(t->fd, ++*seq, t->job_id, msg, sizeof(msg));
	if (r < 0) {
		snprintf(t->err, sizeof(t->err), "unregistering job %llu: %s",
			 (unsigned long long)t->job_id, msg);
		return r;
	}
	t->job_id += o->conns;
	for (uint32_t c = 0; c < o->coflows_per_job; c++)
		t->coflow_ids[c] = t->job_id * 1000 + c;
	r = job_register(t->fd, ++*seq, t->job_id, t->coflow_ids, o->coflows_per_job, NULL, 0, msg,
			 sizeof(msg));
	if (r < 0) {
		snprintf(t->err, sizeof(t->err), "registering job %llu: %s",
			 (unsigned long long)t->job_id, msg);
		return r;
	}
	t->job_flows = 0;
	t->rotations++;
	return 0;
}

static void *ann_main(void *arg)
{
	struct ann *t = arg;
	const struct opts *o = t->o;
	uint32_t b = o->batch, ncf = o->coflows_per_job;
	Loom__AnnounceFlow *af = calloc(b, sizeof(*af));
	Loom__AnnounceFlow **afp = calloc(b, sizeof(*afp));
	Loom__FlowSpec *fs = calloc(b, sizeof(*fs));
	Loom__FiveTuple *pt = calloc(b, sizeof(*pt));
	struct wire_tuple *wt = calloc(b, sizeof(*wt));
	Loom__AnnounceFlows afs = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	uint64_t i = 0, seq = 1000;

	if (!af || !afp || !fs || !pt || !wt) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		t->rc = -ENOMEM;
	}
	for (uint32_t k = 0; !t->rc && k < b; k++) {
		loom__announce_flow__init(&af[k]);
		loom__flow_spec__init(&fs[k]);
		af[k].flow = &fs[k];
		afp[k] = &af[k];
	}
	afs.n_flows = b;
	afs.flows = afp;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &afs;
	pthread_barrier_wait(t->start);
	while (!t->rc && !atomic_load_explicit(t->stop, memory_order_relaxed)) {
		uint64_t t0, t1;
		uint32_t accepted = 0;
		int r;

		if (o->rotate && t->job_flows >= o->rotate && (t->rc = ann_rotate(t, &seq)) < 0)
			break;
		for (uint32_t k = 0; k < b; k++, i++) {
			uint32_t src = (uint32_t)(i % o->hosts);

			bench_tuple(t->space, i, &wt[k]);
			wire_tuple_to_pb(&wt[k], &pt[k]);
			fs[k].tuple = &pt[k];
			fs[k].src_host = src;
			fs[k].dst_host =
				(src + 1 + (uint32_t)(i / o->hosts % (o->hosts - 1))) % o->hosts;
			fs[k].bytes = 1000000;
			af[k].coflow_id = t->coflow_ids[i % ncf];
		}
		env.seq = ++seq;
		t0 = loom_clock_mono_ns();
		r = fw_call(t->fd, &env, CALL_TIMEOUT_MS, &accepted, t->err, sizeof(t->err));
		t1 = loom_clock_mono_ns();
		atomic_fetch_add_explicit(&t->flows, r == 0 ? b : accepted, memory_order_relaxed);
		t->job_flows += r == 0 ? b : accepted;
		if (r < 0) {
			t->rc = r;
			break;
		}
		t->reqs++;
		if (samples_add(&t->lat, t1 - t0) < 0) {
			snprintf(t->err, sizeof(t->err), "out of memory");
			t->rc = -ENOMEM;
		}
	}
	t->end_ns = loom_clock_mono_ns();
	free(af);
	free(afp);
	free(fs);
	free(pt);
	free(wt);
	return NULL;
}

static int cmd_announce(const struct opts *o)
{
	uint32_t n = o->conns;
	struct ann *th = calloc(n, sizeof(*th));
	pthread_t *tid = calloc(n, sizeof(*tid));
	pthread_barrier_t start;
	atomic_bool stop = false;
	struct samples all = {0};
	uint64_t flows = 0, reqs = 0, rotations = 0, t_start, t_end = 0;
	double cpu0, cpu1, self0, wall_s, passes0, passes1, rss, first_rate = -1, last_rate = -1;
	uint32_t started = 0;
	char msg[512];
	int rc = 1;

	if (!th || !tid || o->batch == 0 || n == 0 || n > 255 || o->coflows_per_job == 0 ||
	    o->coflows_per_job >= 1000 || o->hosts < 2) {
		fprintf(stderr, "announce: bad arguments (conns 1..255, batch >= 1, "
				"coflows-per-job 1..999, hosts >= 2)\n");
		goto out;
	}
	if (o->rotate)
		fprintf(stderr,
			"announce [%s]: each connection replaces its job every %llu flows\n",
			o->label, (unsigned long long)o->rotate);
	fprintf(stderr, "announce [%s]: %u connections, %u flows per request, %.1f s\n", o->label,
		n, o->batch, o->seconds);
	for (uint32_t k = 0; k < n; k++) {
		struct ann *t = &th[k];
		char name[32];
		int r;

		t->fd = -1;
		t->o = o;
		t->idx = k;
		t->stop = &stop;
		t->start = &start;
		t->job_id = o->id_base + k;
		t->space = (uint32_t)((o->id_base + k) & 0xffff);
		t->coflow_ids = calloc(o->coflows_per_job, sizeof(*t->coflow_ids));
		if (!t->coflow_ids) {
			fprintf(stderr, "announce: out of memory\n");
			goto out;
		}
		for (uint32_t c = 0; c < o->coflows_per_job; c++)
			t->coflow_ids[c] = (o->id_base + k) * 1000 + c;
		snprintf(name, sizeof(name), "bench-announce-%u", k);
		t->fd = fw_connect(o->sock, name, msg, sizeof(msg));
		if (t->fd < 0) {
			fprintf(stderr, "announce: connection %u: %s\n", k, msg);
			goto out;
		}
		r = job_register(t->fd, 10, t->job_id, t->coflow_ids, o->coflows_per_job, NULL, 0,
				 msg, sizeof(msg));
		if (r < 0) {
			fprintf(stderr, "announce: connection %u: registering job %llu: %s\n", k,
				(unsigned long long)t->job_id, msg);
			goto out;
		}
	}
	passes0 = stat_num(o, "passes");
	pthread_barrier_init(&start, NULL, n + 1);
	for (; started < n; started++)
		if (pthread_create(&tid[started], NULL, ann_main, &th[started]) != 0) {
			fprintf(stderr, "announce: pthread_create: %s\n", strerror(errno));
			/* the barrier never opens without every thread: give up hard */
			exit(1);
		}
	cpu0 = proc_cpu_s(o->pid);
	self0 = self_cpu_s();
	pthread_barrier_wait(&start);
	t_start = loom_clock_mono_ns();
	{
		uint64_t tick_ns = t_start, tick_flows = 0;

		while (loom_clock_mono_ns() - t_start < (uint64_t)(o->seconds * 1e9)) {
			bool all_failed = true;
			uint64_t now, sum = 0;

			sleep_ns(50 * 1000000ULL);
			for (uint32_t k = 0; k < n; k++) {
				all_failed &= th[k].rc != 0;
				sum += atomic_load_explicit(&th[k].flows, memory_order_relaxed);
			}
			if (all_failed)
				break;
			now = loom_clock_mono_ns();
			if (now - tick_ns >= 1000000000ULL) {
				double rate = (double)(sum - tick_flows) /
					      ((double)(now - tick_ns) * 1e-9);

				/* the rate of each second shows whether it falls as flows pile up */
				fprintf(stderr,
					"  t=%4.1f s: %8.0f flows/s in the last second, %llu flows "
					"announced\n",
					(double)(now - t_start) * 1e-9, rate,
					(unsigned long long)sum);
				if (tick_flows == 0)
					first_rate = rate;
				last_rate = rate;
				tick_ns = now;
				tick_flows = sum;
			}
		}
	}
	atomic_store(&stop, true);
	for (uint32_t k = 0; k < n; k++) {
		pthread_join(tid[k], NULL);
		if (th[k].end_ns > t_end)
			t_end = th[k].end_ns;
	}
	cpu1 = proc_cpu_s(o->pid);
	wall_s = (double)(t_end - t_start) * 1e-9;
	passes1 = stat_num(o, "passes");
	rss = stat_num(o, "rss_bytes");
	pthread_barrier_destroy(&start);
	rc = 0;
	for (uint32_t k = 0; k < n; k++) {
		flows += atomic_load(&th[k].flows);
		reqs += th[k].reqs;
		rotations += th[k].rotations;
		for (size_t s = 0; s < th[k].lat.n; s++)
			if (samples_add(&all, th[k].lat.v[s]) < 0)
				break;
		if (th[k].rc) {
			fprintf(stderr, "announce: connection %u stopped: %s\n", k, th[k].err);
			rc = 1;
		}
	}
	samples_sort(&all);
	{
		double fps = (double)flows / wall_s, rps = (double)reqs / wall_s;
		double lcpu = cpu0 >= 0 && cpu1 >= 0 ? 100 * (cpu1 - cpu0) / wall_s : -1;
		double bcpu = 100 * (self_cpu_s() - self0) / wall_s;
		double p50 = (double)samples_q(&all, 0.5) * 1e-3,
		       p99 = (double)samples_q(&all, 0.99) * 1e-3;
		double pmax = all.n ? (double)all.v[all.n - 1] * 1e-3 : 0;
		double npass = passes0 >= 0 && passes1 >= 0 ? passes1 - passes0 : -1;

		printf("| config | conns | flows/req | flows/s | requests/s | reply p50 us | reply p99 "
		       "us | reply max us | flows | loomd CPU %% | bench CPU %% | passes/s | loomd "
		       "RSS MiB |\n");
		printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		printf("| %s | %u | %u | %.0f | %.0f | %.0f | %.0f | %.0f | %llu | %.0f | %.0f | %.0f | "
		       "%.1f |\n",
		       o->label, n, o->batch, fps, rps, p50, p99, pmax, (unsigned long long)flows,
		       lcpu, bcpu, npass >= 0 ? npass / wall_s : -1, rss / 1048576.0);
		fflush(stdout);
		csv_row(o, "announce", "flows_per_s", fps, "flows/s");
		csv_row(o, "announce", "requests_per_s", rps, "req/s");
		csv_row(o, "announce", "reply_p50_us", p50, "us");
		csv_row(o, "announce", "reply_p99_us", p99, "us");
		csv_row(o, "announce", "reply_max_us", pmax, "us");
		csv_row(o, "announce", "flows", (double)flows, "flows");
		csv_row(o, "announce", "wall_s", wall_s, "s");
		csv_row(o, "announce", "flows_per_s_first_second", first_rate, "flows/s");
		csv_row(o, "announce", "flows_per_s_last_second", last_rate, "flows/s");
		csv_row(o, "announce", "loomd_cpu_pct", lcpu, "%");
		csv_row(o, "announce", "bench_cpu_pct", bcpu, "%");
		csv_row(o, "announce", "passes_per_s", npass >= 0 ? npass / wall_s : -1, "1/s");
		csv_row(o, "announce", "rss_bytes", rss, "bytes");
		csv_row(o, "announce", "errors", rc ? 1 : 0, "runs");
		csv_row(o, "announce", "job_rotations", (double)rotations, "jobs");
		fprintf(stderr,
			"announce [%s]: %.0f flows/s, %.0f requests/s, p50 %.0f us, p99 %.0f us\n",
			o->label, fps, rps, p50, p99);
	}
out:
	for (uint32_t k = 0; th && k < n; k++) {
		if (th[k].fd >= 0)
			close(th[k].fd);
		free(th[k].coflow_ids);
		samples_done(&th[k].lat);
	}
	samples_done(&all);
	free(th);
	free(tid);
	return rc;
}

/* ---- agents ------------------------------------------------------------------------------------- */

struct agents_bench {
	const struct opts *o;
	uint32_t nhosts, ncoflows;
	uint64_t base;
	/* written by the framework thread before registered[k] is set, then read-only */
	uint8_t *want;  /* [k * nhosts + host]: host is a source of coflow k */
	uint32_t *nsrc; /* source hosts of coflow k */
	uint64_t *t_send_ns;
	atomic_uint *registered;
	/* the agent loop's own */
	uint8_t *got;
	uint32_t *remaining;
	atomic_uint_least64_t *t_done_ns; /* 0 until every source host has the class */
	/* the framework thread's results */
	uint64_t *t_reply_ns;
	atomic_bool fw_finished;
	double active_coflows, active_flows;
	int fw_rc;
	char fw_err[512];
	uint32_t registered_n, unregistered_n;
};

/* Agent loop: a table arrived at agent a; note the coflows whose class it carries. */
static void agents_on_table(void *ctx, struct agent *a, const Loom__PriorityTable *t,
			    uint64_t now_ns)
{
	struct agents_bench *b = ctx;

	for (size_t i = 0; i < t->n_classes; i++) {
		uint64_t id = t->classes[i]->coflow_id;
		size_t k, cell;

		if (id < b->base || id >= b->base + b->ncoflows)
			continue;
		k = (size_t)(id - b->base);
		if (!atomic_load_explicit(&b->registered[k], memory_order_acquire))
			continue;
		cell = k * b->nhosts + a->host;
		if (a->host >= b->nhosts || !b->want[cell] || b->got[cell])
			continue;
		b->got[cell] = 1;
		if (b->remaining[k] == 0)
			b->remaining[k] = b->nsrc[k];
		if (--b->remaining[k] == 0)
			atomic_store_explicit(&b->t_done_ns[k], now_ns, memory_order_release);
	}
}

/* Waits until coflow k is seen by all its sources or its deadline passed. */
static void agents_wait_coflow(struct agents_bench *b, uint32_t k)
{
	uint64_t deadline = b->t_send_ns[k] + (uint64_t)b->o->timeout_ms * 1000000ULL;

	while (!atomic_load_explicit(&b->t_done_ns[k], memory_order_acquire) &&
	       loom_clock_mono_ns() < deadline)
		sleep_ns(200000);
}

static void *agents_fw_main(void *arg)
{
	struct agents_bench *b = arg;
	const struct opts *o = b->o;
	struct loom_rng rng;
	struct flow_def fl[64];
	uint32_t done_upto = 0;
	uint64_t seq = 100, next_ns;
	int fd;

	loom_rng_seed(&rng, o->seed);
	fd = fw_connect(o->sock, "bench-agents-framework", b->fw_err, sizeof(b->fw_err));
	if (fd < 0) {
		b->fw_rc = fd;
		goto out;
	}
	next_ns = loom_clock_mono_ns();
	for (uint32_t k = 0; k < b->ncoflows; k++) {
		uint32_t nsrc =
			o->src_min + (uint32_t)loom_rng_below(&rng, o->src_max - o->src_min + 1);
		uint64_t id = b->base + k;
		char msg[400];
		int r;

		for (uint32_t j = 0; j < nsrc; j++) {
			uint32_t src;

			do
				src = (uint32_t)loom_rng_below(&rng, b->nhosts);
			while (b->want[(size_t)k * b->nhosts + src]);
			b->want[(size_t)k * b->nhosts + src] = 1;
			fl[j].src = src;
			fl[j].dst = (src + 1 + (uint32_t)loom_rng_below(&rng, b->nhosts - 1)) %
				    b->nhosts;
			fl[j].bytes = 1000000 + loom_rng_below(&rng, 100000000);
			bench_tuple((uint32_t)(b->base & 0xffff), (uint64_t)k * 64 + j,
				    &fl[j].tuple);
		}
		b->nsrc[k] = nsrc;
		b->t_send_ns[k] = loom_clock_mono_ns();
		atomic_store_explicit(&b->registered[k], 1, memory_order_release);
		r = job_register(fd, ++seq, id, &id, 1, fl, nsrc, msg, sizeof(msg));
		b->t_reply_ns[k] = loom_clock_mono_ns();
		if (r < 0) {
			snprintf(b->fw_err, sizeof(b->fw_err), "registering coflow %u: %s", k, msg);
			b->fw_rc = r;
			goto out;
		}
		b->registered_n++;
		if (k == b->ncoflows - 1) {
			json_t *st = admin_stats(o);

			b->active_coflows = st ? jnum(st, "coflows_active") : -1;
			b->active_flows = st ? jnum(st, "flows") : -1;
			json_decref(st);
		}
		/* keep at most `window` coflows registered: retire the oldest once measured */
		while (k + 1 - done_upto > o->window) {
			agents_wait_coflow(b, done_upto);
			r = job_unregister(fd, ++seq, b->base + done_upto, msg, sizeof(msg));
			if (r < 0) {
				snprintf(b->fw_err, sizeof(b->fw_err),
					 "unregistering coflow %u: %s", done_upto, msg);
				b->fw_rc = r;
				goto out;
			}
			b->unregistered_n++;
			done_upto++;
		}
		if (k % 50 == 49)
			fprintf(stderr, "  %u coflows registered\n", k + 1);
		next_ns += (uint64_t)(o->interval_min_ms +
				      loom_rng_below(&rng,
						     o->interval_max_ms - o->interval_min_ms + 1)) *
			   1000000ULL;
		if (next_ns > loom_clock_mono_ns())
			sleep_ns(next_ns - loom_clock_mono_ns());
	}
	for (; done_upto < b->ncoflows; done_upto++) {
		char msg[400];

		agents_wait_coflow(b, done_upto);
		if (job_unregister(fd, ++seq, b->base + done_upto, msg, sizeof(msg)) < 0) {
			snprintf(b->fw_err, sizeof(b->fw_err), "unregistering coflow %u: %s",
				 done_upto, msg);
			b->fw_rc = -EIO;
			goto out;
		}
		b->unregistered_n++;
	}
out:
	if (fd >= 0)
		close(fd);
	atomic_store(&b->fw_finished, true);
	return NULL;
}

/* The agents bench's arguments are coherent; says why not on stderr. */
static bool agents_opts_ok(const struct opts *o)
{
	if (o->agents == 0 || o->agents > o->hosts || o->src_min < 1 || o->src_max < o->src_min ||
	    o->src_max > 64 || o->src_max > o->agents || o->interval_max_ms < o->interval_min_ms ||
	    o->window == 0 || o->ncoflows == 0) {
		fprintf(stderr,
			"agents: bad arguments: --agents %u must be 1..--hosts (%u), --sources "
			"%u-%u within 1..min(64, agents), --window %u and --coflows %u >= 1\n",
			o->agents, o->hosts, o->src_min, o->src_max, o->window, o->ncoflows);
		return false;
	}
	return true;
}

static void agents_bench_done(struct agents_bench *b)
{
	free(b->want);
	free(b->got);
	free(b->nsrc);
	free(b->remaining);
	free(b->t_send_ns);
	free(b->t_reply_ns);
	free(b->registered);
	free(b->t_done_ns);
}

/* Sizes b for o's agents and coflows. 0, or -ENOMEM (b then for agents_bench_done). */
static int agents_bench_init(struct agents_bench *b, const struct opts *o)
{
	size_t cells = (size_t)o->ncoflows * o->agents;

	b->o = o;
	b->nhosts = o->agents;
	b->ncoflows = o->ncoflows;
	b->base = o->id_base;
	b->want = calloc(cells, 1);
	b->got = calloc(cells, 1);
	b->nsrc = calloc(b->ncoflows, sizeof(*b->nsrc));
	b->remaining = calloc(b->ncoflows, sizeof(*b->remaining));
	b->t_send_ns = calloc(b->ncoflows, sizeof(*b->t_send_ns));
	b->t_reply_ns = calloc(b->ncoflows, sizeof(*b->t_reply_ns));
	b->registered = calloc(b->ncoflows, sizeof(*b->registered));
	b->t_done_ns = calloc(b->ncoflows, sizeof(*b->t_done_ns));
	if (!b->want || !b->got || !b->nsrc || !b->remaining || !b->t_send_ns || !b->t_reply_ns ||
	    !b->registered || !b->t_done_ns)
		return -ENOMEM;
	return 0;
}

/* What cmd_agents measures around the framework thread's run. */
struct agents_run {
	double rss_idle, rss_agents, push99_connect, tables_connect;
	uint64_t tables0;
	double cpu0, cpu1, wall_s;
	uint32_t missed, gaps;
};

/*
 * Connects the agents, lets the connection phase settle and notes what it
 * put in loomd's cumulative figures; then the pool measures tables for b.
 */
static int agents_connect(const struct opts *o, struct agents_bench *b, struct pool *p,
			  struct agents_run *run)
{
	json_t *st;

	run->rss_idle = stat_num(o, "rss_bytes");
	fprintf(stderr, "agents [%s]: connecting %u agents\n", o->label, o->agents);
	if (pool_start(p, o->sock, o->agents, 60000) < 0) {
		fprintf(stderr, "agents: %s\n", p->err);
		return -1;
	}
	pool_settle(p, 200, 5000);
	/* loomd's push histogram is cumulative: note what the connection phase put in it */
	st = admin_stats(o);
	run->rss_agents = st ? jnum(st, "rss_bytes") : -1;
	run->push99_connect = st ? jnum(st, "push_p99_us") : -1;
	run->tables_connect = st ? jnum(st, "tables_sent") : -1;
	json_decref(st);
	p->on_table = agents_on_table;
	p->ctx = b;
	p->measure = true;
	run->tables0 = p->tables;
	return 0;
}

/*
 * Runs the framework thread to its end while the agent loop pumps tables,
 * within a deadline from the arguments. 0, or -1 with the reason on stderr.
 */
static int agents_drive(const struct opts *o, struct agents_bench *b, struct pool *p,
			struct agents_run *run)
{
	uint64_t t0, deadline;
	pthread_t fw;

	fprintf(stderr,
		"agents [%s]: registering %u coflows (%u-%u source hosts each), one every "
		"%u-%u ms, at most %u registered\n",
		o->label, b->ncoflows, o->src_min, o->src_max, o->interval_min_ms,
		o->interval_max_ms, o->window);
	run->cpu0 = proc_cpu_s(o->pid);
	t0 = loom_clock_mono_ns();
	if (pthread_create(&fw, NULL, agents_fw_main, b) != 0) {
		fprintf(stderr, "agents: pthread_create failed\n");
		return -1;
	}
	deadline = t0 + ((uint64_t)b->ncoflows * (o->interval_max_ms + 5) +
			 (uint64_t)o->timeout_ms * (b->ncoflows + 1) + 30000) *
				1000000ULL;
	while (!atomic_load(&b->fw_finished)) {
		if (pool_pump(p, 5) < 0 || p->dead || loom_clock_mono_ns() > deadline)
			break;
	}
	if (!atomic_load(&b->fw_finished)) {
		fprintf(stderr, "agents: %s\n",
			p->dead ? p->err : "the framework thread did not finish in time");
		/* the thread's calls are bounded; let it end */
		while (!atomic_load(&b->fw_finished))
			pool_pump(p, 5);
	}
	pthread_join(fw, NULL);
	run->wall_s = (double)(loom_clock_mono_ns() - t0) * 1e-9;
	run->cpu1 = proc_cpu_s(o->pid);
	if (b->fw_rc) {
		fprintf(stderr, "agents: framework: %s\n", b->fw_err);
		return -1;
	}
	if (p->dead) {
		fprintf(stderr, "agents: %s\n", p->err);
		return -1;
	}
	return 0;
}

/*
 * Per coflow: registration to its class at every source host (lat; missed
 * past the timeout) and registration to loomd's reply (rep); table gaps.
 */
static void agents_collect(const struct opts *o, const struct agents_bench *b, const struct pool *p,
			   struct samples *lat, struct samples *rep, struct agents_run *run)
{
	for (uint32_t k = 0; k < b->ncoflows; k++) {
		uint64_t d = atomic_load(&b->t_done_ns[k]);

		samples_add(rep, b->t_reply_ns[k] - b->t_send_ns[k]);
		if (!d || d - b->t_send_ns[k] > (uint64_t)o->timeout_ms * 1000000ULL)
			run->missed++;
		else
			samples_add(lat, d - b->t_send_ns[k]);
	}
	for (uint32_t i = 0; i < p->n; i++)
		run->gaps += p->a[i].gaps;
	samples_sort(lat);
	samples_sort(rep);
}

/* The table, the notes under it and the CSV rows (st: loomd's stats now). */
static void agents_report(const struct opts *o, const struct agents_bench *b, const struct pool *p,
			  const struct samples *lat, const struct samples *rep,
			  const struct agents_run *run, const json_t *st)
{
	double p50 = (double)samples_q(lat, 0.5) * 1e-3, p99 = (double)samples_q(lat, 0.99) * 1e-3;
	double pmax = lat->n ? (double)lat->v[lat->n - 1] * 1e-3 : 0;
	double r50 = (double)samples_q(rep, 0.5) * 1e-3, r99 = (double)samples_q(rep, 0.99) * 1e-3;
	double lcpu =
		run->cpu0 >= 0 && run->cpu1 >= 0 ? 100 * (run->cpu1 - run->cpu0) / run->wall_s : -1;
	double tps = (double)(p->tables - run->tables0) / run->wall_s;

	printf("| config | agents | coflows | measured | missed | table p50 us | table p99 us | "
	       "table max us | reply p50 us | reply p99 us | loomd push_p99_us | loomd "
	       "decision_p99_us | active coflows | tables/s | loomd CPU %% |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	printf("| %s | %u | %u | %zu | %u | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | "
	       "%.0f | %.0f | %.0f |\n",
	       o->label, o->agents, b->ncoflows, lat->n, run->missed, p50, p99, pmax, r50, r99,
	       jnum(st, "push_p99_us"), jnum(st, "decision_p99_us"), b->active_coflows, tps, lcpu);
	printf("\nloomd RSS: idle %.1f MiB, with %u agents %.1f MiB; table gaps seen by agents: "
	       "%u; loomd push_p50_us %.0f, decision_p50_us %.0f (cumulative since start; "
	       "after the %u agents connected, before any coflow: push_p99_us %.0f over "
	       "%.0f tables, of %.0f in all)\n",
	       run->rss_idle / 1048576.0, o->agents, run->rss_agents / 1048576.0, run->gaps,
	       jnum(st, "push_p50_us"), jnum(st, "decision_p50_us"), o->agents, run->push99_connect,
	       run->tables_connect, jnum(st, "tables_sent"));
	printf("delivery of the %zu tables sent while coflows were registered (their sent_ns "
	       "to their arrival at the agent): p50 %.0f us, p99 %.0f us, max %.0f us\n",
	       p->delivery.n, (double)samples_q(&p->delivery, 0.5) * 1e-3,
	       (double)samples_q(&p->delivery, 0.99) * 1e-3,
	       p->delivery.n ? (double)p->delivery.v[p->delivery.n - 1] * 1e-3 : 0);
	fflush(stdout);
	csv_row(o, "agents", "table_p50_us", p50, "us");
	csv_row(o, "agents", "table_p99_us", p99, "us");
	csv_row(o, "agents", "table_max_us", pmax, "us");
	csv_row(o, "agents", "coflows_measured", (double)lat->n, "coflows");
	csv_row(o, "agents", "coflows_missed", run->missed, "coflows");
	csv_row(o, "agents", "register_reply_p50_us", r50, "us");
	csv_row(o, "agents", "register_reply_p99_us", r99, "us");
	csv_row(o, "agents", "loomd_push_p50_us", jnum(st, "push_p50_us"), "us");
	csv_row(o, "agents", "loomd_push_p99_us", jnum(st, "push_p99_us"), "us");
	csv_row(o, "agents", "loomd_push_p99_us_after_connect", run->push99_connect, "us");
	csv_row(o, "agents", "delivery_p50_us", (double)samples_q(&p->delivery, 0.5) * 1e-3, "us");
	csv_row(o, "agents", "delivery_p99_us", (double)samples_q(&p->delivery, 0.99) * 1e-3, "us");
	csv_row(o, "agents", "loomd_decision_p50_us", jnum(st, "decision_p50_us"), "us");
	csv_row(o, "agents", "loomd_decision_p99_us", jnum(st, "decision_p99_us"), "us");
	csv_row(o, "agents", "active_coflows", b->active_coflows, "coflows");
	csv_row(o, "agents", "active_flows", b->active_flows, "flows");
	csv_row(o, "agents", "tables_per_s", tps, "1/s");
	csv_row(o, "agents", "table_gaps", run->gaps, "tables");
	csv_row(o, "agents", "loomd_cpu_pct", lcpu, "%");
	csv_row(o, "agents", "rss_idle_bytes", run->rss_idle, "bytes");
	csv_row(o, "agents", "rss_agents_bytes", run->rss_agents, "bytes");
	fprintf(stderr, "agents [%s]: table p50 %.0f us, p99 %.0f us, max %.0f us, %u missed\n",
		o->label, p50, p99, pmax, run->missed);
}

/*
 * agents: o->agents simulated agents connected to loomd while a framework
 * thread registers coflows; how long until each coflow's class is at every
 * source host. Exits 1 when a coflow missed the timeout.
 */
static int cmd_agents(const struct opts *o)
{
	struct agents_bench b = {0};
	struct agents_run run = {0};
	struct pool p = {.ep = -1};
	struct samples lat = {0}, rep = {0};
	json_t *st = NULL;
	int rc = 1;

	if (!agents_opts_ok(o))
		return 1;
	if (agents_bench_init(&b, o) < 0) {
		fprintf(stderr, "agents: out of memory\n");
		goto out;
	}
	if (agents_connect(o, &b, &p, &run) < 0 || agents_drive(o, &b, &p, &run) < 0)
		goto out;
	pool_settle(&p, 100, 2000);
	p.measure = false;
	samples_sort(&p.delivery);
	agents_collect(o, &b, &p, &lat, &rep, &run);
	st = admin_stats(o);
	if (!st)
		goto out;
	agents_report(o, &b, &p, &lat, &rep, &run, st);
	rc = run.missed ? 1 : 0;
	if (run.missed)
		fprintf(stderr, "agents: %u coflows did not reach all their sources within %d ms\n",
			run.missed, o->timeout_ms);
out:
	json_decref(st);
	pool_free(&p);
	samples_done(&lat);
	samples_done(&rep);
	agents_bench_done(&b);
	return rc;
}

/* ---- rss ---------------------------------------------------------------------------------------- */

static int cmd_rss(const struct opts *o)
{
	struct pool p = {.ep = -1};
	struct loom_rng rng;
	struct flow_def *fl = NULL;
	double rss_idle, rss_agents = -1, rss_flows, nflows;
	uint32_t fpc = o->flows_per_coflow, njobs;
	uint64_t seq = 100;
	char msg[512];
	int fd = -1, rc = 1;

	if (fpc == 0 || o->flows == 0 || o->agents > o->hosts || o->hosts < 2) {
		fprintf(stderr,
			"rss: bad arguments (flows, flows-per-coflow >= 1; agents <= hosts)\n");
		return 1;
	}
	njobs = (o->flows + fpc - 1) / fpc;
	loom_rng_seed(&rng, o->seed);
	fl = calloc(fpc, sizeof(*fl));
	if (!fl)
		goto out;
	rss_idle = stat_num(o, "rss_bytes");
	if (rss_idle < 0)
		goto out;
	fprintf(stderr, "rss [%s]: idle %.1f MiB\n", o->label, rss_idle / 1048576.0);
	if (o->agents) {
		if (pool_start(&p, o->sock, o->agents, 60000) < 0) {
			fprintf(stderr, "rss: %s\n", p.err);
			goto out;
		}
		pool_settle(&p, 300, 5000);
		rss_agents = stat_num(o, "rss_bytes");
		fprintf(stderr, "rss [%s]: with %u agents %.1f MiB\n", o->label, o->agents,
			rss_agents / 1048576.0);
	}
	fd = fw_connect(o->sock, "bench-rss", msg, sizeof(msg));
	if (fd < 0) {
		fprintf(stderr, "rss: %s\n", msg);
		goto out;
	}
	for (uint32_t j = 0; j < njobs; j++) {
		uint64_t id = o->id_base + j;
		uint32_t n = j == njobs - 1 ? o->flows - j * fpc : fpc;

		for (uint32_t k = 0; k < n; k++) {
			uint32_t src = (uint32_t)loom_rng_below(&rng, o->hosts);

			fl[k].src = src;
			fl[k].dst =
				(src + 1 + (uint32_t)loom_rng_below(&rng, o->hosts - 1)) % o->hosts;
			fl[k].bytes = 1000000 + loom_rng_below(&rng, 100000000);
			bench_tuple((uint32_t)(o->id_base & 0xffff), (uint64_t)j * fpc + k,
				    &fl[k].tuple);
		}
		if (job_register(fd, ++seq, id, &id, 1, fl, n, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "rss: registering job %u of %u: %s\n", j, njobs, msg);
			goto out;
		}
		if (o->agents && pool_pump(&p, 0) >= 0 && p.dead) {
			fprintf(stderr, "rss: %s\n", p.err);
			goto out;
		}
	}
	if (o->agents)
		pool_settle(&p, 300, 10000);
	else
		sleep_ns(300 * 1000000ULL);
	rss_flows = stat_num(o, "rss_bytes");
	nflows = stat_num(o, "flows");
	fprintf(stderr, "rss [%s]: with %.0f flows %.1f MiB\n", o->label, nflows,
		rss_flows / 1048576.0);
	printf("| config | idle MiB | with %u agents MiB | + %u flows MiB | flows held | loomd "
	       "VmHWM MiB |\n",
	       o->agents, o->flows);
	printf("|---|---|---|---|---|---|\n");
	printf("| %s | %.1f | %s%.1f | %.1f | %.0f | %.1f |\n", o->label, rss_idle / 1048576.0,
	       o->agents ? "" : "(none) ",
	       o->agents ? rss_agents / 1048576.0 : rss_idle / 1048576.0, rss_flows / 1048576.0,
	       nflows, (double)proc_status_bytes(o->pid, "VmHWM") / 1048576.0);
	fflush(stdout);
	csv_row(o, "rss", "rss_idle_bytes", rss_idle, "bytes");
	if (o->agents)
		csv_row(o, "rss", "rss_agents_bytes", rss_agents, "bytes");
	csv_row(o, "rss", "rss_flows_bytes", rss_flows, "bytes");
	csv_row(o, "rss", "flows", nflows, "flows");
	csv_row(o, "rss", "vmhwm_bytes", (double)proc_status_bytes(o->pid, "VmHWM"), "bytes");
	rc = nflows == (double)o->flows ? 0 : 1;
	if (rc)
		fprintf(stderr, "rss: loomd holds %.0f flows, expected %u\n", nflows, o->flows);
out:
	if (fd >= 0)
		close(fd);
	pool_free(&p);
	free(fl);
	return rc;
}

/* ---- main --------------------------------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(const struct opts *o);
	const char *help;
} cmds[] = {
	{"ready", cmd_ready, "wait until loomd's admin socket answers (--admin, --timeout-ms)"},
	{"announce", cmd_announce,
	 "flow announcement throughput (--conns, --batch, --seconds, --coflows-per-job, --rotate "
	 "N, --hosts)"},
	{"agents", cmd_agents,
	 "table push latency to fake agents (--agents, --coflows, --interval-ms A-B, --sources "
	 "A-B, --window, --timeout-ms, --hosts)"},
	{"rss", cmd_rss, "loomd's RSS idle, with agents, with flows (--agents, --flows, --hosts)"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: loom-bench-loomd COMMAND [OPTIONS]\n"
		   "Benchmarks a running loomd over its sockets (bench/loomd.sh starts one).\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nCommon options:\n"
		   "  --socket PATH     loomd's listen_unix socket\n"
		   "  --admin PATH      loomd's admin socket\n"
		   "  --pid PID         loomd's pid (its CPU time and peak RSS are reported)\n"
		   "  --hosts N         loomd's 'hosts' setting (default 150)\n"
		   "  --label TEXT      the configuration, for the table and the CSV\n"
		   "  --csv FILE        append bench,config,metric,value,unit rows to FILE\n"
		   "  --seed N          random seed (default 1)\n"
		   "  --id-base N       first job/coflow id used (default 1000000)\n");
}

/* "A-B" or "A" into two numbers. */
static int parse_range(const char *s, uint32_t *lo, uint32_t *hi)
{
	char *end;
	unsigned long a = strtoul(s, &end, 10), b;

	if (end == s)
		return -EINVAL;
	b = a;
	if (*end == '-') {
		const char *q = end + 1;

		b = strtoul(q, &end, 10);
		if (end == q)
			return -EINVAL;
	}
	if (*end || a > b || b > UINT32_MAX)
		return -EINVAL;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return 0;
}

static int parse_u32(const char *s, uint32_t *ret)
{
	unsigned long long v;

	if (loom_parse_u64(s, &v) < 0 || v > UINT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_SOCKET = 256,
		O_ADMIN,
		O_PID,
		O_HOSTS,
		O_LABEL,
		O_CSV,
		O_SEED,
		O_IDBASE,
		O_TIMEOUT,
		O_CONNS,
		O_BATCH,
		O_SECONDS,
		O_CPJ,
		O_AGENTS,
		O_COFLOWS,
		O_INTERVAL,
		O_SOURCES,
		O_WINDOW,
		O_FLOWS,
		O_FPC,
		O_ROTATE,
	};
	static const struct option lo[] = {
		{"socket", required_argument, NULL, O_SOCKET},
		{"admin", required_argument, NULL, O_ADMIN},
		{"pid", required_argument, NULL, O_PID},
		{"hosts", required_argument, NULL, O_HOSTS},
		{"label", required_argument, NULL, O_LABEL},
		{"csv", required_argument, NULL, O_CSV},
		{"seed", required_argument, NULL, O_SEED},
		{"id-base", required_argument, NULL, O_IDBASE},
		{"timeout-ms", required_argument, NULL, O_TIMEOUT},
		{"conns", required_argument, NULL, O_CONNS},
		{"batch", required_argument, NULL, O_BATCH},
		{"seconds", required_argument, NULL, O_SECONDS},
		{"coflows-per-job", required_argument, NULL, O_CPJ},
		{"agents", required_argument, NULL, O_AGENTS},
		{"coflows", required_argument, NULL, O_COFLOWS},
		{"interval-ms", required_argument, NULL, O_INTERVAL},
		{"sources", required_argument, NULL, O_SOURCES},
		{"window", required_argument, NULL, O_WINDOW},
		{"flows", required_argument, NULL, O_FLOWS},
		{"flows-per-coflow", required_argument, NULL, O_FPC},
		{"rotate", required_argument, NULL, O_ROTATE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o;
	const char *cmd;
	int c;

	opts_default(&o);
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		unsigned long long v;
		double d;
		int bad = 0;

		switch (c) {
		case O_SOCKET:
			o.sock = optarg;
			break;
		case O_ADMIN:
			o.admin = optarg;
			break;
		case O_PID:
			bad = loom_parse_u64(optarg, &v) < 0 || v > INT32_MAX;
			o.pid = (pid_t)v;
			break;
		case O_HOSTS:
			bad = parse_u32(optarg, &o.hosts) < 0;
			break;
		case O_LABEL:
			o.label = optarg;
			break;
		case O_CSV:
			o.csv = optarg;
			break;
		case O_SEED:
			bad = loom_parse_u64(optarg, &v) < 0;
			o.seed = v;
			break;
		case O_IDBASE:
			bad = loom_parse_u64(optarg, &v) < 0;
			o.id_base = v;
			break;
		case O_TIMEOUT:
			bad = loom_parse_u64(optarg, &v) < 0 || v > INT32_MAX / 2;
			o.timeout_ms = (int)v;
			break;
		case O_CONNS:
			bad = parse_u32(optarg, &o.conns) < 0;
			break;
		case O_BATCH:
			bad = parse_u32(optarg, &o.batch) < 0;
			break;
		case O_SECONDS:
			bad = loom_parse_double(optarg, &d) < 0 || !(d > 0) || d > 600;
			o.seconds = d;
			break;
		case O_CPJ:
			bad = parse_u32(optarg, &o.coflows_per_job) < 0;
			break;
		case O_AGENTS:
			bad = parse_u32(optarg, &o.agents) < 0;
			break;
		case O_COFLOWS:
			bad = parse_u32(optarg, &o.ncoflows) < 0;
			break;
		case O_INTERVAL:
			bad = parse_range(optarg, &o.interval_min_ms, &o.interval_max_ms) < 0;
			break;
		case O_SOURCES:
			bad = parse_range(optarg, &o.src_min, &o.src_max) < 0;
			break;
		case O_WINDOW:
			bad = parse_u32(optarg, &o.window) < 0;
			break;
		case O_FLOWS:
			bad = parse_u32(optarg, &o.flows) < 0;
			break;
		case O_FPC:
			bad = parse_u32(optarg, &o.flows_per_coflow) < 0;
			break;
		case O_ROTATE:
			bad = loom_parse_u64(optarg, &v) < 0;
			o.rotate = v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "loom-bench-loomd: bad value '%s' for --%s\n", optarg,
				lo[c - O_SOCKET].name);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loom-bench-loomd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o.timeout_ms == 0)
		o.timeout_ms = strcmp(cmd, "ready") ? 2000 : 10000;
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmd, cmds[i].name))
			continue;
		if (strcmp(cmd, "ready") && !o.sock) {
			fprintf(stderr, "loom-bench-loomd %s: --socket is required\n", cmd);
			return 2;
		}
		return cmds[i].fn(&o);
	}
	fprintf(stderr, "loom-bench-loomd: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
