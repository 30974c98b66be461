/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The random layered DAG family: DAG shapes that no file holds, named by a
 * spec "random[:key=value]..." that sim_dags_load() accepts wherever a
 * dags.txt path is taken (docs/simulator.md describes the keys).
 *
 * Every shape is built to hold, by construction: its edge (coflow) count is
 * in [min, max]; its nodes sit in L layers, L in the layers range, and every
 * edge goes from a layer to a later one (so it is acyclic); one chain runs
 * through all L layers (so its longest path has exactly L nodes); it is
 * weakly connected; no node has more than fanin parents; no edge repeats.
 * Nodes are numbered layer by layer (a topological order) and the edges are
 * sorted by (parent, child), as in data/tpch/dags.txt.
 *
 * The shapes are drawn in order from one stream seeded with the family's
 * seed, so the first k shapes of a family of count > k are that family with
 * count = k.
 */
#include "controlplane/sim/sim.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"

#define RND_PREFIX      "random"
#define RND_MAX_EDGES   1000u
#define RND_MAX_FANIN   1000u
#define RND_MAX_COUNT   100000u
#define RND_MAX_TASK_MS 1e7
#define RND_MAX_TASKS   200u /* tasks per stage: uniform in 1..this (as TPC-H's 1..200) */
/* Layer-size draws tried before the one that always fits (a tree with one source). */
#define RND_TRIES 16
/* How much of a spec, key or value a message quotes. */
#define SPECQ "%.64s"
#define KEYQ  "%.24s"
#define VALQ  "%.40s"

bool sim_dags_spec_is_random(const char *spec)
{
	size_t n = strlen(RND_PREFIX);

	return spec && strncmp(spec, RND_PREFIX, n) == 0 && (spec[n] == '\0' || spec[n] == ':');
}

void sim_dags_random_default(struct sim_dags_random *p)
{
	*p = (struct sim_dags_random){
		.min_coflows = 2,
		.max_coflows = 30,
		.min_layers = 2,
		.max_layers = 6,
		.fanin_max = 3,
		.count = 200,
		.seed = 1,
		.min_task_ms = 20,
		.max_task_ms = 5000,
	};
}

/* ---- the spec ---------------------------------------------------------------- */

/* An integer in [lo, hi]; 0 or -EINVAL with err naming spec, key and value. */
static int spec_uint(const char *spec, const char *key, const char *val, uint64_t lo, uint64_t hi,
		     uint64_t *ret, struct loom_err *err)
{
	unsigned long long v = 0;

	if (loom_parse_u64(val, &v) < 0 || v < lo || v > hi)
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': " KEYQ "=" VALQ ": '" VALQ
				    "' is not an integer in [%" PRIu64 ", %" PRIu64 "]",
				    spec, key, val, val, lo, hi);
	*ret = v;
	return 0;
}

/* A number in [lo, hi]; 0 or -EINVAL. */
static int spec_num(const char *spec, const char *key, const char *val, double lo, double hi,
		    double *ret, struct loom_err *err)
{
	double v = 0;

	if (loom_parse_double(val, &v) < 0 || !(v >= lo) || !(v <= hi))
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': " KEYQ "=" VALQ ": '" VALQ
				    "' is not a number in [%g, %g]",
				    spec, key, val, val, lo, hi);
	*ret = v;
	return 0;
}

/*
 * "A..B" into *ret_lo, *ret_hi, or a single "B" into *ret_hi alone (single_is_hi)
 * or into both. val is modified (the ".." cut). 0 or -EINVAL.
 */
static int spec_uint_range(const char *spec, const char *key, char *val, uint64_t lo, uint64_t hi,
			   bool single_is_hi, uint64_t *ret_lo, uint64_t *ret_hi,
			   struct loom_err *err)
{
	char *dots = strstr(val, "..");
	uint64_t a = 0, b = 0;
	int r;

	if (!dots) {
		if ((r = spec_uint(spec, key, val, lo, hi, &b, err)) < 0)
			return r;
		if (!single_is_hi)
			*ret_lo = b;
		*ret_hi = b;
		return 0;
	}
	*dots = '\0';
	if ((r = spec_uint(spec, key, val, lo, hi, &a, err)) < 0 ||
	    (r = spec_uint(spec, key, dots + 2, lo, hi, &b, err)) < 0)
		return r;
	if (a > b)
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': " KEYQ "=%" PRIu64 "..%" PRIu64
				    ": the low end exceeds the high end",
				    spec, key, a, b);
	*ret_lo = a;
	*ret_hi = b;
	return 0;
}

