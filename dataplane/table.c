/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/table: two open-addressing hash maps (linear probing, power-of-two
 * capacity, load at most 3/4, deletion by backward shift so there are no
 * tombstones): flows (tuple -> coflow id; an empty slot has family 0) and
 * classes (coflow id -> class, rate; an empty slot has used 0).
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

#include "dataplane/table.h"

#define MAP_MIN_CAP 16u

struct flow_slot {
	struct wire_tuple tuple; /* tuple.family 0: the slot is empty */
	uint64_t coflow_id;
};

struct class_slot {
	uint64_t coflow_id;
	uint64_t rate_bps;
	uint32_t cls;
	uint32_t used; /* 0: the slot is empty */
};

struct flow_map {
	struct flow_slot *slot;
	size_t cap; /* 0 (no array) or a power of two >= MAP_MIN_CAP */
	size_t n;
};

struct class_map {
	struct class_slot *slot;
	size_t cap;
	size_t n;
};

struct dp_table {
	uint64_t version;
	uint32_t nclasses;
	uint32_t default_class;
	struct flow_map flows;
	struct class_map classes;
};

#define NOT_FOUND SIZE_MAX

/* ---- sizing ---------------------------------------------------------------------------------- */

static bool fits(size_t n, size_t cap)
{
	return cap && n <= cap - cap / 4;
}

/*
 * Returns the capacity for n entries with room to grow (load at most 1/2),
 * or 0 when it would not fit in memory at slot_bytes a slot.
 */
static size_t cap_for(size_t n, size_t slot_bytes)
{
	size_t cap = MAP_MIN_CAP;

	while (cap / 2 < n) {
		if (cap > SIZE_MAX / 2 / slot_bytes)
			return 0;
		cap *= 2;
	}
	return cap;
}

/* ---- flow map -------------------------------------------------------------------------------- */

static size_t flow_home(const struct flow_map *m, const struct wire_tuple *t)
{
	return (size_t)wire_tuple_hash(t) & (m->cap - 1);
}

static size_t flow_find(const struct flow_map *m, const struct wire_tuple *t)
{
	if (!m->cap)
		return NOT_FOUND;
	for (size_t i = flow_home(m, t);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slot[i].tuple.family)
			return NOT_FOUND;
		if (wire_tuple_eq(&m->slot[i].tuple, t))
			return i;
	}
}

/* Adds or replaces t's entry; the caller has made room (flow_reserve). */
static void flow_put(struct flow_map *m, const struct wire_tuple *t, uint64_t coflow_id)
{
	size_t i = flow_home(m, t);

	while (m->slot[i].tuple.family && !wire_tuple_eq(&m->slot[i].tuple, t))
		i = (i + 1) & (m->cap - 1);
	if (!m->slot[i].tuple.family) {
		m->slot[i].tuple = *t;
		m->n++;
	}
	m->slot[i].coflow_id = coflow_id;
}

/* Moves m's entries into a new array of ncap slots; on -ENOMEM m is unchanged. */
static int flow_resize(struct flow_map *m, size_t ncap)
{
	struct flow_map nm = {.cap = ncap, .n = 0};

	nm.slot = calloc(ncap, sizeof(*nm.slot));
	if (!nm.slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].tuple.family)
			flow_put(&nm, &m->slot[i].tuple, m->slot[i].coflow_id);
	free(m->slot);
	*m = nm;
	return 0;
}

/* Makes room for extra more entries. Returns 0 or -ENOMEM (m unchanged). */
static int flow_reserve(struct flow_map *m, size_t extra)
{
	size_t need, ncap;

	if (extra > SIZE_MAX - m->n)
		return -ENOMEM;
	need = m->n + extra;
	if (!need || fits(need, m->cap))
		return 0;
	ncap = cap_for(need, sizeof(struct flow_slot));
	return ncap ? flow_resize(m, ncap) : -ENOMEM;
}

