/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/webui: the web UI's pages and JSON API on the metrics
 * listener. See webui.h for the threads; docs/api.md for the API.
 */
#include "controlplane/loomd/webui.h"

#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/admin_cmds.h"
#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/server.h"

#define TOKEN_BYTES 32
#define SPEC_MAX    256

/* An API call the HTTP thread hands the loop; freed by whoever sees it last. */
struct ui_req {
	struct ui_req *next;
	const char *cmd; /* an admin command, "decisions" or "set-policy-body" */
	int argc;
	char arg[SPEC_MAX];
	char peer[64];
	char *body; /* POST body, owned */
	size_t body_len;
	/* the answer */
	bool done, abandoned;
	unsigned status;
	char *text; /* JSON, owned */
};

/* A POST's body as it arrives (*req_cls). */
struct ui_upload {
	size_t len;
	bool too_big;
	char buf[LOOMD_WEBUI_MAX_BODY + 1];
};

struct ui_recent {
	uint64_t wall_ns, decide_ns;
	uint32_t coflows;
};

/* One second of a latency series: count and quantiles of what was observed in it. */
struct ui_second {
	uint64_t sec; /* unix seconds; 0 = empty */
	uint64_t n;
	double p50, p99, max_bound;
};

struct loomd_webui {
	struct loomd_server *srv; /* loop-side */
	struct loomd_metrics_http *http;
	char token[2 * TOKEN_BYTES + 1];
	int efd;
	struct event *wake;
	pthread_mutex_t lock; /* guards queue, closing and every request's answer */
	pthread_cond_t cond;
	struct ui_req *queue;
	bool closing;
	/* loop-side only */
	struct ui_recent recent[LOOMD_WEBUI_RECENT];
	uint32_t nrecent, recent_at;
	struct ui_second decide_s[LOOMD_WEBUI_SECONDS], push_s[LOOMD_WEBUI_SECONDS];
	uint64_t cur_sec;
	struct loomd_hist decide_prev, push_prev; /* the histograms at cur_sec's start */
};

const char *loomd_webui_token(const struct loomd_webui *ui)
{
	return ui->token;
}

/* ---- loop side ------------------------------------------------------------------------ */

void loomd_webui_note_decision(struct loomd_webui *ui, uint64_t decide_ns, uint32_t ncoflows)
{
	struct ui_recent *r;

	if (!ui)
		return;
	r = &ui->recent[ui->recent_at];
	ui->recent_at = (ui->recent_at + 1) % LOOMD_WEBUI_RECENT;
	if (ui->nrecent < LOOMD_WEBUI_RECENT)
		ui->nrecent++;
	r->wall_ns = loom_clock_wall_ns();
	r->decide_ns = decide_ns;
	r->coflows = ncoflows;
}

/* The observations of now that were not in prev, as a histogram, into *ret. */
static void hist_delta(const struct loomd_hist *now, const struct loomd_hist *prev,
		       struct loomd_hist *ret)
{
	*ret = *now;
	if (prev->nbounds != now->nbounds || prev->count > now->count)
		return;
	for (unsigned b = 0; b <= now->nbounds; b++)
		ret->counts[b] -= prev->counts[b] <= now->counts[b] ? prev->counts[b] : 0;
	ret->count -= prev->count;
	ret->sum -= prev->sum;
}

static void close_second(struct ui_second *series, uint64_t sec, const struct loomd_hist *now,
			 const struct loomd_hist *prev)
{
	struct ui_second *x = &series[sec % LOOMD_WEBUI_SECONDS];
	struct loomd_hist d;

	hist_delta(now, prev, &d);
	x->sec = sec;
	x->n = d.count;
	x->p50 = loomd_hist_quantile(&d, 0.5);
	x->p99 = loomd_hist_quantile(&d, 0.99);
	x->max_bound = loomd_hist_quantile(&d, 1.0);
}

void loomd_webui_tick(struct loomd_webui *ui)
{
	struct loomd_server *s;
	uint64_t sec;

	if (!ui)
		return;
	s = ui->srv;
	sec = loom_clock_wall_ns() / 1000000000ULL;
	if (sec == ui->cur_sec)
		return;
	if (ui->cur_sec) {
		close_second(ui->decide_s, ui->cur_sec, &s->st.decide_hist, &ui->decide_prev);
		close_second(ui->push_s, ui->cur_sec, &s->st.push_hist, &ui->push_prev);
	}
	ui->cur_sec = sec;
	ui->decide_prev = s->st.decide_hist;
	ui->push_prev = s->st.push_hist;
}