/* As spec_uint_range for numbers; a single value is both ends. */
static int spec_num_range(const char *spec, const char *key, char *val, double lo, double hi,
			  double *ret_lo, double *ret_hi, struct loom_err *err)
{
	char *dots = strstr(val, "..");
	double a = 0, b = 0;
	int r;

	if (!dots) {
		if ((r = spec_num(spec, key, val, lo, hi, &a, err)) < 0)
			return r;
		*ret_lo = *ret_hi = a;
		return 0;
	}
	*dots = '\0';
	if ((r = spec_num(spec, key, val, lo, hi, &a, err)) < 0 ||
	    (r = spec_num(spec, key, dots + 2, lo, hi, &b, err)) < 0)
		return r;
	if (a > b)
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': " KEYQ
				    "=%g..%g: the low end exceeds the high end",
				    spec, key, a, b);
	*ret_lo = a;
	*ret_hi = b;
	return 0;
}

enum spec_key {
	KEY_MIN,
	KEY_MAX,
	KEY_LAYERS,
	KEY_FANIN,
	KEY_COUNT,
	KEY_SEED,
	KEY_TASK_MS,
	KEY_N,
};

static const char *const spec_keys[KEY_N] = {
	[KEY_MIN] = "min",         [KEY_MAX] = "max",     [KEY_LAYERS] = "layers",
	[KEY_FANIN] = "fanin",     [KEY_COUNT] = "count", [KEY_SEED] = "seed",
	[KEY_TASK_MS] = "task-ms",
};

/* One "key=value" item (modified in place) into p. 0 or -EINVAL. */
static int spec_item(const char *spec, char *item, struct sim_dags_random *p, bool *seen,
		     struct loom_err *err)
{
	char *eq = strchr(item, '=');
	uint64_t v = 0, lo = 0, hi = 0;
	int key = 0, r;

	if (!eq)
		return loom_err_set(
			err, EINVAL,
			"random DAG spec '" SPECQ "': '" VALQ
			"' is not key=value (keys: min, max, layers, fanin, count, seed, "
			"task-ms)",
			spec, item);
	*eq = '\0';
	while (key < KEY_N && strcmp(item, spec_keys[key]) != 0)
		key++;
	if (key == KEY_N)
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': unknown key '" KEYQ "' (in " KEYQ
				    "=" VALQ
				    "; keys: min, max, layers, fanin, count, seed, task-ms)",
				    spec, item, item, eq + 1);
	if (seen[key])
		return loom_err_set(err, EINVAL,
				    "random DAG spec '" SPECQ "': " KEYQ "=" VALQ
				    ": the key is given twice",
				    spec, item, eq + 1);
	seen[key] = true;
	switch ((enum spec_key)key) {
	case KEY_MIN:
	case KEY_MAX:
		r = spec_uint(spec, item, eq + 1, 1, RND_MAX_EDGES, &v, err);
		if (r == 0 && key == KEY_MIN)
			p->min_coflows = (uint32_t)v;
		else if (r == 0)
			p->max_coflows = (uint32_t)v;
		return r;
	case KEY_LAYERS:
		lo = p->min_layers;
		r = spec_uint_range(spec, item, eq + 1, 2, RND_MAX_EDGES + 1, true, &lo, &hi, err);
		if (r == 0) {
			p->min_layers = (uint32_t)lo;
			p->max_layers = (uint32_t)hi;
		}
		return r;
	case KEY_FANIN:
		r = spec_uint(spec, item, eq + 1, 1, RND_MAX_FANIN, &v, err);
		if (r == 0)
			p->fanin_max = (uint32_t)v;
		return r;
	case KEY_COUNT:
		r = spec_uint(spec, item, eq + 1, 1, RND_MAX_COUNT, &v, err);
		if (r == 0)
			p->count = (uint32_t)v;
		return r;
	case KEY_SEED:
		return spec_uint(spec, item, eq + 1, 0, UINT64_MAX, &p->seed, err);
	case KEY_TASK_MS:
		return spec_num_range(spec, item, eq + 1, 0, RND_MAX_TASK_MS, &p->min_task_ms,
				      &p->max_task_ms, err);
	case KEY_N:
		break;
	}
	return -EINVAL;
}

