/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loader of Loom's tc egress program: see loader.h. The program and its
 * maps come from the generated skeleton (loom_tc.skel.h); the clsact hook
 * and the filter are libbpf's (bpf_tc_*), the HTB tree and the listings of
 * qdiscs and filters libnl-route-3's.
 */
#include "ebpf/loader.h"

#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <linux/pkt_sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/classifier.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/tc.h>

#include "loom_tc.skel.h"

#define READ_CHUNK     1024u               /* counter slots per batch lookup */
#define WRITE_CHUNK    4096u               /* flows per batch update / delete */
#define MIN_RATE_BPS   1000000ull          /* 1 Mbit/s */
#define MAX_RATE_BPS   1000000000000000ull /* 1 Pbit/s: far above any NIC, below overflow */
#define MIN_CLASS_BPS  8000ull             /* the smallest guaranteed rate of a class */
#define GSO_MAX_BYTES  65536u              /* the largest skb HTB may see (GSO/TSO) */
#define EGRESS_PARENT  TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)
#define INGRESS_PARENT TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)

struct ebpf_tc {
	struct loom_tc *skel;
	struct ring_buffer *rb;
	ebpf_tc_event_fn ev_fn; /* during ebpf_tc_events_poll only */
	void *ev_ctx;
	int ncpus;
	uint32_t classes;
	uint32_t major;

	/* the interface (ifindex 0: loaded only) */
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct nl_sock *nl;
	bool htb_added;  /* our HTB root is there */
	bool attached;   /* our filter is there */
	bool hook_owned; /* the clsact qdisc is ours to remove (when no other filter is left) */

	/* loom_flows as last written, sorted by key; spare and idx are scratch for ebpf_tc_sync */
	struct ebpf_tc_entry *mirror; /* LOOM_TC_FLOW_SLOTS each, from the first sync on */
	struct ebpf_tc_entry *spare;
	size_t *idx; /* 2 x LOOM_TC_FLOW_SLOTS */
	size_t nmirror;
	bool mirror_stale; /* a write failed: reread the map before the next diff */

	/* batch write buffers */
	struct loom_tc_key *wkeys; /* WRITE_CHUNK */
	struct loom_tc_flow *wvals;
	bool batch_ok; /* the kernel has BPF_MAP_*_BATCH (until one says otherwise) */

	/* per-CPU read buffers */
	__u32 *keys;
	void *vals; /* READ_CHUNK counters x ncpus (also fits one struct loom_tc_stats x ncpus) */
	size_t vals_size;
};

int ebpf_err_set(struct ebpf_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code > 0 ? -code : code;
}

/* Writes "IF: " fmt... into err (the interface part only when there is one); returns -e. */
static int fail(const struct ebpf_tc *tc, struct ebpf_err *err, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(const struct ebpf_tc *tc, struct ebpf_err *err, int e, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (err) {
		if (tc && tc->ifname[0])
			n = snprintf(err->msg, sizeof(err->msg), "%s: ", tc->ifname);
		if (n < 0 || (size_t)n >= sizeof(err->msg))
			n = 0;
		va_start(ap, fmt);
		vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -(e ? e : EIO);
}

/* libnl's error codes are not errno values: the closest errno for one. */
static int nl_to_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_EXIST:
		return EEXIST;
	case NLE_PERM:
		return EPERM;
	case NLE_NOACCESS:
		return EACCES;
	case NLE_NODEV:
		return ENODEV;
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_INVAL:
		return EINVAL;
	case NLE_RANGE:
		return ERANGE;
	case NLE_BUSY:
		return EBUSY;
	case NLE_AGAIN:
		return EAGAIN;
	case NLE_OPNOTSUPP:
		return EOPNOTSUPP;
	case NLE_OBJ_NOTFOUND:
		return ENOENT;
	default:
		return EIO;
	}
}

static uint32_t handle_of(const struct ebpf_tc *tc, uint32_t minor)
{
	return TC_H_MAKE(tc->major << 16, minor);
}

/* ---- netlink: qdiscs, classes, filters ------------------------------------------------------- */

/*
 * Looks at the interface's qdiscs: *ret_htb_ours when the root is an HTB
 * with our handle, *ret_clsact when there is a clsact (or ingress) qdisc.
 */
