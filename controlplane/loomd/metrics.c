/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/metrics: latency histograms, the Prometheus text
 * builder and the /metrics HTTP endpoint. See metrics.h.
 */
#include "controlplane/loomd/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"

/* ---- histogram ------------------------------------------------------------------------ */

static const double default_bounds[] = {
	10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3,
	10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,
};

void loomd_hist_init(struct loomd_hist *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->bounds, default_bounds, sizeof(default_bounds));
	h->nbounds = ARRAY_SIZE(default_bounds);
}

int loomd_hist_init_bounds(struct loomd_hist *h, const double *bounds, unsigned n)
{
	if (!bounds || n == 0 || n > LOOMD_HIST_MAX_BOUNDS)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
			return -EINVAL;
	memset(h, 0, sizeof(*h));
	memcpy(h->bounds, bounds, n * sizeof(*bounds));
	h->nbounds = n;
	return 0;
}

void loomd_hist_reset(struct loomd_hist *h)
{
	memset(h->counts, 0, sizeof(h->counts));
	h->sum = 0;
	h->count = 0;
}

void loomd_hist_observe(struct loomd_hist *h, double seconds)
{
	unsigned lo = 0, hi = h->nbounds;

	if (isnan(seconds))
		return;
	if (seconds < 0)
		seconds = 0;
	/* The first bucket whose bound is >= seconds; nbounds is +Inf. */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (h->bounds[mid] < seconds)
			lo = mid + 1;
		else
			hi = mid;
	}
	h->counts[lo]++;
	h->sum += seconds;
	h->count++;
}

double loomd_hist_quantile(const struct loomd_hist *h, double q)
{
	double rank, start, in_bucket;
	uint64_t below = 0;
	unsigned b;

	if (h->count == 0)
		return 0;
	if (!(q > 0))
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)h->count;
	/* The first non-empty bucket whose cumulative count reaches the rank. */
	for (b = 0; b <= h->nbounds; b++) {
		uint64_t cum = below + h->counts[b];

		if (cum > 0 && (double)cum >= rank)
			break;
		below = cum;
	}
	if (b >= h->nbounds)
		return h->bounds[h->nbounds - 1];
	start = b == 0 ? 0 : h->bounds[b - 1];
	if (b == 0 && h->bounds[0] <= 0)
		return h->bounds[0];
	in_bucket = (double)h->counts[b];
	rank -= (double)below;
	if (rank < 0)
		rank = 0;
	return start + (h->bounds[b] - start) * (rank / in_bucket);
}

/* ---- Prometheus text format ----------------------------------------------------------- */

enum prom_type {
	PROM_NONE = 0,
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
};

static const char *const prom_type_names[] = {
	[PROM_COUNTER] = "counter",
	[PROM_GAUGE] = "gauge",
	[PROM_HISTOGRAM] = "histogram",
};

void loomd_prom_init(struct loomd_prom *p)
{
	memset(p, 0, sizeof(*p));
}