/* Removes the entry at i, shifting later entries of its run back (no tombstones). */
static void flow_erase_at(struct flow_map *m, size_t i)
{
	size_t mask = m->cap - 1;

	for (size_t j = (i + 1) & mask; m->slot[j].tuple.family; j = (j + 1) & mask) {
		size_t home = flow_home(m, &m->slot[j].tuple);

		/* the entry at j may fill i when i lies on its probe path home .. j */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	memset(&m->slot[i], 0, sizeof(m->slot[i]));
	m->n--;
}

static void flow_remove(struct flow_map *m, const struct wire_tuple *t)
{
	size_t i = flow_find(m, t);

	if (i != NOT_FOUND)
		flow_erase_at(m, i);
}

/* Gives memory back after many removals; failing to is harmless. */
static void flow_maybe_shrink(struct flow_map *m)
{
	if (m->cap > MAP_MIN_CAP && m->n < m->cap / 8)
		(void)flow_resize(m, cap_for(m->n, sizeof(struct flow_slot)));
}

/* ---- class map ------------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static size_t class_home(const struct class_map *m, uint64_t id)
{
	return (size_t)mix64(id) & (m->cap - 1);
}

static size_t class_find(const struct class_map *m, uint64_t id)
{
	if (!m->cap)
		return NOT_FOUND;
	for (size_t i = class_home(m, id);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slot[i].used)
			return NOT_FOUND;
		if (m->slot[i].coflow_id == id)
			return i;
	}
}

static void class_put(struct class_map *m, uint64_t id, uint32_t cls, uint64_t rate_bps)
{
	size_t i = class_home(m, id);

	while (m->slot[i].used && m->slot[i].coflow_id != id)
		i = (i + 1) & (m->cap - 1);
	if (!m->slot[i].used) {
		m->slot[i].used = 1;
		m->slot[i].coflow_id = id;
		m->n++;
	}
	m->slot[i].cls = cls;
	m->slot[i].rate_bps = rate_bps;
}

static int class_resize(struct class_map *m, size_t ncap)
{
	struct class_map nm = {.cap = ncap, .n = 0};

	nm.slot = calloc(ncap, sizeof(*nm.slot));
	if (!nm.slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].used)
			class_put(&nm, m->slot[i].coflow_id, m->slot[i].cls, m->slot[i].rate_bps);
	free(m->slot);
	*m = nm;
	return 0;
}

static int class_reserve(struct class_map *m, size_t extra)
{
	size_t need, ncap;

	if (extra > SIZE_MAX - m->n)
		return -ENOMEM;
	need = m->n + extra;
	if (!need || fits(need, m->cap))
		return 0;
	ncap = cap_for(need, sizeof(struct class_slot));
	return ncap ? class_resize(m, ncap) : -ENOMEM;
}

static void class_erase_at(struct class_map *m, size_t i)
{
	size_t mask = m->cap - 1;

	for (size_t j = (i + 1) & mask; m->slot[j].used; j = (j + 1) & mask) {
		size_t home = class_home(m, m->slot[j].coflow_id);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	memset(&m->slot[i], 0, sizeof(m->slot[i]));
	m->n--;
}

static void class_remove(struct class_map *m, uint64_t id)
{
	size_t i = class_find(m, id);

	if (i != NOT_FOUND)
		class_erase_at(m, i);
}

static void class_maybe_shrink(struct class_map *m)
{
	if (m->cap > MAP_MIN_CAP && m->n < m->cap / 8)
		(void)class_resize(m, cap_for(m->n, sizeof(struct class_slot)));
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
		free(fm.slot);
		free(cm.slot);
		return -ENOMEM;
	}
	for (size_t i = 0; i < u->nflows; i++)
		flow_put(&fm, &u->flows[i].tuple, u->flows[i].coflow_id);
	for (size_t i = 0; i < u->nclasses; i++)
		class_put(&cm, u->classes[i].coflow_id, u->classes[i].cls, u->classes[i].rate_bps);
	free(t->flows.slot);
	free(t->classes.slot);
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
		free(t->flows.slot);
		free(t->classes.slot);
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

		coflow_id = t->flows.slot[i].coflow_id;
		c = class_find(&t->classes, coflow_id);
		if (c != NOT_FOUND)
			cls = t->classes.slot[c].cls;
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
		*ret_cls = t->classes.slot[c].cls;
	if (ret_rate_bps)
		*ret_rate_bps = t->classes.slot[c].rate_bps;
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
static void snapshot_fill(const struct dp_table *t, const struct flow_slot *f,
			  struct dp_snapshot_flow *o)
{
	size_t c = class_find(&t->classes, f->coflow_id);

	o->tuple = f->tuple;
	o->coflow_id = f->coflow_id;
	o->cls = t->default_class;
	if (c != NOT_FOUND) {
		o->cls = t->classes.slot[c].cls;
		o->rate_bps = t->classes.slot[c].rate_bps;
	}
}

struct dp_snapshot *dp_table_snapshot(const struct dp_table *t)
{
	size_t n = t->flows.n, k = 0;
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
	for (size_t i = 0; i < t->flows.cap; i++) {
		const struct flow_slot *f = &t->flows.slot[i];

		if (!f->tuple.family)
			continue;
		if (recs)
			sort_rec_make(&recs[k], &f->tuple, (uint32_t)i);
		else
			snapshot_fill(t, f, &s->flows[k]);
		k++;
	}
	if (recs) {
		sort_recs(recs, n);
		for (size_t j = 0; j < n; j++)
			snapshot_fill(t, &t->flows.slot[recs[j].at], &s->flows[j]);
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