static int qdiscs_scan(struct ebpf_tc *tc, bool *ret_htb_ours, bool *ret_clsact,
		       struct ebpf_err *err)
{
	struct nl_cache *cache = NULL;
	bool htb = false, clsact = false;
	int r = rtnl_qdisc_alloc_cache(tc->nl, &cache);

	if (r < 0)
		return fail(tc, err, nl_to_errno(r), "listing qdiscs: %s", nl_geterror(r));
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_tc *q = TC_CAST(o);
		const char *kind = rtnl_tc_get_kind(q);

		if (rtnl_tc_get_ifindex(q) != tc->ifindex || !kind)
			continue;
		if (rtnl_tc_get_parent(q) == TC_H_ROOT && !strcmp(kind, "htb") &&
		    rtnl_tc_get_handle(q) == handle_of(tc, 0))
			htb = true;
		if (!strcmp(kind, "clsact") || !strcmp(kind, "ingress"))
			clsact = true;
	}
	nl_cache_free(cache);
	*ret_htb_ours = htb;
	*ret_clsact = clsact;
	return 0;
}

/* Counts the filters on the clsact qdisc: ours (egress, cls_bpf at our pref) and the rest. */
static int filters_count(struct ebpf_tc *tc, int *ret_ours, int *ret_others, struct ebpf_err *err)
{
	static const uint32_t parents[] = {EGRESS_PARENT, INGRESS_PARENT};
	int ours = 0, others = 0;

	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		struct nl_cache *cache = NULL;
		int r = rtnl_cls_alloc_cache(tc->nl, tc->ifindex, parents[i], &cache);

		if (r < 0)
			return fail(tc, err, nl_to_errno(r), "listing tc filters: %s",
				    nl_geterror(r));
		for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
			struct rtnl_cls *cls = (struct rtnl_cls *)o;
			const char *kind = rtnl_tc_get_kind(TC_CAST(cls));

			if (parents[i] == EGRESS_PARENT && kind && !strcmp(kind, "bpf") &&
			    rtnl_cls_get_prio(cls) == LOOM_TC_FILTER_PRIO)
				ours++;
			else
				others++;
		}
		nl_cache_free(cache);
	}
	*ret_ours = ours;
	*ret_others = others;
	return 0;
}

/* Deletes the root qdisc when it is an HTB with our handle. 0, -ENOENT or -errno. */
static int htb_delete(struct ebpf_tc *tc)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int r;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), tc->ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), handle_of(tc, 0));
	r = rtnl_tc_set_kind(TC_CAST(q), "htb"); /* the kernel refuses if the root is not htb */
	if (r == 0)
		r = rtnl_qdisc_delete(tc->nl, q);
	rtnl_qdisc_put(q);
	return r < 0 ? -nl_to_errno(r) : 0;
}

static int htb_class_add(struct ebpf_tc *tc, uint32_t parent, uint32_t minor, uint32_t prio,
			 uint64_t rate_Bps, uint64_t ceil_Bps, uint32_t rbuffer, uint32_t cbuffer,
			 uint32_t quantum, uint32_t mtu, struct ebpf_err *err)
{
	struct rtnl_class *c = rtnl_class_alloc();
	int r;

	if (!c)
		return fail(tc, err, ENOMEM, "out of memory");
	rtnl_tc_set_ifindex(TC_CAST(c), tc->ifindex);
	rtnl_tc_set_parent(TC_CAST(c), parent);
	rtnl_tc_set_handle(TC_CAST(c), handle_of(tc, minor));
	rtnl_tc_set_mtu(TC_CAST(c), mtu);
	r = rtnl_tc_set_kind(TC_CAST(c), "htb");
	if (r == 0)
		r = rtnl_htb_set_prio(c, prio);
	if (r == 0)
		r = rtnl_htb_set_rate64(c, rate_Bps);
	if (r == 0)
		r = rtnl_htb_set_ceil64(c, ceil_Bps);
	if (r == 0)
		r = rtnl_htb_set_rbuffer(c, rbuffer);
	if (r == 0)
		r = rtnl_htb_set_cbuffer(c, cbuffer);
	if (r == 0)
		r = rtnl_htb_set_quantum(c, quantum);
	if (r == 0)
		r = rtnl_class_add(tc->nl, c, NLM_F_CREATE);
	rtnl_class_put(c);
	if (r < 0)
		return fail(tc, err, nl_to_errno(r), "adding HTB class %x:%x: %s", tc->major, minor,
			    nl_geterror(r));
	return 0;
}

