/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "tc" enforcer: Loom's eBPF program on the tc egress hook of one
 * interface, with an HTB class per priority class (ebpf/loader.h says what
 * it installs, ebpf/loom_tc.h what the program does to each packet).
 *
 *   --enforcer tc --enforcer-args "iface=IF [rate=RATE] [dscp=MAP|none] [default=CLASS]"
 *
 *   iface    the interface whose egress is enforced (required)
 *   rate     the link rate in bit/s, k/M/G suffixes (1000-based); default:
 *            the speed the interface reports (ethtool)
 *   dscp     CLASS:DSCP,... over the default map (class k -> CS(7-k), classes
 *            8 and up -> 0), as the dpdk enforcer's; "none": DSCP untouched
 *   default  the class of unknown flows until the first table (which then
 *            gives its own); default: the lowest class
 *
 * Counter slots: each flow of the table holds a slot of the program's
 * per-CPU counter array for as long as it stays in the table (a flow in two
 * successive tables keeps its slot, so its bytes are neither lost nor
 * counted twice). A flow removed by apply() keeps its slot until the next
 * collect() (or, when slots run short, the next apply()) has read its last
 * bytes; the slot is then zeroed and reused. collect() reports each flow's
 * bytes since the last report; a removed flow's last report says done
 * (unless a later table has it again), and is made even with no new bytes
 * when the flow sent anything at all, so loomd hears that it is gone.
 *
 * Unknown flows (not in the table) are announced by the program through a
 * ring buffer; collect() polls it (the agent calls collect() every stats
 * interval from its libevent loop, which is soon enough: the flows are
 * reported by their bytes, once per interval), keeps each announced flow's
 * bytes at its last report, and reports the growth like a known flow's
 * (loomd counts bytes of tuples it does not know as unknown bytes). An
 * unknown flow idle for TCF_UNKNOWN_IDLE collects is forgotten (and removed
 * from the program's LRU map, so it is announced again if it comes back).
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/hmap.h"
#include "common/log.h"
#include "common/units.h"
#include "dataplane/agent.h"
#include "dataplane/enforcer_tc.h"
#include "ebpf/loader.h"

#define TCF_MAX_ARGS     16
#define TCF_SMALL_MAX    65535                         /* small=: at most an IP packet's length */
#define TCF_UNKNOWN_MAX  (LOOM_TC_MAX_UNKNOWN / 2 * 3) /* unknown flows tracked at most */
#define TCF_UNKNOWN_IDLE 50 /* collects without new bytes before an unknown flow is forgotten */
#define TCF_NO_SLOT      UINT32_MAX
#define TCF_SLOT_NEW     0x80000000u /* marks a slot in slot_of taken for a table not synced yet */

/* An unknown flow the program announced. */
struct tcf_unknown {
	struct loom_tc_key key;
	uint64_t last; /* its bytes in loom_unknown at the last report */
	uint32_t idle; /* collects since its bytes last grew */
};

/* A flow removed from the table whose slot has not been read for the last time. */
struct tcf_gone {
	struct wire_tuple t;
	uint32_t slot;
};

/* A removed flow's last bytes, reported by the next collect. */
struct tcf_final {
	struct wire_tuple t;
	uint64_t bytes; /* since its last report */
	uint64_t total; /* all it sent */
};

struct tcf {
	struct ebpf_tc *tc;
	char ifname[IF_NAMESIZE];
	uint32_t classes;
	uint64_t rate_bps;
	bool rewrite_dscp;
	bool pin_default; /* unknown=: the tables' default class is not applied */

	struct dp_snapshot *snap; /* the table enforced; NULL before the first */
	uint32_t *slot_of;        /* the slot of snap->flows[i] */

	uint64_t *last;       /* per slot: its bytes at the last report */
	uint32_t *free_slots; /* a stack of zeroed slots, the lowest on top */
	size_t nfree;
	uint32_t high;                    /* slots [0, high) have been handed out */
	struct loom_tc_counter *counters; /* per slot, as last read */
	struct tcf_gone *gone;
	size_t ngone, capgone;
	struct tcf_final *final;
	size_t nfinal, capfinal;

	/* unknown flows: unk[0, nunk) of TCF_UNKNOWN_MAX, found through unk_index */
	struct tcf_unknown *unk;
	size_t nunk;
	struct loom_hmap unk_index; /* unk_hash(key) -> index in unk; fixed, keys may repeat */

	uint64_t applied, apply_failures, unknown_untracked, slots_lost;
};

/* ---- tuples ---------------------------------------------------------------------------------- */

static void key_of(const struct wire_tuple *t, struct loom_tc_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = t->family;
	k->protocol = t->protocol;
	k->src_port = htons(t->src_port);
	k->dst_port = htons(t->dst_port);
	memcpy(k->src, t->src, 16);
	memcpy(k->dst, t->dst, 16);
}

static void tuple_of(const struct loom_tc_key *k, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = k->family;
	t->protocol = k->protocol;
	t->src_port = ntohs(k->src_port);
	t->dst_port = ntohs(k->dst_port);
	memcpy(t->src, k->src, 16);
	memcpy(t->dst, k->dst, 16);
}

/* ---- unknown flows: a dense array indexed by a fixed common/hmap ----------------------------- */

/*
 * FNV-1a over the key's bytes (loom_hmap mixes the result; the key has no
 * implicit padding, ebpf/loom_tc.h). Only this process's unk_index uses it:
 * the BPF maps hash their keys in the kernel, and the unknown flows' order is
 * unk[]'s, not the index's.
 */
static uint64_t unk_hash(const struct loom_tc_key *k)
{
	return loom_hash_bytes(k, sizeof(*k));
}

/* Returns the unk_index position of the record of key, or LOOM_HMAP_NPOS. */
static size_t unk_pos(const struct tcf *t, const struct loom_tc_key *key, uint64_t h)
{
	for (size_t p = loom_hmap_find(&t->unk_index, h); p != LOOM_HMAP_NPOS;
	     p = loom_hmap_find_next(&t->unk_index, h, p))
		if (!memcmp(&t->unk[t->unk_index.slot[p].val].key, key, sizeof(*key)))
			return p;
	return LOOM_HMAP_NPOS;
}

/*
 * Finds key; with insert, adds it (zeroed) when absent. NULL when absent and
 * not inserting, or when TCF_UNKNOWN_MAX flows are tracked. Never allocates.
 */
static struct tcf_unknown *unk_find(struct tcf *t, const struct loom_tc_key *key, bool insert)
{
	uint64_t h = unk_hash(key);
	size_t p = unk_pos(t, key, h);
	struct tcf_unknown *u;

	if (p != LOOM_HMAP_NPOS)
		return &t->unk[t->unk_index.slot[p].val];
	if (!insert || t->nunk >= TCF_UNKNOWN_MAX ||
	    loom_hmap_add_dup(&t->unk_index, h, t->nunk) < 0) /* room for TCF_UNKNOWN_MAX */
		return NULL;
	u = &t->unk[t->nunk++];
	memset(u, 0, sizeof(*u));
	u->key = *key;
	return u;
}

/* Forgets unk[i]: the last record moves into its place (a loop over unk looks at i again). */
static void unk_delete(struct tcf *t, size_t i)
{
	size_t last = t->nunk - 1,
	       p = loom_hmap_find_val(&t->unk_index, unk_hash(&t->unk[i].key), i);

	loom_hmap_remove_at(&t->unk_index, p);
	t->nunk--;
	if (i == last)
		return;
	t->unk[i] = t->unk[last];
	p = loom_hmap_find_val(&t->unk_index, unk_hash(&t->unk[i].key), last);
	t->unk_index.slot[p].val = i;
}

static void on_event(void *ctx, const struct loom_tc_event *ev)
{
	struct tcf *t = ctx;
	struct tcf_unknown *u = unk_find(t, &ev->key, true);

	if (!u) {
		t->unknown_untracked++;
		return;
	}
	/* a new life in loom_unknown: its counters start again from this packet */
	u->last = 0;
	u->idle = 0;
}

/* ---- counter slots ------------------------------------------------------------------------- */

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * size);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