static json_t *series_json(const struct loomd_webui *ui, const struct ui_second *series)
{
	json_t *a = json_array();
	uint64_t last = ui->cur_sec ? ui->cur_sec - 1 : 0;

	for (uint64_t t = last >= LOOMD_WEBUI_SECONDS ? last - LOOMD_WEBUI_SECONDS + 1 : 1;
	     ui->cur_sec && t <= last; t++) {
		const struct ui_second *x = &series[t % LOOMD_WEBUI_SECONDS];

		if (x->sec != t || x->n == 0)
			continue;
		json_array_append_new(a, json_pack("{s:I, s:I, s:f, s:f}", "t", (json_int_t)t, "n",
						   (json_int_t)x->n, "p50_us", x->p50 * 1e6,
						   "p99_us", x->p99 * 1e6));
	}
	return a;
}

/* /api/v1/decisions: the recent decisions, newest first, and the per-second series. */
static json_t *decisions_json(const struct loomd_webui *ui)
{
	json_t *recent = json_array();

	for (uint32_t i = 0; i < ui->nrecent; i++) {
		const struct ui_recent *r =
			&ui->recent[(ui->recent_at + LOOMD_WEBUI_RECENT - 1 - i) %
				    LOOMD_WEBUI_RECENT];

		json_array_append_new(recent,
				      json_pack("{s:f, s:f, s:i}", "t", (double)r->wall_ns * 1e-9,
						"decide_us", (double)r->decide_ns * 1e-3, "coflows",
						(int)r->coflows));
	}
	return json_pack("{s:f, s:s, s:I, s:o, s:o, s:o}", "now",
			 (double)loom_clock_wall_ns() * 1e-9, "policy",
			 loomd_sched_policy(ui->srv->sched), "decisions",
			 (json_int_t)loomd_sched_decisions(ui->srv->sched), "recent", recent,
			 "decide", series_json(ui, ui->decide_s), "push",
			 series_json(ui, ui->push_s));
}

