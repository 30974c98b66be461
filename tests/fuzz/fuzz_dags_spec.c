/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the random DAG family's spec parser ("random[:key=value]...",
 * controlplane/sim/dags_random.c). Every input either parses into parameters
 * inside their documented ranges, from which (count cut to 2, at most 200
 * coflows, to stay fast) shapes are drawn that hold the family's invariants:
 * coflows in [min, max], edges in range with no self-loops, at most fanin
 * parents per stage, acyclic, weakly connected; or it is rejected with
 * -EINVAL and a message. Anything else (crash, sanitizer report, abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t find(uint32_t *uf, uint32_t v)
{
	while (uf[v] != v)
		v = uf[v] = uf[uf[v]];
	return v;
}

/* Aborts unless g is a valid shape of p. */
static void check_shape(const struct sim_dag *g, const struct sim_dags_random *p)
{
	uint32_t n = g->nnodes, comps = n, done = 0;
	uint32_t *indeg = calloc(n, sizeof(*indeg)), *queue = calloc(n, sizeof(*queue));
	uint32_t *uf = calloc(n, sizeof(*uf));

	if (!indeg || !queue || !uf)
		abort();
	if (g->nedges < p->min_coflows || g->nedges > p->max_coflows || n < 2 ||
	    n > g->nedges + 1 || strlen(g->label) >= sizeof(g->label))
		abort();
	for (uint32_t v = 0; v < n; v++)
		uf[v] = v;
	for (uint32_t e = 0; e < g->nedges; e++) {
		uint32_t a = g->edges[e][0], b = g->edges[e][1];

		if (a >= n || b >= n || a == b)
			abort();
		if (++indeg[b] > p->fanin_max)
			abort();
		if (find(uf, a) != find(uf, b)) {
			uf[find(uf, a)] = find(uf, b);
			comps--;
		}
	}
	if (comps != 1)
		abort();
	for (uint32_t v = 0; v < n; v++) {
		if (g->ntasks[v] == 0 || !(g->mean_task_ms[v] >= p->min_task_ms) ||
		    !(g->mean_task_ms[v] <= p->max_task_ms))
			abort();
		if (indeg[v] == 0)
			queue[done++] = v;
	}
	for (uint32_t h = 0; h < done; h++)
		for (uint32_t e = 0; e < g->nedges; e++)
			if (g->edges[e][0] == queue[h] && --indeg[g->edges[e][1]] == 0)
				queue[done++] = g->edges[e][1];
	if (done != n)
		abort();
	free(indeg);
	free(queue);
	free(uf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	struct sim_dags_random p;
	struct sim_dags *d;
	char *spec = malloc(size + 1);
	int r;

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0'; /* a spec is a C string: bytes after a NUL are not seen */
	r = sim_dags_random_parse(spec, &p, &err);
	if (r < 0) {
		if (r != -EINVAL || err.msg[0] == '\0')
			abort();
		free(spec);
		return 0;
	}
	if (p.min_coflows < 1 || p.min_coflows > p.max_coflows || p.max_coflows > 1000 ||
	    p.min_layers < 2 || p.min_layers > p.max_layers || p.min_layers - 1 > p.min_coflows ||
	    p.fanin_max < 1 || p.count < 1 || p.count > 100000 || !(p.min_task_ms >= 0) ||
	    !(p.min_task_ms <= p.max_task_ms) || !(p.max_task_ms <= 1e7))
		abort();
	if (p.max_coflows <= 200) {
		if (p.count > 2)
			p.count = 2;
		d = sim_dags_random_new(&p, &err);
		if (!d || d->n != p.count)
			abort();
		for (uint32_t i = 0; i < d->n; i++)
			check_shape(&d->dags[i], &p);
		sim_dags_free(d);
	}
	free(spec);
	return 0;
}
