/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/table: two maps, each a dense array of records indexed by a
 * common/hmap (growing, at most half full): flows (tuple -> coflow id; the
 * index is keyed by wire_tuple_hash(), several tuples may share a hash) and
 * classes (coflow id -> class, rate; keyed by the id). Removing a record
 * moves the last one into its place, so the arrays have no holes.
 *
 * Atomic updates without copying the table: a delta is validated first; then
 * both maps are resized, if need be, to hold every entry the delta could add
 * (resizing leaves the contents as they were, and is the only step that
 * allocates); then removals and insertions, which cannot fail, are applied.
 * A full update builds two new maps and swaps them in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "dataplane/table.h"

#define REC_MIN_CAP 16u

struct flow_rec {
	struct wire_tuple tuple;
	uint64_t coflow_id;
};

struct class_rec {
	uint64_t coflow_id;
	uint64_t rate_bps;
	uint32_t cls;
};

struct flow_map {
	struct loom_hmap index; /* wire_tuple_hash(tuple) -> its record (add_dup) */
	struct flow_rec *rec;
	size_t n, cap; /* records held, and room */
};

struct class_map {
	struct loom_hmap index; /* coflow id -> its record */
	struct class_rec *rec;
	size_t n, cap;
};

struct dp_table {
	uint64_t version;
	uint32_t nclasses;
	uint32_t default_class;
	struct flow_map flows;
	struct class_map classes;
};

#define NOT_FOUND SIZE_MAX

/* ---- record arrays --------------------------------------------------------------------------- */

/* Makes room for need records in *rec (cap of them). 0, or -ENOMEM with *rec unchanged. */
static int rec_reserve(void **rec, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : REC_MIN_CAP;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / size)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*rec, ncap * size);
	if (!p)
		return -ENOMEM;
	*rec = p;
	*cap = ncap;
	return 0;
}

/* Gives memory back when at most 1/8 of *rec is used; failing to is harmless. */
static void rec_maybe_shrink(void **rec, size_t *cap, size_t n, size_t size)
{
	size_t ncap = *cap;
	void *p;

	while (ncap > REC_MIN_CAP && n < ncap / 8)
		ncap /= 2;
	if (ncap == *cap)
		return;
	p = realloc(*rec, ncap * size);
	if (p) {
		*rec = p;
		*cap = ncap;
	}
}

/* ---- flow map -------------------------------------------------------------------------------- */

/* Returns the index position of t's record, or LOOM_HMAP_NPOS. */
static size_t flow_pos(const struct flow_map *m, const struct wire_tuple *t)
{
	uint64_t h = wire_tuple_hash(t);

	for (size_t p = loom_hmap_find(&m->index, h); p != LOOM_HMAP_NPOS;
	     p = loom_hmap_find_next(&m->index, h, p))
		if (wire_tuple_eq(&m->rec[m->index.slot[p].val].tuple, t))
			return p;
	return LOOM_HMAP_NPOS;
}

/* Returns t's record, or NOT_FOUND. */
static size_t flow_find(const struct flow_map *m, const struct wire_tuple *t)
{
	size_t p = flow_pos(m, t);

	return p == LOOM_HMAP_NPOS ? NOT_FOUND : (size_t)m->index.slot[p].val;
}

/* Adds or replaces t's entry; the caller has made room (flow_reserve). */
static void flow_put(struct flow_map *m, const struct wire_tuple *t, uint64_t coflow_id)
{
	size_t i = flow_find(m, t);

	if (i == NOT_FOUND) {
		i = m->n++;
		m->rec[i].tuple = *t;
		(void)loom_hmap_add_dup(&m->index, wire_tuple_hash(t), i); /* reserved */
	}
	m->rec[i].coflow_id = coflow_id;
}

/* Makes room for extra more entries. Returns 0 or -ENOMEM (entries unchanged). */
static int flow_reserve(struct flow_map *m, size_t extra)
{
	if (extra > SIZE_MAX - m->n ||
	    rec_reserve((void **)&m->rec, &m->cap, m->n + extra, sizeof(*m->rec)) < 0 ||
	    loom_hmap_reserve(&m->index, extra) < 0)
		return -ENOMEM;
	return 0;
}