static unsigned status_of(int r)
{
	switch (-r) {
	case EINVAL:
		return MHD_HTTP_BAD_REQUEST;
	case ENOENT:
		return MHD_HTTP_NOT_FOUND;
	case ENOMEM:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

/* POST /api/v1/policy: {"policy": "SPEC"} -> set-policy SPEC, run as "web UI, PEER". */
static int run_set_policy(struct loomd_webui *ui, struct ui_req *q, json_t **ret,
			  struct loom_err *err)
{
	char spec[SPEC_MAX], who[96];
	const char *argv[1] = {spec};
	int r;

	r = loomd_webui_policy_body(q->body, q->body_len, spec, sizeof(spec), err);
	if (r < 0)
		return r;
	snprintf(who, sizeof(who), "web UI, %s", q->peer);
	ui->srv->actor = who;
	r = loomd_admin_call(ui->srv, "set-policy", 1, argv, ret, err);
	ui->srv->actor = NULL;
	return r;
}

/* Runs q on the loop; fills its answer (not yet published). */
static void run_req(struct loomd_webui *ui, struct ui_req *q)
{
	struct loom_err err = {{0}};
	const char *argv[1] = {q->arg};
	json_t *res = NULL, *e;
	int r;

	if (!strcmp(q->cmd, "decisions")) {
		res = decisions_json(ui);
		r = res ? 0 : -ENOMEM;
	} else if (!strcmp(q->cmd, "set-policy-body")) {
		r = run_set_policy(ui, q, &res, &err);
	} else {
		r = loomd_admin_call(ui->srv, q->cmd, q->argc, argv, &res, &err);
	}
	if (r == 0 && res) {
		q->status = MHD_HTTP_OK;
		q->text = json_dumps(res, JSON_COMPACT);
	} else {
		q->status = status_of(r < 0 ? r : -ENOMEM);
		/* a write's refusal (a policy that does not exist, a bad option) is the request's */
		if (q->body && r != -ENOMEM)
			q->status = MHD_HTTP_BAD_REQUEST;
		e = json_pack("{s:s}", "error",
			      err.msg[0] ? err.msg : strerror(r < 0 ? -r : ENOMEM));
		q->text = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
	}
	json_decref(res);
}

static void ui_req_free(struct ui_req *q)
{
	free(q->body);
	free(q->text);
	free(q);
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loomd_webui *ui = arg;
	struct ui_req *q;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("web UI: eventfd: %s", strerror(errno));
	for (;;) {
		pthread_mutex_lock(&ui->lock);
		q = ui->queue;
		if (q)
			ui->queue = q->next;
		pthread_mutex_unlock(&ui->lock);
		if (!q)
			return;
		run_req(ui, q);
		pthread_mutex_lock(&ui->lock);
		q->done = true;
		if (q->abandoned) {
			pthread_mutex_unlock(&ui->lock);
			ui_req_free(q);
			continue;
		}
		pthread_cond_broadcast(&ui->cond);
		pthread_mutex_unlock(&ui->lock);
	}
}

void loomd_webui_shutdown(struct loomd_webui *ui)
{
	if (!ui)
		return;
	pthread_mutex_lock(&ui->lock);
	ui->closing = true;
	pthread_cond_broadcast(&ui->cond);
	pthread_mutex_unlock(&ui->lock);
}

/* ---- HTTP thread ---------------------------------------------------------------------- */

/*
 * Queues q for the loop and waits for its answer. Returns true with q
 * answered (q is the caller's again), or false when the loop did not answer
 * in time or is going away (q then belongs to the loop or is freed).
 */
static bool call_loop(struct loomd_webui *ui, struct ui_req *q)
{
	struct timespec until;
	uint64_t one = 1;
	bool answered;
	int r = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += LOOMD_WEBUI_WAIT_MS / 1000;
	until.tv_nsec += (long)(LOOMD_WEBUI_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ui->lock);
	if (ui->closing) {
		pthread_mutex_unlock(&ui->lock);
		ui_req_free(q);
		return false;
	}
	/* at the tail: answers come in the order asked */
	{
		struct ui_req **pp = &ui->queue;

		while (*pp)
			pp = &(*pp)->next;
		*pp = q;
	}
	if (write(ui->efd, &one, sizeof(one)) < 0)
		log_warn("web UI: eventfd: %s", strerror(errno));
	while (!q->done && !ui->closing && r == 0)
		r = pthread_cond_timedwait(&ui->cond, &ui->lock, &until);
	answered = q->done;
	if (!answered) {
		/* still queued: take it out; being run: the loop frees it */
		struct ui_req **pp = &ui->queue;

		while (*pp && *pp != q)
			pp = &(*pp)->next;
		if (*pp) {
			*pp = q->next;
			pthread_mutex_unlock(&ui->lock);
			ui_req_free(q);
			return false;
		}
		q->abandoned = true;
	}
	pthread_mutex_unlock(&ui->lock);
	return answered;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     const void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; "
				"frame-ancestors 'none'");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD, POST");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"loomd\"");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A JSON error {"error": msg}; msg is ours (never the request's bytes). */
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "{\"error\":\"%s\"}", msg);

	return reply(conn, status, "application/json", buf,
		     n < 0                   ? 0 :
		     (size_t)n < sizeof(buf) ? (size_t)n :
					       sizeof(buf) - 1,
		     MHD_RESPMEM_MUST_COPY);
}

/* The peer's address, for the log of writes. */
static void peer_of(struct MHD_Connection *conn, char *buf, size_t size)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[64];

	snprintf(buf, size, "peer unknown");
	if (ci && ci->client_addr &&
	    getnameinfo(ci->client_addr,
			ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
								 sizeof(struct sockaddr_in),
			host, sizeof(host), NULL, 0, NI_NUMERICHOST) == 0)
		snprintf(buf, size, "%s", host);
}

/* Runs q on the loop and sends its answer; q is consumed. */
static enum MHD_Result api_answer(struct loomd_webui *ui, struct MHD_Connection *conn,
				  struct ui_req *q)
{
	enum MHD_Result ret;

	if (!call_loop(ui, q))
		return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "loomd did not answer in time; try again");
	if (!q->text)
		ret = reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	else
		ret = reply(conn, q->status, "application/json", q->text, strlen(q->text),
			    MHD_RESPMEM_MUST_COPY);
	ui_req_free(q);
	return ret;
}

/* "123" (1 to 20 digits, fits 64 bits) -> true. */
static bool is_id(const char *s)
{
	unsigned long long v;
	size_t n = strlen(s);

	if (n == 0 || n > 20 || strspn(s, "0123456789") != n)
		return false;
	return loom_parse_u64(s, &v) == 0;
}

static const struct {
	const char *path, *cmd;
} api_gets[] = {
	{"/api/v1/status", "stats"},        {"/api/v1/jobs", "jobs"},
	{"/api/v1/coflows", "coflows"},     {"/api/v1/agents", "agents"},
	{"/api/v1/unknown", "unknown"},     {"/api/v1/policy", "policy"},
	{"/api/v1/policies", "policies"},   {"/api/v1/priorities", "priorities"},
	{"/api/v1/decisions", "decisions"}, {"/api/v1/tenants", "tenants"},
};