int sim_dags_random_parse(const char *spec, struct sim_dags_random *ret_p, struct loom_err *err)
{
	struct sim_dags_random p;
	bool seen[KEY_N] = {false};
	char *copy = NULL, *item, *next;
	int r = 0;

	if (!sim_dags_spec_is_random(spec))
		return loom_err_set(err, EINVAL,
				    "'" SPECQ "' is not a random DAG spec (random[:key=value]...)",
				    spec ? spec : "(null)");
	sim_dags_random_default(&p);
	if (spec[strlen(RND_PREFIX)] == ':' && spec[strlen(RND_PREFIX) + 1] != '\0') {
		copy = strdup(spec + strlen(RND_PREFIX) + 1);
		if (!copy)
			return loom_err_set(err, ENOMEM, "random DAG spec: out of memory");
		for (item = copy; item; item = next) {
			next = strchr(item, ':');
			if (next)
				*next++ = '\0';
			if (*item == '\0') {
				r = loom_err_set(err, EINVAL,
						 "random DAG spec '" SPECQ
						 "': an empty item (two ':' in a row, or one at "
						 "the end)",
						 spec);
				goto out;
			}
			if ((r = spec_item(spec, item, &p, seen, err)) < 0)
				goto out;
		}
	}
	if (p.min_coflows > p.max_coflows) {
		r = loom_err_set(err, EINVAL,
				 "random DAG spec '" SPECQ "': min=%" PRIu32
				 " exceeds max=%" PRIu32,
				 spec, p.min_coflows, p.max_coflows);
		goto out;
	}
	if (p.min_layers - 1 > p.min_coflows) {
		r = loom_err_set(err, EINVAL,
				 "random DAG spec '" SPECQ "': layers=%" PRIu32 "..%" PRIu32
				 " needs at least %" PRIu32 " coflows per DAG, but min=%" PRIu32,
				 spec, p.min_layers, p.max_layers, p.min_layers - 1, p.min_coflows);
		goto out;
	}
	*ret_p = p;
out:
	free(copy);
	return r;
}

/* ---- the shapes ---------------------------------------------------------------- */

/* Scratch sized once for the largest shape. */
struct rnd {
	struct loom_rng rng;
	uint32_t *layer_size, *first; /* per layer; first[L] = nodes */
	uint32_t *layer, *indeg;      /* per node */
	uint32_t *cand, *mark;        /* per node */
	uint32_t stamp;
	bool *in_tree;
};

static int cmp_edge(const void *x, const void *y)
{
	const uint32_t *a = x, *b = y;

	if (a[0] != b[0])
		return (a[0] > b[0]) - (a[0] < b[0]);
	return (a[1] > b[1]) - (a[1] < b[1]);
}

/* Parents node v may have: fanin, and no more than the nodes in earlier layers. */
static uint32_t rnd_cap(const struct rnd *s, uint32_t v, uint32_t fanin)
{
	uint32_t below = s->first[s->layer[v]];

	return below < fanin ? below : fanin;
}

/*
 * Draws the layer sizes of n nodes in nl layers, each layer >= 1, with
 * sources (the extra layer-0 nodes) able to attach and e edges fitting.
 * Returns whether they fit.
 */
static bool rnd_layers(struct rnd *s, uint32_t nn, uint32_t nl, uint32_t ne, uint32_t fanin,
		       bool one_source)
{
	uint64_t capacity = 0;

	for (uint32_t k = 0; k < nl; k++)
		s->layer_size[k] = 1;
	for (uint32_t i = nl; i < nn; i++) {
		uint32_t k = one_source ? 1 + (uint32_t)loom_rng_below(&s->rng, nl - 1) :
					  (uint32_t)loom_rng_below(&s->rng, nl);

		s->layer_size[k]++;
	}
	s->first[0] = 0;
	for (uint32_t k = 0; k < nl; k++)
		s->first[k + 1] = s->first[k] + s->layer_size[k];
	for (uint32_t k = 0; k < nl; k++)
		for (uint32_t v = s->first[k]; v < s->first[k + 1]; v++)
			s->layer[v] = k;
	/* each non-layer-0 node has one parent after the tree; the extra sources take spare ones */
	if ((uint64_t)s->layer_size[0] - 1 > (uint64_t)(nn - s->layer_size[0]) * (fanin - 1))
		return false;
	for (uint32_t v = s->first[1]; v < nn; v++)
		capacity += rnd_cap(s, v, fanin);
	return capacity >= ne;
}