static void flow_remove(struct flow_map *m, const struct wire_tuple *t)
{
	size_t p = flow_pos(m, t), i, last = m->n - 1;

	if (p == LOOM_HMAP_NPOS)
		return;
	i = (size_t)m->index.slot[p].val;
	loom_hmap_remove_at(&m->index, p);
	m->n--;
	if (i == last)
		return;
	/* the last record fills the hole; its index entry follows it */
	m->rec[i] = m->rec[last];
	p = loom_hmap_find_val(&m->index, wire_tuple_hash(&m->rec[i].tuple), last);
	m->index.slot[p].val = i;
}

static void flow_map_done(struct flow_map *m)
{
	loom_hmap_done(&m->index);
	free(m->rec);
	memset(m, 0, sizeof(*m));
}

/* Gives memory back after many removals; failing to is harmless. */
static void flow_maybe_shrink(struct flow_map *m)
{
	loom_hmap_shrink(&m->index);
	rec_maybe_shrink((void **)&m->rec, &m->cap, m->n, sizeof(*m->rec));
}

/* ---- class map ------------------------------------------------------------------------------- */

/* Returns coflow id's record, or NOT_FOUND. */
static size_t class_find(const struct class_map *m, uint64_t id)
{
	uint64_t i;

	return loom_hmap_get(&m->index, id, &i) ? (size_t)i : NOT_FOUND;
}

/* Adds or replaces id's entry; the caller has made room (class_reserve). */
static void class_put(struct class_map *m, uint64_t id, uint32_t cls, uint64_t rate_bps)
{
	size_t i = class_find(m, id);

	if (i == NOT_FOUND) {
		i = m->n++;
		m->rec[i].coflow_id = id;
		(void)loom_hmap_add(&m->index, id, i); /* reserved */
	}
	m->rec[i].cls = cls;
	m->rec[i].rate_bps = rate_bps;
}

static int class_reserve(struct class_map *m, size_t extra)
{
	if (extra > SIZE_MAX - m->n ||
	    rec_reserve((void **)&m->rec, &m->cap, m->n + extra, sizeof(*m->rec)) < 0 ||
	    loom_hmap_reserve(&m->index, extra) < 0)
		return -ENOMEM;
	return 0;
}

static void class_remove(struct class_map *m, uint64_t id)
{
	uint64_t i;
	size_t last = m->n - 1;

	if (!loom_hmap_remove(&m->index, id, &i))
		return;
	m->n--;
	if (i == last)
		return;
	m->rec[i] = m->rec[last];
	m->index.slot[loom_hmap_find(&m->index, m->rec[i].coflow_id)].val = i;
}

static void class_map_done(struct class_map *m)
{
	loom_hmap_done(&m->index);
	free(m->rec);
	memset(m, 0, sizeof(*m));
}

static void class_maybe_shrink(struct class_map *m)
{
	loom_hmap_shrink(&m->index);
	rec_maybe_shrink((void **)&m->rec, &m->cap, m->n, sizeof(*m->rec));
}

/* ---- validation ------------------------------------------------------------------------------ */

/* Whether t is in struct wire_tuple's form: family 4 or 6, IPv4 padding zero. */
static bool tuple_ok(const struct wire_tuple *t)
{
	if (t->family == 6)
		return true;
	if (t->family != 4)
		return false;
	for (int i = 4; i < 16; i++)
		if (t->src[i] || t->dst[i])
			return false;
	return true;
}

