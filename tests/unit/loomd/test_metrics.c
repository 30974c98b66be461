/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/metrics: histogram buckets and quantile
 * estimates on known data, the exact Prometheus text of a small case (and
 * its escaping, value forms and refusals), and the HTTP endpoint fetched
 * with a plain HTTP/1.0 socket client: status line, content type, body,
 * 404, 405, HEAD, republishing, concurrent scrapes, a busy port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "controlplane/loomd/metrics.h"
#include "tests/precond.h"

static void assert_near(double got, double want)
{
	if (fabs(got - want) > 1e-12 * fmax(1.0, fabs(want)))
		fail_msg("got %.17g, want %.17g", got, want);
}

/* ---- histogram ------------------------------------------------------------------------ */

static void test_hist_buckets(void **state)
{
	struct loomd_hist h;

	loomd_hist_init(&h);
	assert_int_equal(h.nbounds, 17);
	assert_near(h.bounds[0], 10e-6);
	assert_near(h.bounds[6], 1e-3);
	assert_near(h.bounds[16], 2.5);

	loomd_hist_observe(&h, 5e-6);     /* bucket 0 */
	loomd_hist_observe(&h, 10e-6);    /* bucket 0: bounds are inclusive (le) */
	loomd_hist_observe(&h, 11e-6);    /* bucket 1 */
	loomd_hist_observe(&h, 1e-3);     /* bucket 6 */
	loomd_hist_observe(&h, 2.5);      /* bucket 16 */
	loomd_hist_observe(&h, 3.0);      /* +Inf */
	loomd_hist_observe(&h, -1.0);     /* clamped to 0: bucket 0 */
	loomd_hist_observe(&h, NAN);      /* ignored */
	loomd_hist_observe(&h, INFINITY); /* +Inf */
	assert_int_equal(h.count, 8);
	assert_int_equal(h.counts[0], 3);
	assert_int_equal(h.counts[1], 1);
	assert_int_equal(h.counts[6], 1);
	assert_int_equal(h.counts[16], 1);
	assert_int_equal(h.counts[17], 2);
	assert_true(isinf(h.sum));

	loomd_hist_reset(&h);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.counts[0], 0);
	assert_int_equal(h.nbounds, 17);
	loomd_hist_observe(&h, 0.25);
	assert_int_equal(h.counts[13], 1);
	assert_near(h.sum, 0.25);
}