void loomd_prom_done(struct loomd_prom *p)
{
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

const char *loomd_prom_text(const struct loomd_prom *p)
{
	return p->buf ? p->buf : "";
}

size_t loomd_prom_len(const struct loomd_prom *p)
{
	return p->len;
}

int loomd_prom_error(const struct loomd_prom *p)
{
	return p->err;
}

static bool metric_name_valid(const char *s)
{
	if (!s || !*s)
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     c == ':';

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

static bool label_name_valid(const char *s)
{
	if (!s || !*s || (s[0] == '_' && s[1] == '_')) /* "__" is reserved */
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

/* Makes room for n more bytes and the NUL. */
static int prom_reserve(struct loomd_prom *p, size_t n)
{
	size_t cap;
	char *buf;

	if (p->len + n + 1 <= p->cap)
		return 0;
	cap = p->cap ? p->cap : 4096;
	while (cap < p->len + n + 1)
		cap *= 2;
	buf = realloc(p->buf, cap);
	if (!buf)
		return -ENOMEM;
	p->buf = buf;
	p->cap = cap;
	return 0;
}

__attribute__((format(printf, 2, 3))) static int prom_printf(struct loomd_prom *p, const char *fmt,
							     ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (prom_reserve(p, (size_t)n) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
	va_end(ap);
	p->len += (size_t)n;
	return 0;
}

static int prom_putc(struct loomd_prom *p, char c)
{
	if (prom_reserve(p, 1) < 0)
		return -ENOMEM;
	p->buf[p->len++] = c;
	p->buf[p->len] = '\0';
	return 0;
}

/* Writes s escaped: backslash and newline always, the double quote in label values. */
static int prom_escaped(struct loomd_prom *p, const char *s, bool quote)
{
	int r = 0;

	for (; *s && r == 0; s++) {
		if (*s == '\\')
			r = prom_printf(p, "\\\\");
		else if (*s == '\n')
			r = prom_printf(p, "\\n");
		else if (*s == '"' && quote)
			r = prom_printf(p, "\\\"");
		else
			r = prom_putc(p, *s);
	}
	return r;
}

/*
 * Formats a sample value as Prometheus reads it (Go's ParseFloat): integers
 * exactly, others in the shortest form that reads back the same, NaN, +Inf
 * and -Inf by name.
 */
static void prom_format_value(char *buf, size_t size, double v)
{
	if (isnan(v)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, size, "0");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, size, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Fails the call: rolls the text back to mark; -ENOMEM becomes sticky. */
static int prom_fail(struct loomd_prom *p, size_t mark, int r)
{
	p->len = mark;
	if (p->buf)
		p->buf[mark] = '\0';
	if (r == -ENOMEM)
		p->err = r;
	return r;
}

/*
 * Starts family name of the given type (HELP and TYPE lines), or continues it
 * when it is the last one and may take more samples. Returns 0, 1 when
 * continuing, or -errno with nothing written.
 */
static int prom_family(struct loomd_prom *p, const char *name, const char *help,
		       enum prom_type type, bool continuable)
{
	char *copy;
	int r = 0;

	if (p->err)
		return p->err;
	if (!metric_name_valid(name))
		return -EINVAL;
	if (p->nnames > 0 && !strcmp(p->names[p->nnames - 1], name)) {
		if (p->type != (int)type)
			return -EINVAL;
		return continuable ? 1 : -EEXIST;
	}
	for (size_t i = 0; i < p->nnames; i++)
		if (!strcmp(p->names[i], name))
			return -EEXIST;
	if (p->nnames == p->cap_names) {
		size_t cap = p->cap_names ? 2 * p->cap_names : 32;
		char **names = realloc(p->names, cap * sizeof(*names));

		if (!names)
			return -ENOMEM;
		p->names = names;
		p->cap_names = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	if (help) {
		r = prom_printf(p, "# HELP %s ", name);
		if (r == 0)
			r = prom_escaped(p, help, false);
		if (r == 0)
			r = prom_putc(p, '\n');
	}
	if (r == 0)
		r = prom_printf(p, "# TYPE %s %s\n", name, prom_type_names[type]);
	if (r < 0) {
		free(copy);
		return r;
	}
	p->names[p->nnames++] = copy;
	p->type = (int)type;
	return 0;
}

static int prom_simple(struct loomd_prom *p, const char *name, const char *help,
		       enum prom_type type, double value)
{
	size_t mark = p->len;
	char v[40];
	int r;

	r = prom_family(p, name, help, type, false);
	if (r < 0)
		return prom_fail(p, mark, r);
	prom_format_value(v, sizeof(v), value);
	r = prom_printf(p, "%s %s\n", name, v);
	if (r < 0) {
		/* Forget the family too: it was added by this call. */
		free(p->names[--p->nnames]);
		return prom_fail(p, mark, r);
	}
	return 0;
}

int loomd_prom_counter(struct loomd_prom *p, const char *name, const char *help, double value)
{
	return prom_simple(p, name, help, PROM_COUNTER, value);
}

int loomd_prom_gauge(struct loomd_prom *p, const char *name, const char *help, double value)
{
	return prom_simple(p, name, help, PROM_GAUGE, value);
}

int loomd_prom_gauge_labeled(struct loomd_prom *p, const char *name, const char *help,
			     const char *label_name, const char *label_value, double value)
{
	size_t mark = p->len;
	char v[40];
	int r, fam;

	if (!label_name_valid(label_name) || !label_value)
		return -EINVAL;
	fam = prom_family(p, name, help, PROM_GAUGE, true);
	if (fam < 0)
		return prom_fail(p, mark, fam);
	prom_format_value(v, sizeof(v), value);
	r = prom_printf(p, "%s{%s=\"", name, label_name);
	if (r == 0)
		r = prom_escaped(p, label_value, true);
	if (r == 0)
		r = prom_printf(p, "\"} %s\n", v);
	if (r < 0) {
		if (fam == 0)
			free(p->names[--p->nnames]);
		return prom_fail(p, mark, r);
	}
	return 0;
}

int loomd_prom_hist(struct loomd_prom *p, const char *name, const char *help,
		    const struct loomd_hist *h)
{
	size_t mark = p->len;
	uint64_t cum = 0;
	char v[40];
	int r;

	if (!h || h->nbounds == 0 || h->nbounds > LOOMD_HIST_MAX_BOUNDS)
		return -EINVAL;
	r = prom_family(p, name, help, PROM_HISTOGRAM, false);
	if (r < 0)
		return prom_fail(p, mark, r);
	for (unsigned i = 0; r == 0 && i < h->nbounds; i++) {
		cum += h->counts[i];
		prom_format_value(v, sizeof(v), h->bounds[i]);
		r = prom_printf(p, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, v, cum);
	}
	cum += h->counts[h->nbounds];
	prom_format_value(v, sizeof(v), h->sum);
	if (r == 0)
		r = prom_printf(p, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
	if (r == 0)
		r = prom_printf(p, "%s_sum %s\n", name, v);
	if (r == 0)
		r = prom_printf(p, "%s_count %" PRIu64 "\n", name, h->count);
	if (r < 0) {
		free(p->names[--p->nnames]);
		return prom_fail(p, mark, r);
	}
	return 0;
}

/* ---- HTTP endpoint -------------------------------------------------------------------- */

#define HTTP_CONTENT_TYPE "text/plain; version=0.0.4"
#define HTTP_CONN_LIMIT   64u
#define HTTP_TIMEOUT_S    10u

struct loomd_metrics_http {
	struct MHD_Daemon *daemon;
	uint16_t port;
	pthread_mutex_t lock; /* guards text, len and the route */
	char *text;
	size_t len;
	loomd_http_route_fn route; /* other paths (webui.h); NULL: 404 */
	loomd_http_done_fn route_done;
	void *route_ctx;
};

static enum MHD_Result http_reply(struct MHD_Connection *conn, unsigned status, const char *body,
				  const char *allow)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result http_handler(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version,
				    const char *upload_data, size_t *upload_data_size,
				    void **req_cls)
{
	struct loomd_metrics_http *h = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	loomd_http_route_fn route;
	void *route_ctx;

	pthread_mutex_lock(&h->lock);
	route = h->route;
	route_ctx = h->route_ctx;
	pthread_mutex_unlock(&h->lock);
	if (route && strcmp(url, "/metrics") != 0)
		return route(route_ctx, conn, url, method, upload_data, upload_data_size, req_cls) ?
			       MHD_YES :
			       MHD_NO;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
				  "GET, HEAD");
	if (strcmp(url, "/metrics") != 0)
		return http_reply(conn, MHD_HTTP_NOT_FOUND, "not found; try /metrics\n", NULL);
	pthread_mutex_lock(&h->lock);
	resp = MHD_create_response_from_buffer(h->len, h->text ? h->text : (char *)"",
					       MHD_RESPMEM_MUST_COPY);
	pthread_mutex_unlock(&h->lock);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, HTTP_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			   enum MHD_RequestTerminationCode toe)
{
	struct loomd_metrics_http *h = cls;
	loomd_http_done_fn done;
	void *ctx;

	(void)conn;
	(void)toe;
	if (!*req_cls)
		return;
	pthread_mutex_lock(&h->lock);
	done = h->route_done;
	ctx = h->route_ctx;
	pthread_mutex_unlock(&h->lock);
	if (done)
		done(ctx, *req_cls);
	*req_cls = NULL;
}

/* Why MHD could not listen on ai: binds a socket there ourselves to learn errno. */
static int http_diagnose(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	int one = 1, r = 0;

	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		r = errno;
	close(fd);
	return r;
}

struct loomd_metrics_http *loomd_metrics_http_start(const char *bind_addr, uint16_t port,
						    struct loom_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
			*res = NULL;
	const char *host = bind_addr && bind_addr[0] ? bind_addr : "0.0.0.0";
	const union MHD_DaemonInfo *info;
	struct loomd_metrics_http *h;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	char port_s[8];
	int r, code;

	h = calloc(1, sizeof(*h));
	if (!h) {
		loom_err_set(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	r = pthread_mutex_init(&h->lock, NULL);
	if (r != 0) {
		free(h);
		loom_err_set(err, r, "pthread_mutex_init: %s", strerror(r));
		errno = r;
		return NULL;
	}
	snprintf(port_s, sizeof(port_s), "%u", (unsigned)port);
	r = getaddrinfo(host, port_s, &hints, &res);
	if (r != 0) {
		code = r == EAI_SYSTEM ? errno : EINVAL;
		loom_err_set(err, code, "metrics address '%s': %s", host, gai_strerror(r));
		goto fail;
	}
	if (res->ai_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	h->daemon = MHD_start_daemon(flags, port, NULL, NULL, http_handler, h, MHD_OPTION_SOCK_ADDR,
				     res->ai_addr, MHD_OPTION_CONNECTION_LIMIT, HTTP_CONN_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S,
				     MHD_OPTION_NOTIFY_COMPLETED, http_completed, h,
				     MHD_OPTION_END);
	if (!h->daemon) {
		code = http_diagnose(res);
		if (code)
			loom_err_set(err, code, "cannot serve metrics on %s port %u: %s", host,
				     (unsigned)port, strerror(code));
		else
			loom_err_set(err, EIO, "cannot start the metrics HTTP server on %s port %u",
				     host, (unsigned)port);
		code = code ? code : EIO;
		goto fail;
	}
	info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info && info->port ? info->port : port;
	freeaddrinfo(res);
	return h;
fail:
	if (res)
		freeaddrinfo(res);
	pthread_mutex_destroy(&h->lock);
	free(h);
	errno = code;
	return NULL;
}

uint16_t loomd_metrics_http_port(const struct loomd_metrics_http *h)
{
	return h->port;
}

int loomd_metrics_http_publish(struct loomd_metrics_http *h, const char *text, size_t len)
{
	char *copy = malloc(len + 1), *old;

	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&h->lock);
	old = h->text;
	h->text = copy;
	h->len = len;
	pthread_mutex_unlock(&h->lock);
	free(old);
	return 0;
}

void loomd_metrics_http_route(struct loomd_metrics_http *h, loomd_http_route_fn fn,
			      loomd_http_done_fn done, void *ctx)
{
	pthread_mutex_lock(&h->lock);
	h->route = fn;
	h->route_done = done;
	h->route_ctx = ctx;
	pthread_mutex_unlock(&h->lock);
}

struct loomd_metrics_http *loomd_metrics_http_stop(struct loomd_metrics_http *h)
{
	if (!h)
		return NULL;
	MHD_stop_daemon(h->daemon);
	pthread_mutex_destroy(&h->lock);
	free(h->text);
	free(h);
	return NULL;
}