/*
 * Builds the HTB tree (loader.h) for rate_bps on a link with this MTU,
 * replacing the root qdisc (a dead agent's HTB root is deleted first).
 */
static int htb_setup(struct ebpf_tc *tc, uint64_t rate_bps, uint32_t mtu, bool leftover,
		     struct ebpf_err *err)
{
	uint64_t link_Bps = rate_bps / 8;
	uint64_t class_Bps =
		(rate_bps / 1000 > MIN_CLASS_BPS ? rate_bps / 1000 : MIN_CLASS_BPS) / 8;
	uint32_t frame = mtu + 18; /* Ethernet header and one VLAN tag */
	/* one millisecond at the link rate, and at least one GSO skb */
	uint64_t big = link_Bps / 1000 > GSO_MAX_BYTES + frame ? link_Bps / 1000 :
								 GSO_MAX_BYTES + frame;
	uint32_t cbuffer = big > UINT32_MAX ? UINT32_MAX : (uint32_t)big;
	struct rtnl_qdisc *q;
	int r;

	if (leftover) {
		r = htb_delete(tc);
		if (r < 0 && r != -ENOENT && r != -EINVAL)
			return fail(tc, err, -r, "removing the HTB root a previous agent left: %s",
				    strerror(-r));
	}
	q = rtnl_qdisc_alloc();
	if (!q)
		return fail(tc, err, ENOMEM, "out of memory");
	rtnl_tc_set_ifindex(TC_CAST(q), tc->ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), handle_of(tc, 0));
	r = rtnl_tc_set_kind(TC_CAST(q), "htb");
	if (r == 0)
		r = rtnl_htb_set_defcls(q, LOOM_TC_HTB_MINOR_BASE + tc->classes - 1);
	if (r == 0)
		r = rtnl_htb_set_rate2quantum(q, 10);
	if (r == 0)
		r = rtnl_qdisc_add(tc->nl, q, NLM_F_CREATE | NLM_F_REPLACE);
	rtnl_qdisc_put(q);
	if (r < 0)
		return fail(tc, err, nl_to_errno(r), "adding the HTB root qdisc %x:: %s", tc->major,
			    nl_geterror(r));
	tc->htb_added = true;

	r = htb_class_add(tc, handle_of(tc, 0), LOOM_TC_HTB_PARENT, 0, link_Bps, link_Bps, cbuffer,
			  cbuffer, frame, mtu, err);
	for (uint32_t c = 0; c < tc->classes && r == 0; c++)
		r = htb_class_add(tc, handle_of(tc, LOOM_TC_HTB_PARENT), LOOM_TC_HTB_MINOR_BASE + c,
				  c, class_Bps, link_Bps, 2 * frame, cbuffer, frame, mtu, err);
	return r;
}

/* Creates (or adopts) the clsact hook and attaches the program to egress. */
static int hook_setup(struct ebpf_tc *tc, bool clsact_there, struct ebpf_err *err)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex, .attach_point = BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = LOOM_TC_FILTER_HANDLE,
		    .priority = LOOM_TC_FILTER_PRIO, .flags = BPF_TC_F_REPLACE);
	int r;

	if (!clsact_there) {
		r = bpf_tc_hook_create(&hook);
		if (r < 0 && r != -EEXIST)
			return fail(tc, err, -r, "creating the clsact qdisc: %s", strerror(-r));
		tc->hook_owned = r == 0;
	} else {
		int ours, others;

		r = filters_count(tc, &ours, &others, err);
		if (r < 0)
			return r;
		/* a clsact holding nothing but a dead agent's filter was that agent's */
		tc->hook_owned = ours > 0 && others == 0;
	}
	opts.prog_fd = bpf_program__fd(tc->skel->progs.loom_tc_egress);
	r = bpf_tc_attach(&hook, &opts);
	if (r < 0)
		return fail(tc, err, -r, "attaching the program to egress: %s%s", strerror(-r),
			    r == -EINVAL || r == -EOPNOTSUPP ?
				    " (an 'ingress' qdisc in the way of clsact?)" :
				    "");
	tc->attached = true;
	return 0;
}