static void test_hist_quantile(void **state)
{
	static const double bounds[] = {1, 2, 4};
	static const double bad1[] = {1, 1};
	static const double bad2[] = {2, 1};
	static const double bad3[] = {1, INFINITY};
	double many[LOOMD_HIST_MAX_BOUNDS + 1];
	struct loomd_hist h;

	loomd_hist_init(&h);
	assert_near(loomd_hist_quantile(&h, 0.5), 0); /* empty */

	assert_int_equal(loomd_hist_init_bounds(&h, bounds, 3), 0);
	/* 2 in (0,1], 6 in (1,2], 2 in (2,4] */
	loomd_hist_observe(&h, 0.5);
	loomd_hist_observe(&h, 1.0);
	for (int i = 0; i < 6; i++)
		loomd_hist_observe(&h, 1.5);
	loomd_hist_observe(&h, 3);
	loomd_hist_observe(&h, 3);
	assert_near(loomd_hist_quantile(&h, 0.5), 1.5); /* rank 5: 1 + 1 * 3/6 */
	assert_near(loomd_hist_quantile(&h, 0.1), 0.5); /* rank 1: 0 + 1 * 1/2 */
	assert_near(loomd_hist_quantile(&h, 0.2), 1.0); /* rank 2: end of bucket 0 */
	assert_near(loomd_hist_quantile(&h, 0.9), 3.0); /* rank 9: 2 + 2 * 1/2 */
	assert_near(loomd_hist_quantile(&h, 1.0), 4.0); /* rank 10 */
	assert_near(loomd_hist_quantile(&h, 0.0), 0.0); /* lower end of the first bucket */
	assert_near(loomd_hist_quantile(&h, -3), 0.0);  /* clamped */
	assert_near(loomd_hist_quantile(&h, 7), 4.0);   /* clamped */
	/* Ranks in +Inf report the last finite bound. */
	loomd_hist_observe(&h, 100);
	assert_near(loomd_hist_quantile(&h, 1.0), 4.0);
	assert_near(loomd_hist_quantile(&h, 0.5), 1 + 3.5 / 6); /* rank 5.5 */

	/* Empty leading buckets: q=0 starts at the first non-empty one. */
	assert_int_equal(loomd_hist_init_bounds(&h, bounds, 3), 0);
	loomd_hist_observe(&h, 3);
	assert_near(loomd_hist_quantile(&h, 0.0), 2.0);
	assert_near(loomd_hist_quantile(&h, 0.5), 3.0);

	/* The default ladder: 1000 observations of 300 us fall in (250us, 500us]. */
	loomd_hist_init(&h);
	for (int i = 0; i < 1000; i++)
		loomd_hist_observe(&h, 300e-6);
	assert_near(loomd_hist_quantile(&h, 0.5), 250e-6 + 250e-6 * 0.5);
	assert_near(loomd_hist_quantile(&h, 0.99), 250e-6 + 250e-6 * 0.99);
	assert_near(h.sum, 1000 * 300e-6);

	/* Bad ladders leave h alone. */
	assert_int_equal(loomd_hist_init_bounds(&h, bad1, 2), -EINVAL);
	assert_int_equal(loomd_hist_init_bounds(&h, bad2, 2), -EINVAL);
	assert_int_equal(loomd_hist_init_bounds(&h, bad3, 2), -EINVAL);
	assert_int_equal(loomd_hist_init_bounds(&h, bounds, 0), -EINVAL);
	for (int i = 0; i <= LOOMD_HIST_MAX_BOUNDS; i++)
		many[i] = i + 1;
	assert_int_equal(loomd_hist_init_bounds(&h, many, LOOMD_HIST_MAX_BOUNDS + 1), -EINVAL);
	assert_int_equal(h.count, 1000);
	assert_int_equal(loomd_hist_init_bounds(&h, many, LOOMD_HIST_MAX_BOUNDS), 0);
	loomd_hist_observe(&h, 1000);
	assert_int_equal(h.counts[LOOMD_HIST_MAX_BOUNDS], 1);
}

/* ---- text format ---------------------------------------------------------------------- */

static void test_prom_text(void **state)
{
	static const double bounds[] = {0.001, 0.5, 1};
	static const char want[] = "# HELP loom_requests_total Requests handled.\n"
				   "# TYPE loom_requests_total counter\n"
				   "loom_requests_total 42\n"
				   "# HELP loom_rss_bytes Resident \\\\ \"memory\"\\nsecond line\n"
				   "# TYPE loom_rss_bytes gauge\n"
				   "loom_rss_bytes 1.5\n"
				   "# HELP loom_agent_flows Flows per agent.\n"
				   "# TYPE loom_agent_flows gauge\n"
				   "loom_agent_flows{host=\"h1\"} 3\n"
				   "loom_agent_flows{host=\"we\\\"ird\\\\\\n\"} 4\n"
				   "# TYPE loom_up gauge\n"
				   "loom_up 1\n"
				   "# HELP loom_decide_seconds Decision latency.\n"
				   "# TYPE loom_decide_seconds histogram\n"
				   "loom_decide_seconds_bucket{le=\"0.001\"} 1\n"
				   "loom_decide_seconds_bucket{le=\"0.5\"} 3\n"
				   "loom_decide_seconds_bucket{le=\"1\"} 3\n"
				   "loom_decide_seconds_bucket{le=\"+Inf\"} 4\n"
				   "loom_decide_seconds_sum 2.5009765625\n"
				   "loom_decide_seconds_count 4\n";
	struct loomd_prom p;
	struct loomd_hist h;

	assert_int_equal(loomd_hist_init_bounds(&h, bounds, 3), 0);
	loomd_hist_observe(&h, 0.0009765625);
	loomd_hist_observe(&h, 0.25);
	loomd_hist_observe(&h, 0.25);
	loomd_hist_observe(&h, 2);

	loomd_prom_init(&p);
	assert_string_equal(loomd_prom_text(&p), "");
	assert_int_equal(loomd_prom_len(&p), 0);
	assert_int_equal(loomd_prom_counter(&p, "loom_requests_total", "Requests handled.", 42), 0);
	assert_int_equal(loomd_prom_gauge(&p, "loom_rss_bytes",
					  "Resident \\ \"memory\"\nsecond line", 1.5),
			 0);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_agent_flows", "Flows per agent.",
						  "host", "h1", 3),
			 0);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_agent_flows", "Flows per agent.",
						  "host", "we\"ird\\\n", 4),
			 0);
	assert_int_equal(loomd_prom_gauge(&p, "loom_up", NULL, 1), 0);
	assert_int_equal(loomd_prom_hist(&p, "loom_decide_seconds", "Decision latency.", &h), 0);
	assert_string_equal(loomd_prom_text(&p), want);
	assert_int_equal(loomd_prom_len(&p), strlen(want));

	/* Refusals write nothing. */
	assert_int_equal(loomd_prom_counter(&p, "9starts_with_digit", "x", 1), -EINVAL);
	assert_int_equal(loomd_prom_counter(&p, "has-dash", "x", 1), -EINVAL);
	assert_int_equal(loomd_prom_counter(&p, "", "x", 1), -EINVAL);
	assert_int_equal(loomd_prom_counter(&p, "loom_requests_total", "again", 1), -EEXIST);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_agent_flows", "x", "host", "h9", 1),
			 -EEXIST);
	assert_int_equal(loomd_prom_counter(&p, "loom_decide_seconds", "x", 1), -EINVAL);
	assert_int_equal(loomd_prom_hist(&p, "loom_decide_seconds", "x", &h), -EEXIST);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_new", "x", "__reserved", "v", 1),
			 -EINVAL);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_new", "x", "a:b", "v", 1), -EINVAL);
	assert_int_equal(loomd_prom_gauge_labeled(&p, "loom_new", "x", "ok", NULL, 1), -EINVAL);
	assert_string_equal(loomd_prom_text(&p), want);
	assert_int_equal(loomd_prom_error(&p), 0);
	loomd_prom_done(&p);
	assert_string_equal(loomd_prom_text(&p), "");
}