/* Returns 0 when u may be applied to t, else -ESTALE or -EINVAL (see dp_table_apply). */
static int validate(const struct dp_table *t, const struct dp_update *u)
{
	if (!u || (u->nflows && !u->flows) || (u->nclasses && !u->classes))
		return -EINVAL;
	if (!u->full) {
		if ((u->nremoved_flows && !u->removed_flows) ||
		    (u->nremoved_coflows && !u->removed_coflows))
			return -EINVAL;
		if (u->base_version != t->version)
			return -ESTALE;
	}
	/* a full table starts the versions afresh (a restarted controller counts from 1) */
	if ((u->full ? u->version == 0 : u->version <= t->version) ||
	    u->default_class >= t->nclasses)
		return -EINVAL;
	for (size_t i = 0; i < u->nflows; i++)
		if (!tuple_ok(&u->flows[i].tuple))
			return -EINVAL;
	for (size_t i = 0; i < u->nclasses; i++)
		if (u->classes[i].cls >= t->nclasses)
			return -EINVAL;
	if (!u->full)
		for (size_t i = 0; i < u->nremoved_flows; i++)
			if (!tuple_ok(&u->removed_flows[i]))
				return -EINVAL;
	return 0;
}

/* ---- updates --------------------------------------------------------------------------------- */

static int apply_full(struct dp_table *t, const struct dp_update *u)
{
	struct flow_map fm = {0};
	struct class_map cm = {0};

	if (flow_reserve(&fm, u->nflows) < 0 || class_reserve(&cm, u->nclasses) < 0) {
		flow_map_done(&fm);
		class_map_done(&cm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < u->nflows; i++)
		flow_put(&fm, &u->flows[i].tuple, u->flows[i].coflow_id);
	for (size_t i = 0; i < u->nclasses; i++)
		class_put(&cm, u->classes[i].coflow_id, u->classes[i].cls, u->classes[i].rate_bps);
	flow_map_done(&t->flows);
	class_map_done(&t->classes);
	t->flows = fm;
	t->classes = cm;
	return 0;
}

static int apply_delta(struct dp_table *t, const struct dp_update *u)
{
	size_t new_flows = 0, new_classes = 0;

	/* room for every entry that may be new (a key repeated in u counts twice) */
	for (size_t i = 0; i < u->nflows; i++)
		if (flow_find(&t->flows, &u->flows[i].tuple) == NOT_FOUND)
			new_flows++;
	for (size_t i = 0; i < u->nclasses; i++)
		if (class_find(&t->classes, u->classes[i].coflow_id) == NOT_FOUND)
			new_classes++;
	if (flow_reserve(&t->flows, new_flows) < 0 || class_reserve(&t->classes, new_classes) < 0)
		return -ENOMEM; /* a resize that succeeded changed no entry */

	/* from here on nothing can fail */
	for (size_t i = 0; i < u->nremoved_flows; i++)
		flow_remove(&t->flows, &u->removed_flows[i]);
	for (size_t i = 0; i < u->nremoved_coflows; i++)
		class_remove(&t->classes, u->removed_coflows[i]);
	for (size_t i = 0; i < u->nflows; i++)
		flow_put(&t->flows, &u->flows[i].tuple, u->flows[i].coflow_id);
	for (size_t i = 0; i < u->nclasses; i++)
		class_put(&t->classes, u->classes[i].coflow_id, u->classes[i].cls,
			  u->classes[i].rate_bps);
	flow_maybe_shrink(&t->flows);
	class_maybe_shrink(&t->classes);
	return 0;
}

/* ---- public ---------------------------------------------------------------------------------- */

struct dp_table *dp_table_new(uint32_t nclasses)
{
	struct dp_table *t;

	if (!nclasses) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->nclasses = nclasses;
	t->default_class = nclasses - 1;
	return t;
}

struct dp_table *dp_table_free(struct dp_table *t)
{
	if (t) {
		flow_map_done(&t->flows);
		class_map_done(&t->classes);
		free(t);
	}
	return NULL;
}

int dp_table_apply(struct dp_table *t, const struct dp_update *u)
{
	int r = validate(t, u);

	if (r < 0)
		return r;
	r = u->full ? apply_full(t, u) : apply_delta(t, u);
	if (r < 0)
		return r;
	t->version = u->version;
	t->default_class = u->default_class;
	return 0;
}

uint64_t dp_table_version(const struct dp_table *t)
{
	return t->version;
}

uint32_t dp_table_nclasses(const struct dp_table *t)
{
	return t->nclasses;
}

uint32_t dp_table_default_class(const struct dp_table *t)
{
	return t->default_class;
}

uint32_t dp_table_lookup(const struct dp_table *t, const struct wire_tuple *tuple,
			 uint64_t *ret_coflow, bool *ret_known)
{
	size_t i = flow_find(&t->flows, tuple);
	uint64_t coflow_id = 0;
	uint32_t cls = t->default_class;

	if (i != NOT_FOUND) {
		size_t c;

		coflow_id = t->flows.rec[i].coflow_id;
		c = class_find(&t->classes, coflow_id);
		if (c != NOT_FOUND)
			cls = t->classes.rec[c].cls;
	}
	if (ret_coflow)
		*ret_coflow = coflow_id;
	if (ret_known)
		*ret_known = i != NOT_FOUND;
	return cls;
}

int dp_table_coflow(const struct dp_table *t, uint64_t coflow_id, uint32_t *ret_cls,
		    uint64_t *ret_rate_bps)
{
	size_t c = class_find(&t->classes, coflow_id);

	if (c == NOT_FOUND)
		return -ENOENT;
	if (ret_cls)
		*ret_cls = t->classes.rec[c].cls;
	if (ret_rate_bps)
		*ret_rate_bps = t->classes.rec[c].rate_bps;
	return 0;
}

size_t dp_table_nflows(const struct dp_table *t)
{
	return t->flows.n;
}

size_t dp_table_ncoflows(const struct dp_table *t)
{
	return t->classes.n;
}

int dp_tuple_cmp(const struct wire_tuple *a, const struct wire_tuple *b)
{
	int r;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->protocol != b->protocol)
		return a->protocol < b->protocol ? -1 : 1;
	r = memcmp(a->src, b->src, sizeof(a->src));
	if (r)
		return r;
	r = memcmp(a->dst, b->dst, sizeof(a->dst));
	if (r)
		return r;
	if (a->src_port != b->src_port)
		return a->src_port < b->src_port ? -1 : 1;
	if (a->dst_port != b->dst_port)
		return a->dst_port < b->dst_port ? -1 : 1;
	return 0;
}