/* A uniform node among cand[0 .. n); n > 0. */
static uint32_t rnd_pick(struct rnd *s, uint32_t n)
{
	return s->cand[loom_rng_below(&s->rng, n)];
}

/* Draws one shape into d (zeroed). 0 or -ENOMEM. */
static int rnd_dag(struct rnd *s, const struct sim_dags_random *p, uint32_t index,
		   struct sim_dag *d)
{
	uint32_t ne =
		p->min_coflows +
		(uint32_t)loom_rng_below(&s->rng, (uint64_t)p->max_coflows - p->min_coflows + 1);
	uint32_t lhi = p->max_layers < ne + 1 ? p->max_layers : ne + 1;
	uint32_t nl = p->min_layers + (uint32_t)loom_rng_below(&s->rng, lhi - p->min_layers + 1);
	uint32_t nn = 0, e = 0, prev = 0;
	bool fits = false;

	for (int t = 0; t < RND_TRIES && !fits; t++) {
		nn = nl + (uint32_t)loom_rng_below(&s->rng, (uint64_t)ne + 1 - nl + 1);
		fits = rnd_layers(s, nn, nl, ne, p->fanin_max, false);
	}
	if (!fits) { /* a tree with one source always fits: nn - 1 = ne edges */
		nn = ne + 1;
		fits = rnd_layers(s, nn, nl, ne, p->fanin_max, true);
		assert(fits);
	}
	d->nnodes = nn;
	d->nedges = ne;
	d->edges = calloc(ne, sizeof(*d->edges));
	d->mean_task_ms = calloc(nn, sizeof(*d->mean_task_ms));
	d->ntasks = calloc(nn, sizeof(*d->ntasks));
	if (!d->edges || !d->mean_task_ms || !d->ntasks)
		return -ENOMEM;
	snprintf(d->label, sizeof(d->label), "rand%" PRIu64 "-%" PRIu32, p->seed, index);
	memset(s->indeg, 0, nn * sizeof(*s->indeg));
	memset(s->in_tree, 0, nn * sizeof(*s->in_tree));

	/* a chain through every layer */
	for (uint32_t k = 0; k < nl; k++) {
		uint32_t v = s->first[k] + (uint32_t)loom_rng_below(&s->rng, s->layer_size[k]);

		s->in_tree[v] = true;
		if (k > 0) {
			d->edges[e][0] = prev;
			d->edges[e++][1] = v;
			s->indeg[v]++;
		}
		prev = v;
	}
	/* every other node past layer 0 hangs under a tree node of an earlier layer */
	for (uint32_t v = s->first[1]; v < nn; v++) {
		uint32_t n = 0;

		if (s->in_tree[v])
			continue;
		for (uint32_t u = 0; u < s->first[s->layer[v]]; u++)
			if (s->in_tree[u])
				s->cand[n++] = u;
		d->edges[e][0] = rnd_pick(s, n);
		d->edges[e++][1] = v;
		s->indeg[v]++;
		s->in_tree[v] = true;
	}
	/* every other layer-0 node becomes a parent of a node with a parent to spare */
	for (uint32_t u = 0; u < s->first[1]; u++) {
		uint32_t n = 0, v;

		if (s->in_tree[u])
			continue;
		for (v = s->first[1]; v < nn; v++)
			if (s->indeg[v] < p->fanin_max)
				s->cand[n++] = v;
		v = rnd_pick(s, n); /* n > 0: rnd_layers checked the spare parents */
		d->edges[e][0] = u;
		d->edges[e++][1] = v;
		s->indeg[v]++;
		s->in_tree[u] = true;
	}
	/* the rest: a node with room for a parent, and an earlier node not yet its parent */
	while (e < ne) {
		uint32_t n = 0, v, k;

		for (v = s->first[1]; v < nn; v++)
			if (s->indeg[v] < rnd_cap(s, v, p->fanin_max))
				s->cand[n++] = v;
		v = rnd_pick(s, n); /* n > 0: rnd_layers checked the capacity */
		if (++s->stamp == 0) {
			memset(s->mark, 0, nn * sizeof(*s->mark));
			s->stamp = 1;
		}
		for (uint32_t i = 0; i < e; i++)
			if (d->edges[i][1] == v)
				s->mark[d->edges[i][0]] = s->stamp;
		n = 0;
		for (uint32_t u = 0; u < s->first[s->layer[v]]; u++)
			if (s->mark[u] != s->stamp)
				s->cand[n++] = u;
		k = rnd_pick(s, n);
		d->edges[e][0] = k;
		d->edges[e++][1] = v;
		s->indeg[v]++;
	}
	qsort(d->edges, ne, sizeof(*d->edges), cmp_edge);