static void test_prom_values(void **state)
{
	static const char want[] = "# TYPE a gauge\na NaN\n"
				   "# TYPE b gauge\nb +Inf\n"
				   "# TYPE c gauge\nc -Inf\n"
				   "# TYPE d gauge\nd 0.1\n"
				   "# TYPE e gauge\ne 1e+20\n"
				   "# TYPE f gauge\nf 123456789012\n"
				   "# TYPE g gauge\ng 0\n"
				   "# TYPE h gauge\nh -2.5e-07\n"
				   "# TYPE i counter\ni 1.8446744073709552e+19\n"
				   "# TYPE j gauge\nj 0.30000000000000004\n"
				   "# TYPE ns:sub_total counter\nns:sub_total 7\n";
	struct loomd_prom p;

	loomd_prom_init(&p);
	assert_int_equal(loomd_prom_gauge(&p, "a", NULL, NAN), 0);
	assert_int_equal(loomd_prom_gauge(&p, "b", NULL, INFINITY), 0);
	assert_int_equal(loomd_prom_gauge(&p, "c", NULL, -INFINITY), 0);
	assert_int_equal(loomd_prom_gauge(&p, "d", NULL, 0.1), 0);
	assert_int_equal(loomd_prom_gauge(&p, "e", NULL, 1e20), 0);
	assert_int_equal(loomd_prom_gauge(&p, "f", NULL, 123456789012.0), 0);
	assert_int_equal(loomd_prom_gauge(&p, "g", NULL, -0.0), 0);
	assert_int_equal(loomd_prom_gauge(&p, "h", NULL, -2.5e-7), 0);
	assert_int_equal(loomd_prom_counter(&p, "i", NULL, 18446744073709551616.0), 0);
	assert_int_equal(loomd_prom_gauge(&p, "j", NULL, 0.1 + 0.2), 0);
	assert_int_equal(loomd_prom_counter(&p, "ns:sub_total", NULL, 7), 0);
	assert_string_equal(loomd_prom_text(&p), want);
	loomd_prom_done(&p);

	/* The default ladder's "le" labels. */
	{
		struct loomd_hist h;

		loomd_hist_init(&h);
		loomd_prom_init(&p);
		assert_int_equal(loomd_prom_hist(&p, "x_seconds", "x", &h), 0);
		assert_non_null(strstr(loomd_prom_text(&p),
				       "x_seconds_bucket{le=\"1e-05\"} 0\n"
				       "x_seconds_bucket{le=\"2.5e-05\"} 0\n"));
		assert_non_null(strstr(loomd_prom_text(&p), "x_seconds_bucket{le=\"0.0025\"} 0\n"));
		assert_non_null(strstr(loomd_prom_text(&p), "x_seconds_bucket{le=\"2.5\"} 0\n"
							    "x_seconds_bucket{le=\"+Inf\"} 0\n"
							    "x_seconds_sum 0\n"
							    "x_seconds_count 0\n"));
		loomd_prom_done(&p);
	}
}