static int counters_refresh(struct tcf *t)
{
	return t->high ? ebpf_tc_counters_read(t->tc, t->high, t->counters) : 0;
}

/*
 * Takes the last bytes of every removed flow (t->counters must be fresh)
 * into t->final, zeroes their slots and frees them.
 */
static void reclaim(struct tcf *t)
{
	if (!grow((void **)&t->final, &t->capfinal, t->nfinal + t->ngone, sizeof(*t->final)))
		return; /* keep them for the next time */
	for (size_t i = 0; i < t->ngone; i++) {
		uint32_t s = t->gone[i].slot;
		uint64_t b = t->counters[s].bytes;
		struct tcf_final *f = &t->final[t->nfinal++];

		f->t = t->gone[i].t;
		f->bytes = b >= t->last[s] ? b - t->last[s] : 0;
		f->total = b;
		t->last[s] = 0;
		t->counters[s].bytes = t->counters[s].packets = 0;
		if (ebpf_tc_counter_clear(t->tc, s) == 0)
			t->free_slots[t->nfree++] = s;
		else
			t->slots_lost++; /* never reused: it would start with someone else's bytes */
	}
	t->ngone = 0;
}

static uint32_t slot_take(struct tcf *t)
{
	uint32_t s = t->free_slots[--t->nfree];

	if (s >= t->high)
		t->high = s + 1;
	return s;
}