/*
 * A flow's sort key: its tuple in dp_tuple_cmp's order (family, protocol,
 * source and destination addresses, ports as numbers) as five big-endian
 * words, so that comparing keys is comparing words; and where the flow is.
 */
struct sort_rec {
	uint64_t w[5];
	uint32_t at;
};

static inline uint64_t be_word(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v << (8 * (8 - n));
}

static void sort_rec_make(struct sort_rec *r, const struct wire_tuple *t, uint32_t at)
{
	uint8_t k[40];

	k[0] = t->family;
	k[1] = t->protocol;
	memcpy(k + 2, t->src, 16);
	memcpy(k + 18, t->dst, 16);
	k[34] = (uint8_t)(t->src_port >> 8), k[35] = (uint8_t)t->src_port;
	k[36] = (uint8_t)(t->dst_port >> 8), k[37] = (uint8_t)t->dst_port;
	k[38] = k[39] = 0;
	for (int i = 0; i < 5; i++)
		r->w[i] = be_word(k + 8 * i, 8);
	r->at = at;
}

static inline bool sort_rec_less(const struct sort_rec *a, const struct sort_rec *b)
{
	for (int i = 0; i < 5; i++)
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i];
	return false;
}

static inline void sort_rec_swap(struct sort_rec *a, struct sort_rec *b)
{
	struct sort_rec x = *a;

	*a = *b;
	*b = x;
}

/*
 * Sorts r[0..n) (quicksort with the median of three, insertion sort below 16,
 * the smaller part first so the stack stays O(log n)). qsort with a
 * comparison through a function pointer on the 64-byte snapshot entries
 * took most of a 64K-flow snapshot's time.
 */