/* Removes what we installed on the interface; errors are ignored (best effort). */
static void teardown(struct ebpf_tc *tc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex, .attach_point = BPF_TC_EGRESS);

	if (tc->attached) {
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = LOOM_TC_FILTER_HANDLE,
			    .priority = LOOM_TC_FILTER_PRIO);

		bpf_tc_detach(&hook, &opts);
		tc->attached = false;
	}
	if (tc->htb_added) {
		htb_delete(tc);
		tc->htb_added = false;
	}
	if (tc->hook_owned) {
		int ours = 0, others = 0;

		/* only when nobody else has put a filter on it meanwhile */
		if (filters_count(tc, &ours, &others, NULL) == 0 && ours == 0 && others == 0) {
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
		}
		tc->hook_owned = false;
	}
}

/* ---- lifecycle --------------------------------------------------------------------------------- */

static int on_event(void *ctx, void *data, size_t size)
{
	struct ebpf_tc *tc = ctx;

	if (tc->ev_fn && size >= sizeof(struct loom_tc_event))
		tc->ev_fn(tc->ev_ctx, data);
	return 0;
}

static int check_opts(const struct ebpf_tc_opts *o, struct ebpf_err *err)
{
	if (!o)
		return ebpf_err_set(err, EINVAL, "no options");
	if (o->classes < 1 || o->classes > LOOM_TC_MAX_CLASSES)
		return ebpf_err_set(err, EINVAL, "%u classes (1..%d)", o->classes,
				    LOOM_TC_MAX_CLASSES);
	if (o->default_class >= o->classes)
		return ebpf_err_set(err, EINVAL, "default class %u of %u classes", o->default_class,
				    o->classes);
	for (uint32_t c = 0; c < o->classes; c++)
		if (o->dscp[c] > 63)
			return ebpf_err_set(err, EINVAL, "class %u: DSCP %u (0..63)", c,
					    o->dscp[c]);
	if (o->htb_major > 0x7fff)
		return ebpf_err_set(err, EINVAL, "HTB handle %x: (1..7fff)", o->htb_major);
	if (o->ifname && o->ifname[0]) {
		if (strlen(o->ifname) >= IF_NAMESIZE)
			return ebpf_err_set(err, EINVAL, "interface name '%s' too long", o->ifname);
		if (o->rate_bps < MIN_RATE_BPS || o->rate_bps > MAX_RATE_BPS)
			return ebpf_err_set(
				err, EINVAL,
				"%s: link rate %llu bit/s out of range (1 Mbit/s .. 1 Pbit/s)",
				o->ifname, (unsigned long long)o->rate_bps);
	}
	return 0;
}

/* Opens the interface: index, netlink socket, MTU; Ethernet framing only. */
static int link_open(struct ebpf_tc *tc, const char *ifname, uint32_t *ret_mtu,
		     struct ebpf_err *err)
{
	struct rtnl_link *link = NULL;
	unsigned int type;
	int r;

	snprintf(tc->ifname, sizeof(tc->ifname), "%s", ifname);
	tc->ifindex = (int)if_nametoindex(ifname);
	if (!tc->ifindex)
		return fail(tc, err, ENODEV, "no such interface");
	tc->nl = nl_socket_alloc();
	if (!tc->nl)
		return fail(tc, err, ENOMEM, "out of memory");
	r = nl_connect(tc->nl, NETLINK_ROUTE);
	if (r < 0)
		return fail(tc, err, nl_to_errno(r), "netlink: %s", nl_geterror(r));
	r = rtnl_link_get_kernel(tc->nl, tc->ifindex, NULL, &link);
	if (r < 0)
		return fail(tc, err, nl_to_errno(r), "reading the link: %s", nl_geterror(r));
	*ret_mtu = rtnl_link_get_mtu(link);
	type = rtnl_link_get_arptype(link);
	rtnl_link_put(link);
	if (type != ARPHRD_ETHER && type != ARPHRD_LOOPBACK)
		return fail(tc, err, EOPNOTSUPP,
			    "not an Ethernet interface (ARP type %u): the program parses "
			    "Ethernet frames",
			    type);
	if (*ret_mtu < 68 || *ret_mtu > 65535)
		*ret_mtu = 1500;
	return 0;
}

struct ebpf_tc *ebpf_tc_new(const struct ebpf_tc_opts *opts, struct ebpf_err *err)
{
	struct ebpf_tc *tc;
	uint32_t mtu = 1500;
	bool with_link;
	int r;