/* ---- HTTP ----------------------------------------------------------------------------- */

struct http_resp {
	int status;
	char *content_type; /* NULL if absent */
	char *allow;
	char *body;
	size_t body_len;
};

static void http_resp_free(struct http_resp *r)
{
	free(r->content_type);
	free(r->allow);
	free(r->body);
}

static char *header_value(const char *head, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
		const char *line = l + 2, *end = strstr(line, "\r\n");

		if (!end || end == line)
			break;
		if (!strncasecmp(line, name, n) && line[n] == ':') {
			const char *v = line + n + 1;

			while (*v == ' ')
				v++;
			return strndup(v, (size_t)(end - v));
		}
	}
	return NULL;
}

/* Sends method path as HTTP/1.0 to 127.0.0.1:port and reads the response to EOF. */
static struct http_resp http_fetch(uint16_t port, const char *method, const char *path)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 5};
	struct http_resp r = {.status = -1};
	char req[256], *buf = NULL, *sep;
	size_t len = 0, cap = 0;
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			cap = cap ? 2 * cap : 131072;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0)
			fail_msg("recv: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (strncmp(buf, "HTTP/1.", 7) != 0 || sscanf(buf + 8, " %d", &r.status) != 1)
		fail_msg("bad status line: %.80s", buf);
	sep = strstr(buf, "\r\n\r\n");
	assert_non_null(sep);
	sep[2] = '\0';
	r.content_type = header_value(buf, "Content-Type");
	r.allow = header_value(buf, "Allow");
	r.body_len = len - (size_t)(sep + 4 - buf);
	r.body = malloc(r.body_len + 1);
	memcpy(r.body, sep + 4, r.body_len);
	r.body[r.body_len] = '\0';
	free(buf);
	return r;
}

static void test_http(void **state)
{
	struct loom_err err = {{0}};
	struct loomd_metrics_http *h = loomd_metrics_http_start("127.0.0.1", 0, &err);
	struct http_resp r;
	uint16_t port;
	char *big;

	if (!h)
		fail_msg("loomd_metrics_http_start: %s", err.msg);
	port = loomd_metrics_http_port(h);
	assert_true(port != 0);

	/* Before the first publish: an empty exposition. */
	r = http_fetch(port, "GET", "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4");
	assert_int_equal(r.body_len, 0);
	http_resp_free(&r);

	assert_int_equal(loomd_metrics_http_publish(h, "loom_up 1\nignored", 10), 0);
	r = http_fetch(port, "GET", "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4");
	assert_string_equal(r.body, "loom_up 1\n");
	http_resp_free(&r);

	r = http_fetch(port, "GET", "/metrics?from=prometheus");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "loom_up 1\n");
	http_resp_free(&r);

	r = http_fetch(port, "GET", "/");
	assert_int_equal(r.status, 404);
	http_resp_free(&r);
	r = http_fetch(port, "GET", "/metrics/x");
	assert_int_equal(r.status, 404);
	http_resp_free(&r);

	r = http_fetch(port, "POST", "/metrics");
	assert_int_equal(r.status, 405);
	assert_non_null(r.allow);
	assert_non_null(strstr(r.allow, "GET"));
	http_resp_free(&r);
	r = http_fetch(port, "DELETE", "/");
	assert_int_equal(r.status, 405);
	http_resp_free(&r);

	r = http_fetch(port, "HEAD", "/metrics");
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	http_resp_free(&r);

	/* A new snapshot replaces the old one. */
	assert_int_equal(loomd_metrics_http_publish(h, "loom_up 0\n", 10), 0);
	r = http_fetch(port, "GET", "/metrics");
	assert_string_equal(r.body, "loom_up 0\n");
	http_resp_free(&r);

	/* A large one arrives whole. */
	big = malloc(3 * 1024 * 1024 + 1);
	assert_non_null(big);
	for (size_t i = 0; i < 3 * 1024 * 1024; i++)
		big[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
	big[3 * 1024 * 1024] = '\0';
	assert_int_equal(loomd_metrics_http_publish(h, big, strlen(big)), 0);
	r = http_fetch(port, "GET", "/metrics");
	assert_int_equal(r.body_len, strlen(big));
	assert_memory_equal(r.body, big, strlen(big));
	http_resp_free(&r);
	free(big);

	/* The port is taken now. */
	{
		struct loom_err err2 = {{0}};

		errno = 0;
		assert_null(loomd_metrics_http_start("127.0.0.1", port, &err2));
		assert_int_equal(errno, EADDRINUSE);
		assert_non_null(strstr(err2.msg, "127.0.0.1"));
	}
	assert_null(loomd_metrics_http_stop(h));
	assert_null(loomd_metrics_http_stop(NULL));

	errno = 0;
	assert_null(loomd_metrics_http_start("not an address", 0, &err));
	assert_true(errno != 0);
	assert_non_null(strstr(err.msg, "not an address"));
}