/* ---- arguments ------------------------------------------------------------------------------- */

static int parse_option(struct tcf_args *a, char *opt, struct loom_err *err)
{
	char *v = strchr(opt, '=');
	struct loom_err e2 = {{0}};

	if (!v)
		return loom_err_set(err, EINVAL, "tc enforcer: '%s' is not OPTION=VALUE", opt);
	*v++ = '\0';
	if (!strcmp(opt, "iface")) {
		if (!*v || strlen(v) >= sizeof(a->iface))
			return loom_err_set(err, EINVAL, "tc enforcer: iface: bad name '%s'", v);
		snprintf(a->iface, sizeof(a->iface), "%s", v);
	} else if (!strcmp(opt, "rate")) {
		if (loom_units_rate(v, &a->rate_bps, &e2) < 0)
			return loom_err_set(err, EINVAL, "tc enforcer: rate: %s", e2.msg);
		if (a->rate_bps == 0)
			return loom_err_set(err, EINVAL, "tc enforcer: rate: must be above 0");
	} else if (!strcmp(opt, "dscp")) {
		if (!strcmp(v, "none")) {
			a->rewrite_dscp = false;
			return 0;
		}
		a->rewrite_dscp = true;
		if (dp_dscp_map_parse(v, LOOM_TC_MAX_CLASSES, &a->dscp, &e2) < 0)
			return loom_err_set(err, EINVAL, "tc enforcer: dscp: %s", e2.msg);
		return 0;
	} else if (!strcmp(opt, "default") || !strcmp(opt, "unknown")) {
		unsigned long long x;

		if (loom_parse_u64(v, &x) < 0 || x >= LOOM_TC_MAX_CLASSES)
			return loom_err_set(err, EINVAL,
					    "tc enforcer: %s: '%s' is not a class 0..%d", opt, v,
					    LOOM_TC_MAX_CLASSES - 1);
		a->default_class = (long)x;
		a->pin_default = !strcmp(opt, "unknown");
	} else if (!strcmp(opt, "small")) {
		unsigned long long x;

		if (loom_parse_u64(v, &x) < 0 || x > TCF_SMALL_MAX)
			return loom_err_set(err, EINVAL,
					    "tc enforcer: small: '%s' is not a packet length 0..%d",
					    v, TCF_SMALL_MAX);
		a->small_bytes = (uint32_t)x;
	} else {
		return loom_err_set(
			err, EINVAL,
			"tc enforcer: unknown option '%s' (iface, rate, dscp, default, unknown, small)",
			opt);
	}
	return 0;
}

static int parse_args(struct tcf_args *a, const char *args, struct loom_err *err)
{
	char *buf = strdup(args ? args : "");
	int n = 0, r = 0;

	if (!buf)
		return loom_err_set(err, ENOMEM, "out of memory");
	memset(a, 0, sizeof(*a));
	a->rewrite_dscp = true;
	a->default_class = -1;
	dp_dscp_map_default(&a->dscp);
	for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save); t && r == 0;
	     t = strtok_r(NULL, " \t\n", &save)) {
		if (++n > TCF_MAX_ARGS)
			r = loom_err_set(err, EINVAL, "tc enforcer: more than %d arguments",
					 TCF_MAX_ARGS);
		else
			r = parse_option(a, t, err);
	}
	free(buf);
	return r;
}