	r = check_opts(opts, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	tc = calloc(1, sizeof(*tc));
	if (!tc) {
		ebpf_err_set(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	tc->classes = opts->classes;
	tc->major = opts->htb_major ? opts->htb_major : LOOM_TC_HTB_MAJOR;
	tc->ncpus = libbpf_num_possible_cpus();
	if (tc->ncpus <= 0) {
		r = fail(NULL, err, -tc->ncpus, "counting the possible CPUs: %s",
			 strerror(-tc->ncpus));
		goto fail;
	}
	tc->vals_size = (size_t)tc->ncpus * (READ_CHUNK * sizeof(struct loom_tc_counter) >
							     sizeof(struct loom_tc_stats) ?
						     READ_CHUNK * sizeof(struct loom_tc_counter) :
						     sizeof(struct loom_tc_stats));
	tc->keys = calloc(READ_CHUNK, sizeof(*tc->keys));
	tc->vals = calloc(1, tc->vals_size);
	tc->wkeys = calloc(WRITE_CHUNK, sizeof(*tc->wkeys));
	tc->wvals = calloc(WRITE_CHUNK, sizeof(*tc->wvals));
	tc->batch_ok = true;
	if (!tc->keys || !tc->vals || !tc->wkeys || !tc->wvals) {
		r = ebpf_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}

	with_link = opts->ifname && opts->ifname[0];
	if (with_link) {
		r = link_open(tc, opts->ifname, &mtu, err);
		if (r < 0)
			goto fail;
	}

	tc->skel = loom_tc__open();
	if (!tc->skel) {
		r = fail(tc, err, errno, "opening the BPF object: %s", strerror(errno));
		goto fail;
	}
	tc->skel->rodata->nclasses = opts->classes;
	tc->skel->rodata->htb_major = tc->major;
	tc->skel->rodata->rewrite_dscp = opts->rewrite_dscp;
	for (uint32_t c = 0; c < LOOM_TC_MAX_CLASSES; c++)
		tc->skel->rodata->dscp_of_class[c] = c < opts->classes ? opts->dscp[c] : 0;
	tc->skel->rodata->small_bytes = opts->small_bytes;
	tc->skel->data->loom_default_class = opts->default_class;
	r = loom_tc__load(tc->skel);
	if (r < 0) {
		r = fail(tc, err, -r, "loading the BPF program: %s%s", strerror(-r),
			 r == -EPERM ? " (needs root, or CAP_BPF and CAP_NET_ADMIN)" :
				       " (libbpf printed why above)");
		goto fail;
	}
	tc->rb = ring_buffer__new(bpf_map__fd(tc->skel->maps.loom_events), on_event, tc, NULL);
	if (!tc->rb) {
		r = fail(tc, err, errno, "opening the ring buffer: %s", strerror(errno));
		goto fail;
	}

	if (with_link) {
		bool htb_leftover = false, clsact_there = false;

		r = qdiscs_scan(tc, &htb_leftover, &clsact_there, err);
		if (r == 0)
			r = htb_setup(tc, opts->rate_bps, mtu, htb_leftover, err);
		if (r == 0)
			r = hook_setup(tc, clsact_there, err);
		if (r < 0)
			goto fail;
	}
	return tc;
fail:
	ebpf_tc_free(tc);
	errno = -r;
	return NULL;
}

struct ebpf_tc *ebpf_tc_free(struct ebpf_tc *tc)
{
	if (!tc)
		return NULL;
	if (tc->ifindex && tc->nl)
		teardown(tc);
	ring_buffer__free(tc->rb);
	loom_tc__destroy(tc->skel);
	if (tc->nl)
		nl_socket_free(tc->nl);
	free(tc->mirror);
	free(tc->spare);
	free(tc->idx);
	free(tc->keys);
	free(tc->vals);
	free(tc->wkeys);
	free(tc->wvals);
	free(tc);
	return NULL;
}

int ebpf_tc_prog_fd(const struct ebpf_tc *tc)
{
	return bpf_program__fd(tc->skel->progs.loom_tc_egress);
}

int ebpf_tc_ifindex(const struct ebpf_tc *tc)
{
	return tc->ifindex;
}

int ebpf_tc_set_default_class(struct ebpf_tc *tc, uint32_t cls)
{
	struct loom_tc__data d;
	__u32 zero = 0;

	if (cls >= tc->classes)
		return -EINVAL;
	if (tc->skel->data->loom_default_class == cls)
		return 0;
	/*
	 * Through the map (the skeleton's .data is mmapped where the kernel can,
	 * but a write through the syscall works everywhere); then the skeleton's copy.
	 */
	d = *tc->skel->data;
	d.loom_default_class = cls;
	if (bpf_map_update_elem(bpf_map__fd(tc->skel->maps.data), &zero, &d, BPF_ANY) < 0)
		return -errno;
	tc->skel->data->loom_default_class = cls;
	return 0;
}

/* ---- the flow table ------------------------------------------------------------------------------ */

static int entry_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct ebpf_tc_entry *)a)->key,
		      &((const struct ebpf_tc_entry *)b)->key, sizeof(struct loom_tc_key));
}