static const struct loomd_webui_asset *asset_of(const char *url)
{
	if (!strcmp(url, "/"))
		url = "/index.html";
	for (size_t i = 0; i < loomd_webui_nassets; i++)
		if (!strcmp(url, loomd_webui_assets[i].path))
			return &loomd_webui_assets[i];
	return NULL;
}

static int route_error(struct loomd_webui_route *r, unsigned status, const char *msg)
{
	r->kind = LOOMD_WEBUI_ERROR;
	r->status = status;
	r->error = msg;
	return 0;
}

int loomd_webui_route(const char *method, const char *url, struct loomd_webui_route *r)
{
	static const char job_prefix[] = "/api/v1/jobs/";
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool api = !strncmp(url, "/api/", 5);

	memset(r, 0, sizeof(*r));
	if (strlen(url) > LOOMD_WEBUI_MAX_URL)
		return route_error(r, 414, "URL too long");
	if (api && !strcmp(method, "POST")) {
		if (strcmp(url, "/api/v1/policy") != 0)
			return route_error(r, 404, "no such API endpoint to POST to (docs/api.md)");
		r->kind = LOOMD_WEBUI_POST;
		r->cmd = "set-policy-body";
		return 0;
	}
	if (!get)
		return route_error(r, 405, "method not allowed");
	if (!api) {
		r->asset = asset_of(url);
		if (!r->asset)
			return route_error(r, 404,
					   "not found; the UI is at /, the API at /api/v1/");
		r->kind = LOOMD_WEBUI_ASSET;
		r->status = 200;
		return 0;
	}
	r->kind = LOOMD_WEBUI_API;
	for (size_t i = 0; i < ARRAY_SIZE(api_gets); i++)
		if (!strcmp(url, api_gets[i].path)) {
			r->cmd = api_gets[i].cmd;
			return 0;
		}
	if (!strncmp(url, job_prefix, sizeof(job_prefix) - 1)) {
		const char *id = url + sizeof(job_prefix) - 1;

		if (!is_id(id))
			return route_error(r, 400, "a job id is a decimal number (0 to 2^64-1)");
		r->cmd = "job";
		snprintf(r->arg, sizeof(r->arg), "%s", id);
		return 0;
	}
	return route_error(r, 404, "no such API endpoint (docs/api.md)");
}

int loomd_webui_policy_body(const char *body, size_t len, char *spec, size_t size,
			    struct loom_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	const char *v = j ? json_string_value(json_object_get(j, "policy")) : NULL;
	int r = 0;

	if (!j)
		r = loom_err_set(err, EINVAL, "body: not JSON (%s at %d:%d)", je.text, je.line,
				 je.column);
	else if (!json_is_object(j) || !v || json_object_size(j) != 1)
		r = loom_err_set(err, EINVAL, "body: expected {\"policy\": \"SPEC\"}");
	else if (strlen(v) >= size || strlen(v) != json_string_length(json_object_get(j, "policy")))
		r = loom_err_set(err, EINVAL, "body: the policy is too long or holds a NUL");
	else
		snprintf(spec, size, "%s", v);
	json_decref(j);
	return r;
}

/* Constant-time comparison of the Authorization header with "Bearer TOKEN". */
static bool authorized(const struct loomd_webui *ui, const char *auth)
{
	static const char prefix[] = "Bearer ";
	unsigned char diff = 0;
	size_t n = sizeof(ui->token) - 1;

	if (!auth || strncmp(auth, prefix, sizeof(prefix) - 1) != 0)
		return false;
	auth += sizeof(prefix) - 1;
	if (strlen(auth) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(auth[i] ^ ui->token[i]);
	return diff == 0;
}

static enum MHD_Result api_post(struct loomd_webui *ui, struct MHD_Connection *conn,
				const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct ui_upload *up = *req_cls;
	struct ui_req *q;

	if (!up) {
		/* first call, headers only: refuse before reading any body */
		const char *len = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							      MHD_HTTP_HEADER_CONTENT_LENGTH);

		if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_AUTHORIZATION))
			return reply_error(conn, MHD_HTTP_UNAUTHORIZED,
					   "writes need Authorization: Bearer TOKEN "
					   "(loomctl web-token)");
		if (!authorized(ui, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								MHD_HTTP_HEADER_AUTHORIZATION)))
			return reply_error(conn, MHD_HTTP_FORBIDDEN, "wrong token");
		if (len && strtoull(len, NULL, 10) > LOOMD_WEBUI_MAX_BODY)
			return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					   "request body over 4096 bytes");
		up = calloc(1, sizeof(*up));
		if (!up)
			return MHD_NO;
		*req_cls = up;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (up->len + *upload_data_size > LOOMD_WEBUI_MAX_BODY)
			up->too_big = true;
		else {
			memcpy(up->buf + up->len, upload_data, *upload_data_size);
			up->len += *upload_data_size;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (up->too_big)
		return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
				   "request body over 4096 bytes");
	q = calloc(1, sizeof(*q));
	if (!q)
		return MHD_NO;
	q->body = malloc(up->len + 1);
	if (!q->body) {
		free(q);
		return MHD_NO;
	}
	memcpy(q->body, up->buf, up->len);
	q->body[up->len] = '\0';
	q->body_len = up->len;
	q->cmd = "set-policy-body";
	peer_of(conn, q->peer, sizeof(q->peer));
	return api_answer(ui, conn, q);
}