int dp_tc_args_parse(const char *args, struct tcf_args *ret, struct loom_err *err)
{
	struct tcf_args a;
	int r = parse_args(&a, args, err);

	if (r == 0)
		*ret = a;
	return r;
}

/* The speed the interface reports (ethtool), in bit/s; 0 when unknown. */
static uint64_t iface_speed_bps(const char *iface)
{
	struct ethtool_cmd cmd = {.cmd = ETHTOOL_GSET};
	struct ifreq ifr;
	uint32_t mbps;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	ifr.ifr_data = (char *)&cmd;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
		close(fd);
		return 0;
	}
	close(fd);
	mbps = ethtool_cmd_speed(&cmd);
	return mbps && mbps != (uint32_t)SPEED_UNKNOWN ? (uint64_t)mbps * 1000000ull : 0;
}

/* ---- the class ------------------------------------------------------------------------------- */

static void tcf_done(struct dp_enforcer *e);

static int tcf_init(struct dp_enforcer *e, const char *args, uint32_t classes, struct loom_err *err)
{
	struct tcf_args a;
	struct ebpf_tc_opts o;
	struct tcf *t;
	struct ebpf_err e2;
	int r;

	if (classes == 0 || classes > LOOM_TC_MAX_CLASSES)
		return loom_err_set(err, EINVAL, "tc enforcer: %u classes (1..%d)", classes,
				    LOOM_TC_MAX_CLASSES);
	r = dp_tc_args_parse(args, &a, err);
	if (r < 0)
		return r;
	if (!a.iface[0])
		return loom_err_set(err, EINVAL,
				    "tc enforcer: no interface (give iface=IF in --enforcer-args)");
	if (!if_nametoindex(a.iface))
		return loom_err_set(err, ENODEV, "tc enforcer: no interface '%s'", a.iface);
	if (a.default_class >= (long)classes)
		return loom_err_set(err, EINVAL, "tc enforcer: default: class %ld of %u classes",
				    a.default_class, classes);
	if (!a.rate_bps) {
		a.rate_bps = iface_speed_bps(a.iface);
		if (!a.rate_bps)
			return loom_err_set(err, EINVAL,
					    "tc enforcer: %s does not report its speed: give "
					    "rate=RATE (bit/s, k/M/G)",
					    a.iface);
	}

	t = calloc(1, sizeof(*t));
	if (!t)
		return loom_err_set(err, ENOMEM, "out of memory");
	e->priv = t;
	snprintf(t->ifname, sizeof(t->ifname), "%s", a.iface);
	t->classes = classes;
	t->rate_bps = a.rate_bps;
	t->rewrite_dscp = a.rewrite_dscp;
	t->pin_default = a.pin_default;
	t->last = calloc(LOOM_TC_FLOW_SLOTS, sizeof(*t->last));
	t->free_slots = malloc(LOOM_TC_FLOW_SLOTS * sizeof(*t->free_slots));
	t->counters = calloc(LOOM_TC_FLOW_SLOTS, sizeof(*t->counters));
	t->unk = calloc(TCF_UNKNOWN_MAX, sizeof(*t->unk));
	if (!t->last || !t->free_slots || !t->counters || !t->unk ||
	    loom_hmap_init(&t->unk_index, TCF_UNKNOWN_MAX, LOOM_HMAP_FIXED) < 0) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t s = 0; s < LOOM_TC_FLOW_SLOTS; s++)
		t->free_slots[s] = LOOM_TC_FLOW_SLOTS - 1 - s;
	t->nfree = LOOM_TC_FLOW_SLOTS;

	memset(&o, 0, sizeof(o));
	o.ifname = a.iface;
	o.classes = classes;
	o.rate_bps = a.rate_bps;
	o.rewrite_dscp = a.rewrite_dscp;
	memcpy(o.dscp, a.dscp.dscp, sizeof(o.dscp));
	o.small_bytes = a.small_bytes;
	o.default_class = a.default_class >= 0 ? (uint32_t)a.default_class : classes - 1;
	t->tc = ebpf_tc_new(&o, &e2);
	if (!t->tc) {
		r = loom_err_set(err, errno, "tc enforcer: %s", e2.msg);
		goto fail;
	}
	log_debug("tc enforcer: %s: %u HTB classes at %" PRIu64 " bit/s, program attached",
		  t->ifname, classes, t->rate_bps);
	return 0;