/*
 * The sync buffers, allocated once (the first sync): reusing them spares a
 * large allocation's page faults per table.
 */
static int scratch_alloc(struct ebpf_tc *tc, struct ebpf_err *err)
{
	if (tc->mirror)
		return 0;
	tc->mirror = malloc(LOOM_TC_FLOW_SLOTS * sizeof(*tc->mirror));
	tc->spare = malloc(LOOM_TC_FLOW_SLOTS * sizeof(*tc->spare));
	tc->idx = malloc(2 * LOOM_TC_FLOW_SLOTS * sizeof(*tc->idx));
	if (!tc->mirror || !tc->spare || !tc->idx) {
		free(tc->mirror);
		free(tc->spare);
		free(tc->idx);
		tc->mirror = tc->spare = NULL;
		tc->idx = NULL;
		return fail(tc, err, ENOMEM, "out of memory");
	}
	return 0;
}

/* Rereads loom_flows into the mirror (after a failed write). */
static void mirror_reload(struct ebpf_tc *tc)
{
	int fd = bpf_map__fd(tc->skel->maps.loom_flows);
	struct ebpf_tc_entry *m = tc->mirror;
	struct loom_tc_key k, *prev = NULL;
	size_t n = 0;

	while (n < LOOM_TC_FLOW_SLOTS && bpf_map_get_next_key(fd, prev, &k) == 0) {
		m[n].key = k;
		if (bpf_map_lookup_elem(fd, &k, &m[n].val) == 0)
			prev = &m[n++].key;
		/* else: deleted meanwhile (cannot happen: we are the only writer) */
	}
	qsort(m, n, sizeof(*m), entry_cmp);
	tc->nmirror = n;
	tc->mirror_stale = false;
}

/*
 * Writes entries[idx[0 .. n-1]] into loom_flows: batches of WRITE_CHUNK per
 * syscall where the kernel has batch operations, else one by one. 0 or -errno.
 */
static int flows_write(struct ebpf_tc *tc, const struct ebpf_tc_entry *entries, const size_t *idx,
		       size_t n)
{
	int fd = bpf_map__fd(tc->skel->maps.loom_flows);
	size_t done = 0;

	while (done < n && tc->batch_ok) {
		LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = BPF_ANY);
		__u32 cnt = n - done < WRITE_CHUNK ? (__u32)(n - done) : WRITE_CHUNK;
		int r;

		for (__u32 k = 0; k < cnt; k++) {
			tc->wkeys[k] = entries[idx[done + k]].key;
			tc->wvals[k] = entries[idx[done + k]].val;
		}
		r = bpf_map_update_batch(fd, tc->wkeys, tc->wvals, &cnt, &bo);
		if (r < 0 && done == 0 && cnt == 0 &&
		    (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUP)) {
			tc->batch_ok = false; /* an older kernel */
			break;
		}
		if (r < 0)
			return r;
		done += cnt;
	}
	for (; done < n; done++)
		if (bpf_map_update_elem(fd, &entries[idx[done]].key, &entries[idx[done]].val,
					BPF_ANY) < 0)
			return -errno;
	return 0;
}

