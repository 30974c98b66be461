/* SPDX-License-Identifier: BSD-3-Clause */
/* loom-run's --bytes-scale and --time-scale: a scaled copy of a workload (run.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>

#include "controlplane/run/run.h"

#define SCALE_MAX ((double)(UINT64_C(1) << 62)) /* the trace format's largest time and size */

/* v * s rounded to the nearest into *ret; -ERANGE when beyond 2^62. */
static int scaled(uint64_t v, double s, uint64_t *ret)
{
	double x = nearbyint((double)v * s);

	if (!(x <= SCALE_MAX))
		return -ERANGE;
	*ret = (uint64_t)x;
	return 0;
}

struct cp_model *lrun_model_scale(const struct cp_model *m, double bytes_scale, double time_scale,
				  struct loom_err *err)
{
	struct cp_builder *b;
	struct cp_model *out;
	uint64_t v;
	int r = 0;

	if (!(bytes_scale > 0) || !(time_scale > 0) || !isfinite(bytes_scale) ||
	    !isfinite(time_scale)) {
		loom_err_set(err, EINVAL, "scales must be finite and > 0");
		errno = EINVAL;
		return NULL;
	}
	b = cp_builder_new(m->nhosts);
	if (!b) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t j = 0; j < m->njobs && r == 0; j++) {
		const struct cp_job *jb = &m->jobs[j];

		if (scaled(jb->arrival_ns, time_scale, &v) < 0) {
			r = loom_err_set(err, ERANGE,
					 "job %" PRIu64 ": scaled arrival beyond 2^62 ns",
					 jb->ext_id);
			break;
		}
		r = cp_builder_add_job(b, jb->ext_id, v, jb->weight, err);
		for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows && r == 0;
		     c++) {
			const struct cp_coflow *co = &m->coflows[c];

			if (scaled(co->release_offset_ns, time_scale, &v) < 0) {
				r = loom_err_set(err, ERANGE,
						 "coflow %" PRIu64
						 ": scaled release offset beyond 2^62 ns",
						 co->ext_id);
				break;
			}
			r = cp_builder_add_coflow(b, co->ext_id, jb->ext_id, v, err);
			for (uint32_t f = co->first_flow; f < co->first_flow + co->nflows && r == 0;
			     f++) {
				const struct cp_flow *fl = &m->flows[f];

				if (scaled(fl->bytes, bytes_scale, &v) < 0) {
					r = loom_err_set(err, ERANGE,
							 "a flow of coflow %" PRIu64
							 ": scaled size beyond 2^62 bytes",
							 co->ext_id);
					break;
				}
				r = cp_builder_add_flow(b, co->ext_id, fl->src, fl->dst, v ? v : 1,
							err);
			}
		}
	}
	for (uint32_t e = 0; e < m->nedges && r == 0; e++) {
		const struct cp_edge *ed = &m->edges[e];

		if (scaled(ed->delay_ns, time_scale, &v) < 0) {
			r = loom_err_set(err, ERANGE,
					 "edge %" PRIu64 " -> %" PRIu64
					 ": scaled delay beyond 2^62 ns",
					 m->coflows[ed->parent].ext_id,
					 m->coflows[ed->child].ext_id);
			break;
		}
		r = cp_builder_add_edge(b, m->coflows[ed->parent].ext_id,
					m->coflows[ed->child].ext_id, v, err);
	}
	if (r < 0) {
		cp_builder_free(b);
		errno = -r;
		return NULL;
	}
	out = cp_builder_finish(b, err);
	return out;
}