static void sort_recs(struct sort_rec *r, size_t n)
{
	size_t lo_stack[64], hi_stack[64];
	int sp = 0;

	lo_stack[sp] = 0, hi_stack[sp++] = n;
	while (sp > 0) {
		size_t lo = lo_stack[--sp], hi = hi_stack[sp];

		while (hi - lo > 16) {
			size_t mid = lo + (hi - lo) / 2, i = lo, j = hi - 1;
			struct sort_rec pivot;

			if (sort_rec_less(&r[mid], &r[lo]))
				sort_rec_swap(&r[mid], &r[lo]);
			if (sort_rec_less(&r[hi - 1], &r[lo]))
				sort_rec_swap(&r[hi - 1], &r[lo]);
			if (sort_rec_less(&r[hi - 1], &r[mid]))
				sort_rec_swap(&r[hi - 1], &r[mid]);
			pivot = r[mid];
			for (;;) { /* Hoare: r[lo..i) <= pivot <= r(j..hi) */
				while (sort_rec_less(&r[i], &pivot))
					i++;
				while (sort_rec_less(&pivot, &r[j]))
					j--;
				if (i >= j)
					break;
				sort_rec_swap(&r[i++], &r[j--]);
			}
			/* [lo, j] and [j + 1, hi): push the larger, loop on the smaller */
			if (j + 1 - lo < hi - (j + 1)) {
				lo_stack[sp] = j + 1, hi_stack[sp++] = hi;
				hi = j + 1;
			} else {
				lo_stack[sp] = lo, hi_stack[sp++] = j + 1;
				lo = j + 1;
			}
		}
		for (size_t i = lo + 1; i < hi; i++) {
			struct sort_rec x = r[i];
			size_t j = i;

			for (; j > lo && sort_rec_less(&x, &r[j - 1]); j--)
				r[j] = r[j - 1];
			r[j] = x;
		}
	}
}

/* Writes f's snapshot entry: its tuple, coflow, and its coflow's class (or the default). */
static void snapshot_fill(const struct dp_table *t, const struct flow_rec *f,
			  struct dp_snapshot_flow *o)
{
	size_t c = class_find(&t->classes, f->coflow_id);

	o->tuple = f->tuple;
	o->coflow_id = f->coflow_id;
	o->cls = t->default_class;
	if (c != NOT_FOUND) {
		o->cls = t->classes.rec[c].cls;
		o->rate_bps = t->classes.rec[c].rate_bps;
	}
}

struct dp_snapshot *dp_table_snapshot(const struct dp_table *t)
{
	size_t n = t->flows.n;
	struct sort_rec *recs = NULL;
	struct dp_snapshot *s;

	if (n > (SIZE_MAX - sizeof(*s)) / sizeof(struct dp_snapshot_flow)) {
		errno = ENOMEM;
		return NULL;
	}
	s = calloc(1, sizeof(*s) + n * sizeof(struct dp_snapshot_flow));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->version = t->version;
	s->default_class = t->default_class;
	s->n = n;
	s->flows = n ? (struct dp_snapshot_flow *)(s + 1) : NULL;
	if (n > 1) {
		recs = malloc(n * sizeof(*recs));
		if (!recs) {
			free(s);
			errno = ENOMEM;
			return NULL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct flow_rec *f = &t->flows.rec[i];

		if (recs)
			sort_rec_make(&recs[i], &f->tuple, (uint32_t)i);
		else
			snapshot_fill(t, f, &s->flows[i]);
	}
	if (recs) {
		sort_recs(recs, n);
		for (size_t j = 0; j < n; j++)
			snapshot_fill(t, &t->flows.rec[recs[j].at], &s->flows[j]);
		free(recs);
	}
	return s;
}

struct dp_snapshot *dp_snapshot_free(struct dp_snapshot *s)
{
	free(s);
	return NULL;
}

const struct dp_snapshot_flow *dp_snapshot_find(const struct dp_snapshot *s,
						const struct wire_tuple *tuple)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = dp_tuple_cmp(&s->flows[mid].tuple, tuple);

		if (!r)
			return &s->flows[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