struct scraper {
	uint16_t port;
	int bad;
};

static void *scrape_main(void *arg)
{
	struct scraper *s = arg;

	for (int i = 0; i < 40; i++) {
		struct http_resp r = http_fetch(s->port, "GET", "/metrics");
		unsigned a, b;

		/* Every body is one whole snapshot: "v N\nw N\n". */
		if (r.status != 200 || sscanf(r.body, "v %u\nw %u\n", &a, &b) != 2 || a != b)
			s->bad++;
		http_resp_free(&r);
	}
	return NULL;
}

static void test_http_concurrent(void **state)
{
	struct loom_err err = {{0}};
	struct loomd_metrics_http *h = loomd_metrics_http_start("127.0.0.1", 0, &err);
	struct scraper s = {0};
	pthread_t t;
	char text[64];

	if (!h)
		fail_msg("loomd_metrics_http_start: %s", err.msg);
	s.port = loomd_metrics_http_port(h);
	assert_int_equal(loomd_metrics_http_publish(h, "v 0\nw 0\n", 8), 0);
	assert_int_equal(pthread_create(&t, NULL, scrape_main, &s), 0);
	for (unsigned i = 1; i < 2000; i++) {
		int n = snprintf(text, sizeof(text), "v %u\nw %u\n", i, i);

		assert_int_equal(loomd_metrics_http_publish(h, text, (size_t)n), 0);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s.bad, 0);
	loomd_metrics_http_stop(h);
}

static void test_http_ipv6(void **state)
{
	struct loom_err err = {{0}};
	struct loomd_metrics_http *h = loomd_metrics_http_start("::", 0, &err);
	struct http_resp r;

	if (!h)
		fail_msg("loomd_metrics_http_start(::): %s", err.msg);
	/* "::" is dual-stack: IPv4 loopback reaches it. */
	assert_int_equal(loomd_metrics_http_publish(h, "x 1\n", 4), 0);
	r = http_fetch(loomd_metrics_http_port(h), "GET", "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "x 1\n");
	http_resp_free(&r);
	loomd_metrics_http_stop(h);
}

/* Why this machine cannot listen on IPv6's "::", or NULL when it can (IPv6 is there). */
static const char *no_ipv6(void)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int e;

	if (fd < 0)
		return errno == EAFNOSUPPORT ? "no IPv6 sockets here" : NULL;
	e = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
	close(fd);
	return e == EADDRNOTAVAIL ? "no IPv6 address to bind here" : NULL;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_buckets), cmocka_unit_test(test_hist_quantile),
		cmocka_unit_test(test_prom_text),    cmocka_unit_test(test_prom_values),
		cmocka_unit_test(test_http),         cmocka_unit_test(test_http_concurrent),
		cmocka_unit_test(test_http_ipv6),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);

	n = precond_leave_out(tests, n, test_http_ipv6, no_ipv6());
	return precond_run(tests, n, NULL, NULL);
}