/* Deletes entries[idx[0 .. n-1]] from loom_flows (absent ones are fine). 0 or -errno. */
static int flows_delete(struct ebpf_tc *tc, const struct ebpf_tc_entry *entries, const size_t *idx,
			size_t n)
{
	int fd = bpf_map__fd(tc->skel->maps.loom_flows);
	size_t done = 0;

	while (done < n && tc->batch_ok) {
		LIBBPF_OPTS(bpf_map_batch_opts, bo);
		__u32 cnt = n - done < WRITE_CHUNK ? (__u32)(n - done) : WRITE_CHUNK;
		int r;

		for (__u32 k = 0; k < cnt; k++)
			tc->wkeys[k] = entries[idx[done + k]].key;
		r = bpf_map_delete_batch(fd, tc->wkeys, &cnt, &bo);
		if (r == -ENOENT) { /* stops at an absent key: skip it */
			done += cnt + 1;
			continue;
		}
		if (r < 0 && done == 0 && cnt == 0 &&
		    (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUP)) {
			tc->batch_ok = false;
			break;
		}
		if (r < 0)
			return r;
		done += cnt;
	}
	for (; done < n; done++)
		if (bpf_map_delete_elem(fd, &entries[idx[done]].key) < 0 && errno != ENOENT)
			return -errno;
	return 0;
}

int ebpf_tc_sync(struct ebpf_tc *tc, const struct ebpf_tc_entry *entries, size_t n,
		 struct ebpf_tc_sync_result *ret, struct ebpf_err *err)
{
	struct ebpf_tc_entry *nw;
	size_t *upd, *gone, nupd = 0, ngone = 0, i = 0, j = 0;
	int r;

	if (n > LOOM_TC_MAX_FLOWS)
		return fail(tc, err, EINVAL, "%zu flows (at most %d)", n, LOOM_TC_MAX_FLOWS);
	if (n && !entries)
		return fail(tc, err, EINVAL, "no flows");
	for (size_t k = 0; k < n; k++)
		if (entries[k].val.cls >= tc->classes || entries[k].val.slot >= LOOM_TC_FLOW_SLOTS)
			return fail(tc, err, EINVAL, "flow %zu: class %u / slot %u", k,
				    entries[k].val.cls, entries[k].val.slot);
	r = scratch_alloc(tc, err);
	if (r < 0)
		return r;
	nw = tc->spare;
	if (n)
		memcpy(nw, entries, n * sizeof(*nw));
	for (size_t k = 1; k < n; k++)
		if (entry_cmp(&nw[k - 1], &nw[k]) > 0) { /* not in key order already */
			qsort(nw, n, sizeof(*nw), entry_cmp);
			break;
		}
	for (size_t k = 1; k < n; k++)
		if (entry_cmp(&nw[k - 1], &nw[k]) == 0)
			return fail(tc, err, EINVAL, "the same flow twice");
	if (tc->mirror_stale)
		mirror_reload(tc);
	upd = tc->idx;
	gone = tc->idx + LOOM_TC_FLOW_SLOTS;
	/* one merge of the two sorted lists: what to write, what to delete */
	while (i < n || j < tc->nmirror) {
		int c = i == n ? 1 : j == tc->nmirror ? -1 : entry_cmp(&nw[i], &tc->mirror[j]);

		if (c > 0) {
			gone[ngone++] = j++;
		} else if (c < 0) {
			upd[nupd++] = i++;
		} else {
			if (memcmp(&nw[i].val, &tc->mirror[j].val, sizeof(nw[i].val)))
				upd[nupd++] = i;
			i++, j++;
		}
	}
	/* additions and changes first: a flow in both tables is never missing */
	r = flows_write(tc, nw, upd, nupd);
	if (r < 0) {
		tc->mirror_stale = true;
		return fail(tc, err, -r, "writing flows into loom_flows: %s", strerror(-r));
	}
	r = flows_delete(tc, tc->mirror, gone, ngone);
	if (r < 0) {
		tc->mirror_stale = true;
		return fail(tc, err, -r, "deleting flows from loom_flows: %s", strerror(-r));
	}
	tc->spare = tc->mirror;
	tc->mirror = nw;
	tc->nmirror = n;
	if (ret) {
		ret->updated = nupd;
		ret->deleted = ngone;
	}
	return 0;
}

size_t ebpf_tc_nflows(const struct ebpf_tc *tc)
{
	return tc->nmirror;
}

/* ---- counters and events ------------------------------------------------------------------------- */

static void sum_counter(const struct ebpf_tc *tc, const void *percpu, struct loom_tc_counter *ret)
{
	const struct loom_tc_counter *v = percpu;

	ret->packets = ret->bytes = 0;
	for (int c = 0; c < tc->ncpus; c++) {
		ret->packets += v[c].packets;
		ret->bytes += v[c].bytes;
	}
}