	/* the stages: task count, and mean task time log-uniform over the range */
	for (uint32_t v = 0; v < nn; v++) {
		double lo = p->min_task_ms, hi = p->max_task_ms, u = loom_rng_uniform(&s->rng);
		double ms = lo == hi ? lo : lo > 0 ? lo * exp(u * log(hi / lo)) : u * hi;

		d->ntasks[v] = 1 + (uint32_t)loom_rng_below(&s->rng, RND_MAX_TASKS);
		d->mean_task_ms[v] = ms < lo ? lo : ms > hi ? hi : ms;
	}
	return 0;
}

static void rnd_done(struct rnd *s)
{
	free(s->layer_size);
	free(s->first);
	free(s->layer);
	free(s->indeg);
	free(s->cand);
	free(s->mark);
	free(s->in_tree);
}

struct sim_dags *sim_dags_random_new(const struct sim_dags_random *p, struct loom_err *err)
{
	struct sim_dags *d = NULL;
	struct rnd s = {0};
	size_t nmax;
	int r = 0;

	if (!p || p->min_coflows < 1 || p->min_coflows > p->max_coflows ||
	    p->max_coflows > RND_MAX_EDGES || p->min_layers < 2 || p->min_layers > p->max_layers ||
	    p->min_layers - 1 > p->min_coflows || p->fanin_max < 1 || p->count < 1 ||
	    p->count > RND_MAX_COUNT || !(p->min_task_ms >= 0) ||
	    !(p->min_task_ms <= p->max_task_ms) || !(p->max_task_ms <= RND_MAX_TASK_MS)) {
		r = loom_err_set(err, EINVAL, "random DAGs: parameters out of range");
		goto fail;
	}
	nmax = (size_t)p->max_coflows + 2;
	s.layer_size = calloc(nmax, sizeof(*s.layer_size));
	s.first = calloc(nmax + 1, sizeof(*s.first));
	s.layer = calloc(nmax, sizeof(*s.layer));
	s.indeg = calloc(nmax, sizeof(*s.indeg));
	s.cand = calloc(nmax, sizeof(*s.cand));
	s.mark = calloc(nmax, sizeof(*s.mark));
	s.in_tree = calloc(nmax, sizeof(*s.in_tree));
	d = calloc(1, sizeof(*d));
	if (d)
		d->dags = calloc(p->count, sizeof(*d->dags));
	if (!s.layer_size || !s.first || !s.layer || !s.indeg || !s.cand || !s.mark || !s.in_tree ||
	    !d || !d->dags) {
		r = loom_err_set(err, ENOMEM, "random DAGs: out of memory");
		goto fail;
	}
	loom_rng_seed(&s.rng, p->seed);
	for (uint32_t i = 0; i < p->count; i++) {
		d->n = i + 1; /* the shape is freed with d if it fails half-built */
		if (rnd_dag(&s, p, i, &d->dags[i]) < 0) {
			r = loom_err_set(err, ENOMEM, "random DAGs: out of memory");
			goto fail;
		}
	}
	rnd_done(&s);
	return d;
fail:
	rnd_done(&s);
	sim_dags_free(d);
	errno = -r;
	return NULL;
}
