/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/metrics: what loomd measures and how it exposes it.
 *
 *   loomd_hist          a fixed-bucket latency histogram (seconds), with the
 *                    Prometheus-style quantile estimate; observing never
 *                    allocates, locks or logs.
 *   loomd_prom          a builder of Prometheus text exposition format 0.0.4.
 *   loomd_metrics_http  GET /metrics over HTTP (libmicrohttpd, its own thread).
 *
 * Threads: the daemon's loop thread owns every counter and histogram and is
 * the only one to touch loomd_hist and loomd_prom. It renders the text and hands a
 * copy to the HTTP server with loomd_metrics_http_publish(); the HTTP thread
 * serves the latest copy and never sees the daemon's state.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_METRICS_H
#define LOOM_CONTROLPLANE_LOOMD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

/* ---- histogram ------------------------------------------------------------------------ */

/* Most finite bucket bounds a histogram can have (the +Inf bucket is extra). */
#define LOOMD_HIST_MAX_BOUNDS 32

/*
 * counts[i] counts the observations v with bounds[i-1] < v <= bounds[i]
 * (Prometheus "le" semantics); counts[nbounds] those above the last bound
 * (the +Inf bucket). Counts are per bucket, not cumulative.
 */
struct loomd_hist {
	double bounds[LOOMD_HIST_MAX_BOUNDS]; /* upper bounds in seconds, strictly ascending */
	unsigned nbounds;
	uint64_t counts[LOOMD_HIST_MAX_BOUNDS + 1];
	double sum;     /* of the observed values, seconds */
	uint64_t count; /* observations */
};

/*
 * Empties h and gives it the default ladder: 10us 25us 50us 100us 250us
 * 500us 1ms 2.5ms 5ms 10ms 25ms 50ms 100ms 250ms 500ms 1s 2.5s, and +Inf.
 */
void loomd_hist_init(struct loomd_hist *h);

/*
 * Empties h and gives it n custom bounds (seconds, finite, strictly
 * ascending, 1 <= n <= LOOMD_HIST_MAX_BOUNDS; copied). Returns 0 or -EINVAL
 * (h untouched).
 */
int loomd_hist_init_bounds(struct loomd_hist *h, const double *bounds, unsigned n);

/* Forgets every observation, keeping the bounds. */
void loomd_hist_reset(struct loomd_hist *h);

/* Records one observation (seconds); negative values count as 0, NaN is ignored. */
void loomd_hist_observe(struct loomd_hist *h, double seconds);

/*
 * Estimates the q-quantile (q clamped to [0, 1]) as Prometheus'
 * histogram_quantile() does: finds the bucket holding rank q*count and
 * interpolates linearly inside it (the first bucket starts at 0). Ranks in
 * the +Inf bucket return the last finite bound. Returns 0 when h is empty.
 */
double loomd_hist_quantile(const struct loomd_hist *h, double q);

/* ---- Prometheus text format ----------------------------------------------------------- */

/*
 * A growing buffer of exposition text. Each family's "# HELP" and "# TYPE"
 * lines are written once, by the first call for its name; calling
 * loomd_prom_gauge_labeled() again with the same name right after adds a
 * sample to that family. A family can not be reopened after another one
 * was started (the format forbids it). Every adding function writes all of
 * its lines or none, and returns 0 or -errno:
 *   -EINVAL  a bad metric or label name, or the same name with another type;
 *   -EEXIST  the family was written before and another one came since;
 *   -ENOMEM  (sticky: later calls fail the same way; the text stays valid).
 */
struct loomd_prom {
	char *buf; /* NUL-terminated text, owned; NULL until something is written */
	size_t len, cap;
	char **names; /* families written so far, owned */
	size_t nnames, cap_names;
	int type; /* of the last family */
	int err;  /* sticky -ENOMEM */
};

void loomd_prom_init(struct loomd_prom *p);
void loomd_prom_done(struct loomd_prom *p);

/* The text so far (owned by p, valid until the next call on p; "" when empty). */
const char *loomd_prom_text(const struct loomd_prom *p);
size_t loomd_prom_len(const struct loomd_prom *p);

/* 0, or the sticky -ENOMEM of an earlier call. */
int loomd_prom_error(const struct loomd_prom *p);

/* name: [a-zA-Z_:][a-zA-Z0-9_:]*; help: any text (escaped), or NULL for no HELP line. */
int loomd_prom_counter(struct loomd_prom *p, const char *name, const char *help, double value);
int loomd_prom_gauge(struct loomd_prom *p, const char *name, const char *help, double value);

/* A gauge sample name{label_name="label_value"} value; label_value is escaped. */
int loomd_prom_gauge_labeled(struct loomd_prom *p, const char *name, const char *help,
			     const char *label_name, const char *label_value, double value);

/* name_bucket{le="..."} (cumulative, ending with le="+Inf"), name_sum and name_count. */
int loomd_prom_hist(struct loomd_prom *p, const char *name, const char *help,
		    const struct loomd_hist *h);

/* ---- HTTP endpoint -------------------------------------------------------------------- */

struct loomd_metrics_http;

/*
 * Serves GET (and HEAD) /metrics on bind_addr:port from an internal thread:
 * 200 with "Content-Type: text/plain; version=0.0.4" and the text last
 * published (empty before the first publish); 404 for other paths; 405 for
 * other methods. bind_addr is an address ("127.0.0.1", "::", "0.0.0.0") or a
 * host name; NULL or "" means every address. port 0 picks a free port (see
 * loomd_metrics_http_port()). Returns the server (stop with
 * loomd_metrics_http_stop()), or NULL with errno set and a message in err.
 */
struct loomd_metrics_http *loomd_metrics_http_start(const char *bind_addr, uint16_t port,
						    struct loom_err *err);

/* The TCP port the server listens on. */
uint16_t loomd_metrics_http_port(const struct loomd_metrics_http *h);

/*
 * Replaces the served text with a copy of text[0..len-1] (text stays owned by
 * the caller). Thread-safe. Returns 0 or -ENOMEM (the old text stays).
 */
int loomd_metrics_http_publish(struct loomd_metrics_http *h, const char *text, size_t len);

struct MHD_Connection;

/*
 * The handler of every request for another path than /metrics: called as
 * libmicrohttpd's access handler is (MHD_AccessHandlerCallback; returns
 * MHD_YES or MHD_NO), on the HTTP thread. done, unless NULL, is called with
 * *req_cls when a request whose handler set it ends. Set it once, before any
 * such request matters (thread-safe). Without one, other paths get 404.
 */
typedef int (*loomd_http_route_fn)(void *ctx, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *upload_data,
				   size_t *upload_data_size, void **req_cls);
typedef void (*loomd_http_done_fn)(void *ctx, void *req_cls);
void loomd_metrics_http_route(struct loomd_metrics_http *h, loomd_http_route_fn fn,
			      loomd_http_done_fn done, void *ctx);

/* Stops the server (waits for its thread) and frees it. Accepts NULL; returns NULL. */
struct loomd_metrics_http *loomd_metrics_http_stop(struct loomd_metrics_http *h);

#endif