fail:
	tcf_done(e);
	return r;
}

static void tcf_done(struct dp_enforcer *e)
{
	struct tcf *t = e->priv;

	if (!t)
		return;
	ebpf_tc_free(t->tc);
	dp_snapshot_free(t->snap);
	free(t->slot_of);
	free(t->last);
	free(t->free_slots);
	free(t->counters);
	free(t->gone);
	free(t->final);
	free(t->unk);
	loom_hmap_done(&t->unk_index);
	free(t);
	e->priv = NULL;
}

/*
 * 0 if snap fits this enforcer, its classes beyond ours lowered to our
 * lowest (as in the dpdk enforcer); -EINVAL (a bad default class) or -ENOSPC.
 */
static int snap_fit(const struct tcf *t, struct dp_snapshot *snap)
{
	if (snap->default_class >= t->classes)
		return -EINVAL;
	if (snap->n > LOOM_TC_MAX_FLOWS)
		return -ENOSPC;
	for (size_t k = 0; k < snap->n; k++)
		if (snap->flows[k].cls >= t->classes)
			snap->flows[k].cls = t->classes - 1;
	return 0;
}

/*
 * Pairs snap's flows with the enforced table's (both sorted by dp_tuple_cmp,
 * so one merge does): slot_of[i] is the slot flow i keeps, or TCF_NO_SLOT
 * for a new one; rm[0 .. *ret_nrm) the old flows gone. Returns how many
 * flows are new.
 */
static size_t flows_pair(const struct tcf *t, const struct dp_snapshot *snap, uint32_t *slot_of,
			 size_t *rm, size_t *ret_nrm)
{
	const struct dp_snapshot *old = t->snap;
	size_t n = snap->n, oldn = old ? old->n : 0, i = 0, j = 0, need = 0, nrm = 0;

	while (i < n || j < oldn) {
		int c = i == n    ? 1 :
			j == oldn ? -1 :
				    dp_tuple_cmp(&snap->flows[i].tuple, &old->flows[j].tuple);

		if (c < 0) {
			slot_of[i++] = TCF_NO_SLOT;
			need++;
		} else if (c == 0) {
			slot_of[i++] = t->slot_of[j++];
		} else {
			rm[nrm++] = j++;
		}
	}
	*ret_nrm = nrm;
	return need;
}

/* Gives each new flow a free slot (marked new until synced) and lays out the map entries. */
static void entries_fill(struct tcf *t, const struct dp_snapshot *snap, uint32_t *slot_of,
			 struct ebpf_tc_entry *ent)
{
	for (size_t k = 0; k < snap->n; k++) {
		if (slot_of[k] == TCF_NO_SLOT)
			slot_of[k] = slot_take(t) | TCF_SLOT_NEW;
		key_of(&snap->flows[k].tuple, &ent[k].key);
		memset(&ent[k].val, 0, sizeof(ent[k].val));
		ent[k].val.slot = slot_of[k] & ~TCF_SLOT_NEW;
		ent[k].val.cls = (uint8_t)snap->flows[k].cls;
	}
}

/* Gives the slots marked new back, zeroed: the map may have pointed at them. */
static void slots_give_back(struct tcf *t, const uint32_t *slot_of, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (slot_of[k] & TCF_SLOT_NEW) {
			uint32_t s = slot_of[k] & ~TCF_SLOT_NEW;

			if (ebpf_tc_counter_clear(t->tc, s) == 0)
				t->free_slots[t->nfree++] = s;
			else
				t->slots_lost++;
		}
}

/*
 * Writes snap's default class and entries to the program's maps (only the
 * differences: ebpf_tc_sync). On failure gives the new slots back.
 */