static int http_route(void *ctx, struct MHD_Connection *conn, const char *url, const char *method,
		      const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct loomd_webui *ui = ctx;
	struct loomd_webui_route r;
	struct ui_req *q;

	loomd_webui_route(method, url, &r);
	switch (r.kind) {
	case LOOMD_WEBUI_ASSET:
		return reply(conn, MHD_HTTP_OK, r.asset->type, r.asset->data, r.asset->len,
			     MHD_RESPMEM_PERSISTENT);
	case LOOMD_WEBUI_POST:
		return api_post(ui, conn, upload_data, upload_data_size, req_cls);
	case LOOMD_WEBUI_API:
		q = calloc(1, sizeof(*q));
		if (!q)
			return reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
		q->cmd = r.cmd;
		q->argc = r.arg[0] ? 1 : 0;
		snprintf(q->arg, sizeof(q->arg), "%s", r.arg);
		return api_answer(ui, conn, q);
	default:
		if (strncmp(url, "/api/", 5) != 0 && r.status == MHD_HTTP_NOT_FOUND)
			return reply(conn, r.status, "text/plain; charset=utf-8", r.error,
				     strlen(r.error), MHD_RESPMEM_PERSISTENT);
		return reply_error(conn, r.status, r.error);
	}
}

static void http_done(void *ctx, void *req_cls)
{
	(void)ctx;
	free(req_cls); /* a struct ui_upload */
}

/* ---- life ----------------------------------------------------------------------------- */

struct loomd_webui *loomd_webui_new(struct loomd_server *s, struct loomd_metrics_http *http,
				    struct loom_err *err)
{
	struct loomd_webui *ui = calloc(1, sizeof(*ui));
	unsigned char raw[TOKEN_BYTES];
	pthread_condattr_t ca;
	int r;

	if (!ui) {
		loom_err_set(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	ui->srv = s;
	ui->http = http;
	ui->efd = -1;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		r = errno ? errno : EIO;
		loom_err_set(err, r, "web UI: getrandom: %s", strerror(r));
		free(ui);
		errno = r;
		return NULL;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(ui->token + 2 * i, 3, "%02x", raw[i]);
	pthread_mutex_init(&ui->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ui->cond, &ca);
	pthread_condattr_destroy(&ca);
	ui->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ui->efd < 0) {
		r = errno;
		loom_err_set(err, r, "web UI: eventfd: %s", strerror(r));
		loomd_webui_free(ui);
		errno = r;
		return NULL;
	}
	ui->wake = event_new(s->base, ui->efd, EV_READ | EV_PERSIST, wake_cb, ui);
	if (!ui->wake || event_add(ui->wake, NULL) < 0) {
		loom_err_set(err, ENOMEM, "web UI: cannot add its event");
		loomd_webui_free(ui);
		errno = ENOMEM;
		return NULL;
	}
	loomd_hist_init(&ui->decide_prev);
	loomd_hist_init(&ui->push_prev);
	loomd_metrics_http_route(http, http_route, http_done, ui);
	return ui;
}

struct loomd_webui *loomd_webui_free(struct loomd_webui *ui)
{
	if (!ui)
		return NULL;
	if (ui->wake)
		event_free(ui->wake);
	if (ui->efd >= 0)
		close(ui->efd);
	while (ui->queue) {
		struct ui_req *q = ui->queue;

		ui->queue = q->next;
		ui_req_free(q);
	}
	pthread_cond_destroy(&ui->cond);
	pthread_mutex_destroy(&ui->lock);
	explicit_bzero(ui->token, sizeof(ui->token));
	free(ui);
	return NULL;
}
