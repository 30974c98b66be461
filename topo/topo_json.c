/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_json: the topology file (docs/topology.md). Three shapes are read:
 * a big switch ({"hosts": N}), an explicit host list with optional racks
 * ({"hosts": [...], "racks": {...}}), and uniform racks
 * ({"racks": {"count": R, "hosts_per_rack": H, ...}}). The writer always
 * produces the first shape when it can and the second otherwise, so any
 * topology round-trips exactly.
 *
 * Every capacity must be a whole number of bits/s in [1, INT64_MAX] (the
 * range of a JSON integer as jansson reads it).
 */
#include "topo/topo.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "topo/topo_impl.h"

/* Refuse to slurp files larger than this (a 2^20-host list is ~60 MiB). */
#define TOPO_FILE_MAX_BYTES (1024ULL * 1048576ULL)
/* 2^63: the first value a JSON integer cannot hold. */
#define TOPO_BPS_LIMIT 9223372036854775808.0

static void topo_json_decrefp(json_t **j)
{
	if (*j)
		json_decref(*j);
}

#define _cleanup_json_ _cleanup_(topo_json_decrefp)

/* Parser context: the name used in messages and where they go. */
struct pctx {
	const char *name;
	struct loom_err *err;
};

/* Fills err with "name: <reason>"; returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int perr(const struct pctx *c, const char *fmt, ...)
{
	char reason[LOOM_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return loom_err_set(c->err, EINVAL, "%s: %s", c->name, reason);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a non-integer number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* Fails naming the first key of obj (called what, or top level) not in allowed. */
static int check_keys(const struct pctx *c, json_t *obj, const char *what,
		      const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		const char *const *a;

		for (a = allowed; *a; a++)
			if (strcmp(key, *a) == 0)
				break;
		if (!*a) {
			if (what)
				return perr(c, "%s: unknown key \"%.64s\"", what, key);
			return perr(c, "unknown top-level key \"%.64s\"", key);
		}
	}
	return 0;
}

/*
 * Reads a capacity named what (e.g. "hosts[3].up_bps"): a JSON integer, or a
 * number with no fractional part (1e9), in [1, INT64_MAX] bits/s.
 */
static int get_bps(const struct pctx *c, const json_t *v, const char *what, uint64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i <= 0)
			return perr(c, "%s: capacity must be > 0 bits/s, got %" JSON_INTEGER_FORMAT,
				    what, i);
		*ret = (uint64_t)i;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		if (!(d > 0))
			return perr(c, "%s: capacity must be > 0 bits/s, got %g", what, d);
		if (d != floor(d))
			return perr(c, "%s: capacity must be a whole number of bits/s, got %g",
				    what, d);
		if (d >= TOPO_BPS_LIMIT)
			return perr(c, "%s: capacity %g bits/s is too large (limit 2^63 - 1)", what,
				    d);
		*ret = (uint64_t)d;
		return 0;
	}
	return perr(c, "%s: capacity must be an integer number of bits/s, got %s", what,
		    type_name(v));
}

/* Reads an integer named what in [min, max]. */
static int get_count(const struct pctx *c, const json_t *v, const char *what, uint32_t min,
		     uint32_t max, uint32_t *ret)
{
	json_int_t i;

	if (!json_is_integer(v))
		return perr(c, "%s: must be an integer, got %s", what, type_name(v));
	i = json_integer_value(v);
	if (i < (json_int_t)min || i > (json_int_t)max)
		return perr(c, "%s: %" JSON_INTEGER_FORMAT " is out of range (%u..%u)", what, i,
			    min, max);
	*ret = (uint32_t)i;
	return 0;
}

/* Reads an optional capacity: *ret is left alone when key is absent. */
static int get_opt_bps(const struct pctx *c, json_t *obj, const char *key, const char *what,
		       uint64_t *ret)
{
	const json_t *v = json_object_get(obj, key);

	return v ? get_bps(c, v, what, ret) : 0;
}

/*
 * Reads racks.<key> (up_bps or down_bps) into ports[0..nracks): one capacity
 * for every rack, or an array of one per rack; absent means def.
 */