static int table_sync(struct tcf *t, const struct dp_snapshot *snap,
		      const struct ebpf_tc_entry *ent, const uint32_t *slot_of)
{
	struct ebpf_err e2 = {{0}};
	int r;

	r = t->pin_default ? 0 : ebpf_tc_set_default_class(t->tc, snap->default_class);
	if (r == 0)
		r = ebpf_tc_sync(t->tc, ent, snap->n, NULL, &e2);
	if (r < 0) {
		slots_give_back(t, slot_of, snap->n);
		log_debug("tc enforcer: table %" PRIu64 " not applied: %s", snap->version,
			  e2.msg[0] ? e2.msg : strerror(-r));
	}
	return r;
}

/* Keeps the removed flows' slots for their last read (reclaim); without room, loses them. */
static void flows_forget(struct tcf *t, const size_t *rm, size_t nrm)
{
	if (!grow((void **)&t->gone, &t->capgone, t->ngone + nrm, sizeof(*t->gone))) {
		/* cannot remember them: their last bytes are lost, their slots too */
		t->slots_lost += nrm;
		nrm = 0;
	}
	for (size_t k = 0; k < nrm; k++) {
		t->gone[t->ngone].t = t->snap->flows[rm[k]].tuple;
		t->gone[t->ngone++].slot = t->slot_of[rm[k]];
	}
}

/* Makes snap (with its slots) the enforced table, taking both; frees the previous one. */
static void table_swap(struct tcf *t, struct dp_snapshot *snap, uint32_t *slot_of)
{
	dp_snapshot_free(t->snap);
	free(t->slot_of);
	t->snap = snap;
	t->slot_of = slot_of;
	t->applied++;
}

/*
 * Enforces snap from now on: its flows keep the slots they held in the
 * previous table, new flows get free ones, and the program's map gets only
 * the differences (ebpf_tc_sync). Takes snap, also on failure (then frees it
 * and keeps the previous table). 0, -EINVAL (a bad default class),
 * -ENOSPC (more than LOOM_TC_MAX_FLOWS flows), -ENOMEM, or what the kernel said.
 */
static int tcf_apply(struct dp_enforcer *e, struct dp_snapshot *snap)
{
	struct tcf *t = e->priv;
	size_t n, oldn = t->snap ? t->snap->n : 0, need, nrm = 0;
	uint32_t *slot_of = NULL;
	size_t *rm = NULL;
	struct ebpf_tc_entry *ent = NULL;
	int r;

	if (!snap)
		return -EINVAL;
	n = snap->n;
	r = snap_fit(t, snap);
	if (r < 0)
		goto out;
	slot_of = malloc((n ? n : 1) * sizeof(*slot_of));
	rm = malloc((oldn ? oldn : 1) * sizeof(*rm));
	ent = malloc((n ? n : 1) * sizeof(*ent));
	if (!slot_of || !rm || !ent) {
		r = -ENOMEM;
		goto out;
	}
	need = flows_pair(t, snap, slot_of, rm, &nrm);
	if (need > t->nfree && counters_refresh(t) == 0)
		reclaim(t); /* flows removed by earlier tables: out of the map already */
	if (need > t->nfree) {
		r = -ENOSPC;
		goto out;
	}
	entries_fill(t, snap, slot_of, ent);
	r = table_sync(t, snap, ent, slot_of);
	if (r < 0)
		goto out;
	for (size_t k = 0; k < n; k++)
		slot_of[k] &= ~TCF_SLOT_NEW;
	flows_forget(t, rm, nrm);
	table_swap(t, snap, slot_of);
	slot_of = NULL;
	snap = NULL;
out:
	if (r < 0)
		t->apply_failures++;
	dp_snapshot_free(snap);
	free(slot_of);
	free(rm);
	free(ent);
	return r;
}