int ebpf_tc_counters_read(struct ebpf_tc *tc, uint32_t n, struct loom_tc_counter *ret)
{
	int fd = bpf_map__fd(tc->skel->maps.loom_counters);
	size_t per = (size_t)tc->ncpus * sizeof(struct loom_tc_counter);
	__u32 done = 0, next = 0;
	bool batch = true;

	if (n > LOOM_TC_FLOW_SLOTS)
		return -EINVAL;
	while (done < n) {
		__u32 cnt = n - done < READ_CHUNK ? n - done : READ_CHUNK;
		int r = -EOPNOTSUPP;

		if (batch) {
			LIBBPF_OPTS(bpf_map_batch_opts, bo);

			/* in_batch is the last slot read: the kernel continues after it */
			r = bpf_map_lookup_batch(fd, done ? &next : NULL, &next, tc->keys, tc->vals,
						 &cnt, &bo);
			if (r < 0 && r != -ENOENT && done == 0 &&
			    (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUP)) {
				batch = false; /* an older kernel: one lookup per slot */
				continue;
			}
			if (r < 0 && r != -ENOENT)
				return r;
			for (__u32 k = 0; k < cnt; k++)
				if (tc->keys[k] < n)
					sum_counter(tc, (char *)tc->vals + k * per,
						    &ret[tc->keys[k]]);
			done += cnt;
			if (r == -ENOENT || cnt == 0)
				break;
			continue;
		}
		for (__u32 k = 0; k < cnt; k++) {
			__u32 slot = done + k;

			if (bpf_map_lookup_elem(fd, &slot, tc->vals) < 0)
				return -errno;
			sum_counter(tc, tc->vals, &ret[slot]);
		}
		done += cnt;
	}
	return done >= n ? 0 : -EIO;
}

int ebpf_tc_counter_clear(struct ebpf_tc *tc, uint32_t slot)
{
	size_t size = (size_t)tc->ncpus * sizeof(struct loom_tc_counter);

	if (slot >= LOOM_TC_FLOW_SLOTS)
		return -EINVAL;
	memset(tc->vals, 0, size);
	if (bpf_map_update_elem(bpf_map__fd(tc->skel->maps.loom_counters), &slot, tc->vals,
				BPF_ANY) < 0)
		return -errno;
	return 0;
}

int ebpf_tc_stats_read(struct ebpf_tc *tc, struct loom_tc_stats *ret)
{
	__u32 zero = 0;
	const __u64 *v = tc->vals;
	__u64 *out = (__u64 *)ret;
	size_t words = sizeof(*ret) / sizeof(__u64);

	if (bpf_map_lookup_elem(bpf_map__fd(tc->skel->maps.loom_stats), &zero, tc->vals) < 0)
		return -errno;
	memset(ret, 0, sizeof(*ret));
	for (int c = 0; c < tc->ncpus; c++)
		for (size_t w = 0; w < words; w++)
			out[w] += v[(size_t)c * words + w];
	return 0;
}

int ebpf_tc_events_poll(struct ebpf_tc *tc, ebpf_tc_event_fn fn, void *ctx)
{
	int r;

	tc->ev_fn = fn;
	tc->ev_ctx = ctx;
	r = ring_buffer__consume(tc->rb);
	tc->ev_fn = NULL;
	tc->ev_ctx = NULL;
	return r;
}

int ebpf_tc_events_fd(const struct ebpf_tc *tc)
{
	return ring_buffer__epoll_fd(tc->rb);
}

int ebpf_tc_unknown_read(struct ebpf_tc *tc, const struct loom_tc_key *key,
			 struct loom_tc_counter *ret)
{
	if (bpf_map_lookup_elem(bpf_map__fd(tc->skel->maps.loom_unknown), key, tc->vals) < 0)
		return -errno;
	sum_counter(tc, tc->vals, ret);
	return 0;
}

int ebpf_tc_unknown_forget(struct ebpf_tc *tc, const struct loom_tc_key *key)
{
	if (bpf_map_delete_elem(bpf_map__fd(tc->skel->maps.loom_unknown), key) < 0 &&
	    errno != ENOENT)
		return -errno;
	return 0;
}