static int get_rack_bps(const struct pctx *c, json_t *racks, const char *key, uint64_t def,
			uint64_t *ports, uint32_t nracks)
{
	json_t *v = json_object_get(racks, key);
	char what[64];
	uint64_t bps = def;
	int r;

	if (v && json_is_array(v)) {
		if (json_array_size(v) != nracks)
			return perr(c, "racks.%s: has %zu entries, racks.count is %u", key,
				    json_array_size(v), nracks);
		for (uint32_t i = 0; i < nracks; i++) {
			snprintf(what, sizeof(what), "racks.%s[%u]", key, i);
			r = get_bps(c, json_array_get(v, i), what, &ports[i]);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (v) {
		snprintf(what, sizeof(what), "racks.%s", key);
		r = get_bps(c, v, what, &bps);
		if (r < 0)
			return r;
	}
	for (uint32_t i = 0; i < nracks; i++)
		ports[i] = bps;
	return 0;
}

/* Shape 2: {"hosts": [{...}, ...], "racks": {"count": R, ...}}. */
static int parse_host_list(const struct pctx *c, json_t *hosts, json_t *racks, uint64_t link_bps,
			   struct topo **ret)
{
	static const char *const rack_keys[] = {"count", "bps", "up_bps", "down_bps", NULL};
	static const char *const host_keys[] = {"bps", "up_bps", "down_bps", "rack", NULL};
	size_t n = json_array_size(hosts);
	uint32_t nracks = 0;
	uint64_t rack_bps = link_bps;
	struct topo *t;
	char what[64];
	int r;

	if (n == 0 || n > TOPO_MAX_HOSTS)
		return perr(c, "hosts: %zu hosts, must be 1..%u", n, TOPO_MAX_HOSTS);
	if (racks) {
		const json_t *count = json_object_get(racks, "count");

		if (json_object_get(racks, "hosts_per_rack") ||
		    json_object_get(racks, "oversubscription"))
			return perr(c, "racks: \"hosts_per_rack\" and \"oversubscription\" are "
				       "only allowed without a \"hosts\" array");
		r = check_keys(c, racks, "racks", rack_keys);
		if (r < 0)
			return r;
		if (!count)
			return perr(c, "racks.count: missing");
		r = get_count(c, count, "racks.count", 1, TOPO_MAX_HOSTS, &nracks);
		if (r < 0)
			return r;
		if (nracks > n)
			return perr(c, "racks.count: %u racks but only %zu hosts", nracks, n);
		r = get_opt_bps(c, racks, "bps", "racks.bps", &rack_bps);
		if (r < 0)
			return r;
	}
	t = topo_alloc((uint32_t)n, nracks);
	if (!t)
		return loom_err_set(c->err, ENOMEM, "%s: out of memory", c->name);
	if (nracks) {
		r = get_rack_bps(c, racks, "up_bps", rack_bps, &t->port_bps[2 * n], nracks);
		if (r == 0)
			r = get_rack_bps(c, racks, "down_bps", rack_bps,
					 &t->port_bps[2 * n + nracks], nracks);
		if (r < 0)
			goto fail;
	}
	for (uint32_t h = 0; h < n; h++) {
		json_t *host = json_array_get(hosts, h);
		const json_t *rack;
		uint64_t bps = link_bps, up, down;

		if (!json_is_object(host)) {
			r = perr(c, "hosts[%u]: must be an object, got %s", h, type_name(host));
			goto fail;
		}
		snprintf(what, sizeof(what), "hosts[%u]", h);
		r = check_keys(c, host, what, host_keys);
		if (r < 0)
			goto fail;
		snprintf(what, sizeof(what), "hosts[%u].bps", h);
		r = get_opt_bps(c, host, "bps", what, &bps);
		if (r < 0)
			goto fail;
		up = down = bps;
		snprintf(what, sizeof(what), "hosts[%u].up_bps", h);
		r = get_opt_bps(c, host, "up_bps", what, &up);
		if (r < 0)
			goto fail;
		snprintf(what, sizeof(what), "hosts[%u].down_bps", h);
		r = get_opt_bps(c, host, "down_bps", what, &down);
		if (r < 0)
			goto fail;
		t->port_bps[topo_port_up(t, h)] = up;
		t->port_bps[topo_port_down(t, h)] = down;

		rack = json_object_get(host, "rack");
		if (!nracks && rack) {
			r = perr(c, "hosts[%u].rack: not allowed without a \"racks\" object", h);
			goto fail;
		}
		if (!nracks)
			continue;
		if (!rack) {
			r = perr(c, "hosts[%u].rack: missing (required when \"racks\" is given)",
				 h);
			goto fail;
		}
		if (!json_is_integer(rack)) {
			r = perr(c, "hosts[%u].rack: must be an integer, got %s", h,
				 type_name(rack));
			goto fail;
		}
		if (json_integer_value(rack) < 0 || json_integer_value(rack) >= nracks) {
			r = perr(c,
				 "hosts[%u].rack: %" JSON_INTEGER_FORMAT
				 " is out of range (racks.count is %u)",
				 h, json_integer_value(rack), nracks);
			goto fail;
		}
		t->rack_of[h] = (uint32_t)json_integer_value(rack);
	}
	*ret = t;
	return 0;
fail:
	topo_free(t);
	return r;
}

/* Shape 3: {"racks": {"count": R, "hosts_per_rack": H, "oversubscription": X}}. */
static int parse_uniform_racks(const struct pctx *c, json_t *racks, uint64_t link_bps,
			       struct topo **ret)
{
	static const char *const keys[] = {"count", "hosts_per_rack", "oversubscription", NULL};
	const json_t *count = json_object_get(racks, "count");
	const json_t *hpr = json_object_get(racks, "hosts_per_rack");
	const json_t *over = json_object_get(racks, "oversubscription");
	uint32_t nracks, per_rack;
	double oversub = 1.0, core_bps;
	struct topo *t;
	int r;

	if (json_object_get(racks, "bps") || json_object_get(racks, "up_bps") ||
	    json_object_get(racks, "down_bps"))
		return perr(c, "racks: \"bps\", \"up_bps\" and \"down_bps\" are only allowed "
			       "with a \"hosts\" array (uniform racks use link_bps and "
			       "oversubscription)");
	r = check_keys(c, racks, "racks", keys);
	if (r < 0)
		return r;
	if (!count)
		return perr(c, "racks.count: missing");
	r = get_count(c, count, "racks.count", 1, TOPO_MAX_HOSTS, &nracks);
	if (r < 0)
		return r;
	if (!hpr)
		return perr(c, "racks.hosts_per_rack: missing (required when there is no "
			       "\"hosts\" array)");
	r = get_count(c, hpr, "racks.hosts_per_rack", 1, TOPO_MAX_HOSTS, &per_rack);
	if (r < 0)
		return r;
	if ((uint64_t)nracks * per_rack > TOPO_MAX_HOSTS)
		return perr(c, "racks: %u racks of %u hosts is more than %u hosts", nracks,
			    per_rack, TOPO_MAX_HOSTS);
	if (over) {
		if (!json_is_number(over))
			return perr(c, "racks.oversubscription: must be a number, got %s",
				    type_name(over));
		oversub = json_number_value(over);
		if (!(oversub >= 1.0) || !isfinite(oversub))
			return perr(c, "racks.oversubscription: must be >= 1, got %g", oversub);
	}
	/* The same arithmetic as topo_new_racks(), checked first for a better message. */
	core_bps = (double)per_rack * (double)link_bps / oversub;
	if (core_bps < 1.0)
		return perr(c, "racks.oversubscription: %g leaves the rack links below 1 bit/s",
			    oversub);
	if (core_bps >= TOPO_BPS_LIMIT)
		return perr(c, "racks: rack link capacity %g bits/s is too large (limit 2^63 - 1)",
			    core_bps);
	t = topo_new_racks(nracks, per_rack, link_bps, oversub);
	if (!t)
		return loom_err_set(c->err, errno, "%s: %s", c->name, strerror(errno));
	*ret = t;
	return 0;
}

static int parse_root(const struct pctx *c, json_t *root, struct topo **ret)
{
	static const char *const keys[] = {"hosts", "link_bps", "racks", NULL};
	json_t *hosts, *racks;
	uint64_t link_bps = TOPO_DEFAULT_BPS;
	uint32_t n;
	struct topo *t;
	int r;

	if (!json_is_object(root))
		return perr(c, "the top level must be an object, got %s", type_name(root));
	r = check_keys(c, root, NULL, keys);
	if (r < 0)
		return r;
	r = get_opt_bps(c, root, "link_bps", "link_bps", &link_bps);
	if (r < 0)
		return r;
	hosts = json_object_get(root, "hosts");
	racks = json_object_get(root, "racks");
	if (racks && !json_is_object(racks))
		return perr(c, "racks: must be an object, got %s", type_name(racks));

	if (!hosts) {
		if (!racks)
			return perr(c, "hosts: missing (give \"hosts\", or \"racks\" with "
				       "\"hosts_per_rack\")");
		return parse_uniform_racks(c, racks, link_bps, ret);
	}
	if (json_is_array(hosts))
		return parse_host_list(c, hosts, racks, link_bps, ret);
	if (!json_is_integer(hosts))
		return perr(c, "hosts: must be a host count or an array of hosts, got %s",
			    type_name(hosts));
	r = get_count(c, hosts, "hosts", 1, TOPO_MAX_HOSTS, &n);
	if (r < 0)
		return r;
	if (racks)
		return perr(c, "racks: not allowed with a host count (use \"racks\": "
			       "{\"hosts_per_rack\": ...} or a \"hosts\" array)");
	t = topo_new_bigswitch(n, link_bps);
	if (!t)
		return loom_err_set(c->err, errno, "%s: %s", c->name, strerror(errno));
	*ret = t;
	return 0;
}

struct topo *topo_parse_json(const char *buf, size_t len, const char *name, struct loom_err *err)
{
	_cleanup_json_ json_t *root = NULL;
	struct pctx c = {name ? name : "<topology>", err};
	json_error_t jerr;
	struct topo *t = NULL;
	int r;

	if (!buf && len) {
		loom_err_set(err, EINVAL, "%s: no buffer", c.name);
		errno = EINVAL;
		return NULL;
	}
	/* jansson reads at most len bytes; embedded NULs are a syntax error. */
	root = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		loom_err_set(err, EINVAL, "%s:%d:%d: %s", c.name, jerr.line, jerr.column,
			     jerr.text);
		errno = EINVAL;
		return NULL;
	}
	r = parse_root(&c, root, &t);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	return t;
}

struct topo *topo_load_json(const char *path, struct loom_err *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	int e;

	f = fopen(path, "rb");
	if (!f)
		goto fail_errno;
	for (;;) {
		size_t got;

		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 65536;
			char *nbuf;

			if (cap >= TOPO_FILE_MAX_BYTES) {
				loom_err_set(err, EFBIG, "%s: larger than %llu bytes", path,
					     TOPO_FILE_MAX_BYTES);
				errno = EFBIG;
				return NULL;
			}
			nbuf = realloc(buf, ncap);
			if (!nbuf)
				goto fail_errno;
			buf = nbuf;
			cap = ncap;
		}
		errno = 0;
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		if (errno == 0)
			errno = EIO;
		goto fail_errno;
	}
	return topo_parse_json(buf, len, path, err);

fail_errno:
	e = errno ? errno : EIO;
	loom_err_set(err, e, "%s: %s", path, strerror(e));
	errno = e;
	return NULL;
}