static void tcf_collect(struct dp_enforcer *e, dp_counter_fn fn, void *ctx)
{
	struct tcf *t = e->priv;
	struct wire_tuple tu;

	/*
	 * The agent's loop calls this every stats interval; new unknown flows are
	 * taken from the ring buffer here rather than by watching its fd.
	 */
	ebpf_tc_events_poll(t->tc, on_event, t);
	if (counters_refresh(t) < 0)
		return; /* nothing is lost: the counters are read again next time */
	reclaim(t);
	for (size_t k = 0; k < t->nfinal; k++) {
		const struct tcf_final *f = &t->final[k];
		bool done = !(t->snap && dp_snapshot_find(t->snap, &f->t));

		if (f->bytes || (done && f->total))
			fn(ctx, &f->t, f->bytes, done);
	}
	t->nfinal = 0;
	for (size_t k = 0; t->snap && k < t->snap->n; k++) {
		uint32_t s = t->slot_of[k];
		uint64_t b = t->counters[s].bytes;

		if (b > t->last[s]) {
			fn(ctx, &t->snap->flows[k].tuple, b - t->last[s], false);
			t->last[s] = b;
		}
	}
	for (size_t k = 0; k < t->nunk;) {
		struct tcf_unknown *u = &t->unk[k];
		struct loom_tc_counter c;
		int r;

		r = ebpf_tc_unknown_read(t->tc, &u->key, &c);
		if (r == -ENOENT) { /* evicted by newer unknown flows */
			unk_delete(t, k);
			continue;
		}
		if (r < 0) {
			k++;
			continue;
		}
		if (c.bytes < u->last) /* evicted and back, and we missed its announcement */
			u->last = 0;
		if (c.bytes > u->last) {
			tuple_of(&u->key, &tu);
			fn(ctx, &tu, c.bytes - u->last, false);
			u->last = c.bytes;
			u->idle = 0;
		} else if (++u->idle >= TCF_UNKNOWN_IDLE) {
			ebpf_tc_unknown_forget(t->tc, &u->key);
			unk_delete(t, k);
			continue;
		}
		k++;
	}
}

static void tcf_stats(struct dp_enforcer *e, void (*fn)(void *ctx, const char *name, uint64_t v),
		      void *ctx)
{
	struct tcf *t = e->priv;
	struct loom_tc_stats s;
	char name[32];

	if (ebpf_tc_stats_read(t->tc, &s) < 0)
		memset(&s, 0, sizeof(s));
	for (uint32_t c = 0; c < t->classes; c++) {
		snprintf(name, sizeof(name), "class%u_packets", c);
		fn(ctx, name, s.cls[c].packets);
		snprintf(name, sizeof(name), "class%u_bytes", c);
		fn(ctx, name, s.cls[c].bytes);
	}
	/* the names the dpdk enforcer uses too, then the tc enforcer's own */
	fn(ctx, "known", s.known.packets);
	fn(ctx, "unknown", s.unknown.packets);
	fn(ctx, "unparseable",
	   s.non_ip.packets + s.truncated.packets + s.bad_header.packets + s.fragment.packets +
		   s.other_proto.packets);
	fn(ctx, "known_bytes", s.known.bytes);
	fn(ctx, "unknown_bytes", s.unknown.bytes);
	fn(ctx, "non_ip", s.non_ip.packets);
	fn(ctx, "non_ip_bytes", s.non_ip.bytes);
	fn(ctx, "truncated", s.truncated.packets);
	fn(ctx, "bad_header", s.bad_header.packets);
	fn(ctx, "fragment", s.fragment.packets);
	fn(ctx, "other_proto", s.other_proto.packets);
	fn(ctx, "unknown_flows_reported", s.events);
	fn(ctx, "unknown_events_lost", s.events_lost);
	fn(ctx, "unknown_flows_tracked", t->nunk);
	fn(ctx, "unknown_flows_untracked", t->unknown_untracked);
	fn(ctx, "flows_enforced", t->snap ? t->snap->n : 0);
	fn(ctx, "flows_in_map", ebpf_tc_nflows(t->tc));
	fn(ctx, "snapshots_applied", t->applied);
	fn(ctx, "apply_failures", t->apply_failures);
	fn(ctx, "counter_slots_lost", t->slots_lost);
	fn(ctx, "ifindex", (uint64_t)ebpf_tc_ifindex(t->tc));
	fn(ctx, "rate_bps", t->rate_bps);
	fn(ctx, "dscp_rewrite", t->rewrite_dscp);
	fn(ctx, "offload_tc", 1); /* classification in the kernel's tc egress hook (eBPF) */
}

const struct dp_enforcer_class dp_enforcer_tc = {
	.name = "tc",
	.summary = "eBPF on tc egress + HTB classes (--enforcer-args \"iface=IF [rate=R]\")",
	.init = tcf_init,
	.done = tcf_done,
	.apply = tcf_apply,
	.collect = tcf_collect,
	.stats = tcf_stats,
};