/* Returns whether the n entries at v are all equal. */
static int all_equal(const uint64_t *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (v[i] != v[0])
			return 0;
	return 1;
}

static void write_rack_bps(FILE *f, const char *key, const uint64_t *v, uint32_t n)
{
	if (all_equal(v, n)) {
		fprintf(f, ", \"%s\": %" PRIu64, key, v[0]);
		return;
	}
	fprintf(f, ", \"%s\": [", key);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", v[i]);
	fputc(']', f);
}

/* Writes t as JSON; t is already validated. */
static void write_topo(FILE *f, const struct topo *t)
{
	const uint64_t *host_bps = t->port_bps; /* 2 * nhosts host ports come first */
	int uniform = all_equal(host_bps, 2 * t->nhosts);

	if (!t->nracks && uniform) {
		fprintf(f, "{\"hosts\": %" PRIu32 ", \"link_bps\": %" PRIu64 "}\n", t->nhosts,
			host_bps[0]);
		return;
	}
	fputs("{\n", f);
	if (uniform)
		fprintf(f, "  \"link_bps\": %" PRIu64 ",\n", host_bps[0]);
	if (t->nracks) {
		fprintf(f, "  \"racks\": {\"count\": %" PRIu32, t->nracks);
		write_rack_bps(f, "up_bps", &t->port_bps[2 * t->nhosts], t->nracks);
		write_rack_bps(f, "down_bps", &t->port_bps[2 * t->nhosts + t->nracks], t->nracks);
		fputs("},\n", f);
	}
	fputs("  \"hosts\": [\n", f);
	for (uint32_t h = 0; h < t->nhosts; h++) {
		const char *sep = "";

		fputs("    {", f);
		if (!uniform) {
			fprintf(f, "\"up_bps\": %" PRIu64 ", \"down_bps\": %" PRIu64,
				t->port_bps[topo_port_up(t, h)], t->port_bps[topo_port_down(t, h)]);
			sep = ", ";
		}
		if (t->nracks)
			fprintf(f, "%s\"rack\": %" PRIu32, sep, t->rack_of[h]);
		fputs(h + 1 < t->nhosts ? "},\n" : "}\n", f);
	}
	fputs("  ]\n}\n", f);
}

int topo_save_json(const struct topo *t, const char *path)
{
	FILE *f;
	int r = 0;

	if (!t || !path || t->nhosts == 0 || t->nhosts > TOPO_MAX_HOSTS || t->nracks > t->nhosts ||
	    t->nports != 2 * t->nhosts + 2 * t->nracks || !t->port_bps ||
	    (t->nracks && !t->rack_of))
		return -EINVAL;
	for (uint32_t p = 0; p < t->nports; p++) {
		if (t->port_bps[p] == 0)
			return -EINVAL;
		if (t->port_bps[p] > (uint64_t)INT64_MAX)
			return -ERANGE; /* a JSON integer could not hold it */
	}
	for (uint32_t h = 0; t->nracks && h < t->nhosts; h++)
		if (t->rack_of[h] >= t->nracks)
			return -EINVAL;

	f = fopen(path, "w");
	if (!f)
		return loom_negerrno();
	write_topo(f, t);
	if (fflush(f) != 0 || ferror(f))
		r = loom_negerrno();
	if (fclose(f) != 0 && r == 0)
		r = loom_negerrno();
	if (r < 0)
		unlink(path);
	return r;
}
