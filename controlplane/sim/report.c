/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/report.c: metrics of a finished run and the reports made
 * from them (CSV files, the comparison table, gnuplot plots).
 *
 * Everything here reads the model only after a run: CCT is release to the
 * last flow's completion, JCT is job arrival to its last coflow's completion.
 * Coflows and jobs that did not finish are left out of the summaries and
 * written with empty finish/CCT/JCT fields in the CSV files.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "controlplane/sim/sim.h"

#define NS_PER_S 1e9

/* ---- distributions ------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least pct percent of values <= it. */
static double nearest_rank(const double *sorted, uint32_t n, uint32_t pct)
{
	uint64_t rank = ((uint64_t)pct * n + 99) / 100;

	if (rank == 0)
		rank = 1;
	return sorted[rank - 1];
}

/* Sorts values[0 .. n) and fills ret; n == 0 gives all zeros. */
void sim_dist_compute(double *values, uint32_t n, struct sim_dist *ret)
{
	double sum = 0;

	memset(ret, 0, sizeof(*ret));
	if (n == 0)
		return;
	qsort(values, n, sizeof(*values), cmp_double);
	for (uint32_t i = 0; i < n; i++)
		sum += values[i];
	ret->n = n;
	ret->avg = sum / n;
	ret->p50 = nearest_rank(values, n, 50);
	ret->p95 = nearest_rank(values, n, 95);
	ret->p99 = nearest_rank(values, n, 99);
	ret->max = values[n - 1];
}

/* ---- summaries ---------------------------------------------------------- */

static bool coflow_finished(const struct cp_coflow *c)
{
	return c->state == CP_COFLOW_DONE && c->finish_ns != CP_TIME_NEVER &&
	       c->finish_ns >= c->release_ns;
}

static bool job_finished(const struct cp_job *j)
{
	return j->state == CP_JOB_DONE && j->finish_ns != CP_TIME_NEVER &&
	       j->finish_ns >= j->arrival_ns;
}

/*
 * Fills ret from the finished run of m (st may be NULL: zero stats). Reads
 * m only; label is copied (truncated to fit). Returns 0 or -ENOMEM.
 */
int sim_summarise(const struct cp_model *m, const struct sim_stats *st, const char *label,
		  struct sim_summary *ret)
{
	_cleanup_free_ double *cct = NULL, *bin_cct = NULL, *jct = NULL, *scratch = NULL;
	_cleanup_free_ uint64_t *job_cp = NULL;
	uint32_t bin_n[CP_BIN_COUNT] = {0}, bin_off[CP_BIN_COUNT] = {0};
	uint32_t ncct = 0, njct = 0, nslow = 0, njslow = 0;
	double iso_sum = 0, slow_sum = 0, wjct_sum = 0, bits = 0;
	double jiso_sum = 0, wjiso_sum = 0, jslow_sum = 0;
	struct sim_summary s;

	memset(&s, 0, sizeof(s));
	s.lp_bound_wjct_s = NAN;
	s.lp_bound_cct_s = NAN;
	s.order_wjct_s = NAN;
	s.order_cct_s = NAN;
	snprintf(s.label, sizeof(s.label), "%s", label ? label : "");
	if (st)
		s.stats = *st;

	cct = malloc(((size_t)m->ncoflows + 1) * sizeof(*cct));
	bin_cct = malloc(((size_t)m->ncoflows + 1) * sizeof(*bin_cct));
	jct = malloc(((size_t)m->njobs + 1) * sizeof(*jct));
	if (!cct || !bin_cct || !jct)
		return -ENOMEM;
	if (m->topo) {
		scratch = calloc((size_t)m->topo->nports + 1, sizeof(*scratch));
		job_cp = calloc((size_t)m->njobs + 1, sizeof(*job_cp));
		if (!scratch || !job_cp || cp_job_critical_paths_ns(m, job_cp) < 0)
			return -ENOMEM;
	}

	/* Bin sizes first, so each bin's CCTs can sit in one slice of bin_cct. */
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (coflow_finished(&m->coflows[c]))
			bin_n[cp_coflow_bin(&m->coflows[c])]++;
	for (uint32_t b = 1; b < CP_BIN_COUNT; b++)
		bin_off[b] = bin_off[b - 1] + bin_n[b - 1];

	for (uint32_t c = 0; c < m->ncoflows; c++) {
		const struct cp_coflow *co = &m->coflows[c];
		double cct_s, iso_s;

		if (!coflow_finished(co))
			continue;
		cct_s = (double)(co->finish_ns - co->release_ns) / NS_PER_S;
		cct[ncct++] = cct_s;
		bin_cct[bin_off[cp_coflow_bin(co)]++] = cct_s;
		if (!scratch)
			continue;
		iso_s = (double)cp_coflow_isolation_ns(m, c, scratch) / NS_PER_S;
		iso_sum += iso_s;
		if (iso_s > 0) {
			slow_sum += cct_s / iso_s;
			nslow++;
		}
	}
	/* bin_off[b] now ends bin b's slice. */
	for (uint32_t b = 0; b < CP_BIN_COUNT; b++)
		sim_dist_compute(bin_cct + bin_off[b] - bin_n[b], bin_n[b], &s.bin_cct_s[b]);
	sim_dist_compute(cct, ncct, &s.cct_s);
	s.avg_isolation_s = ncct ? iso_sum / ncct : 0;
	s.avg_cct_slowdown = nslow ? slow_sum / nslow : 0;

	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];
		double jct_s, iso_s;

		if (!job_finished(jb))
			continue;
		jct_s = (double)(jb->finish_ns - jb->arrival_ns) / NS_PER_S;
		jct[njct++] = jct_s;
		wjct_sum += jb->weight * jct_s;
		if (!job_cp)
			continue;
		iso_s = (double)job_cp[j] / NS_PER_S;
		jiso_sum += iso_s;
		wjiso_sum += jb->weight * iso_s;
		if (iso_s > 0) {
			jslow_sum += jct_s / iso_s;
			njslow++;
		}
	}
	s.avg_wjct_s = njct ? wjct_sum / njct : 0;
	s.avg_job_isolation_s = njct ? jiso_sum / njct : 0;
	s.avg_wjob_isolation_s = njct ? wjiso_sum / njct : 0;
	s.avg_jct_slowdown = njslow ? jslow_sum / njslow : 0;
	sim_dist_compute(jct, njct, &s.jct_s);

	s.makespan_s = (double)s.stats.makespan_ns / NS_PER_S;
	for (uint32_t f = 0; f < m->nflows; f++)
		bits += (double)m->flows[f].bytes * 8.0;
	if (m->topo && s.makespan_s > 0 && topo_total_up_bps(m->topo) > 0)
		s.utilisation = bits / (topo_total_up_bps(m->topo) * s.makespan_s);

	*ret = s;
	return 0;
}

/* ---- CSV files ---------------------------------------------------------- */

/* Closes f and returns 0, or -errno when writing or closing failed. */
static int close_checked(FILE *f)
{
	int r = ferror(f) ? -EIO : 0;

	if (fclose(f) != 0 && r == 0)
		r = loom_negerrno();
	return r;
}

/*
 * Writes one row per coflow to path (created or truncated), ids external.
 * Returns 0 or -errno.
 */
int sim_write_coflows_csv(const struct cp_model *m, const char *path)
{
	_cleanup_free_ double *scratch = NULL;
	FILE *f;

	if (m->topo) {
		scratch = calloc((size_t)m->topo->nports + 1, sizeof(*scratch));
		if (!scratch)
			return -ENOMEM;
	}
	f = fopen(path, "w");
	if (!f)
		return loom_negerrno();
	fprintf(f, "coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,isolation_ns\n");
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		const struct cp_coflow *co = &m->coflows[c];
		bool released = co->state == CP_COFLOW_ACTIVE || co->state == CP_COFLOW_DONE;

		fprintf(f, "%" PRIu64 ",%" PRIu64 ",", co->ext_id, cp_coflow_job(m, co)->ext_id);
		if (released)
			fprintf(f, "%" PRIu64, co->release_ns);
		if (coflow_finished(co))
			fprintf(f, ",%" PRIu64 ",%" PRIu64, co->finish_ns,
				co->finish_ns - co->release_ns);
		else
			fprintf(f, ",,");
		fprintf(f, ",%" PRIu64 ",%" PRIu32 ",%s,", co->total_bytes, co->nflows,
			cp_bin_name(cp_coflow_bin(co)));
		if (scratch)
			fprintf(f, "%" PRIu64, cp_coflow_isolation_ns(m, c, scratch));
		fputc('\n', f);
	}
	return close_checked(f);
}

/* Writes one row per job to path (created or truncated). Returns 0 or -errno. */
int sim_write_jobs_csv(const struct cp_model *m, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return loom_negerrno();
	fprintf(f, "job_id,arrival_ns,finish_ns,jct_ns,weight\n");
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];

		fprintf(f, "%" PRIu64 ",%" PRIu64 ",", jb->ext_id, jb->arrival_ns);
		if (job_finished(jb))
			fprintf(f, "%" PRIu64 ",%" PRIu64, jb->finish_ns,
				jb->finish_ns - jb->arrival_ns);
		else
			fprintf(f, ",");
		fprintf(f, ",%.10g\n", jb->weight);
	}
	return close_checked(f);
}

/* Writes s as one CSV field, quoted when it holds a comma, quote or newline. */
static void csv_string(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Lower-case bin name usable inside a column name ("SN" -> "sn"). */
static void bin_column(enum cp_bin b, char *buf, size_t size)
{
	const char *name = cp_bin_name(b);
	size_t i = 0;

	for (; name && name[i] && i + 1 < size; i++)
		buf[i] = isalnum((unsigned char)name[i]) ? (char)tolower((unsigned char)name[i]) :
							   '_';
	buf[i] = '\0';
}

/* Writes one row per summary to path (created or truncated). Returns 0 or -errno. */
int sim_write_summary_csv(const struct sim_summary *s, size_t n, const char *path)
{
	FILE *f = fopen(path, "w");
	char col[32];

	if (!f)
		return loom_negerrno();
	fprintf(f, "label,coflows,avg_cct_s,p50_cct_s,p95_cct_s,p99_cct_s,max_cct_s");
	for (enum cp_bin b = 0; b < CP_BIN_COUNT; b++) {
		bin_column(b, col, sizeof(col));
		fprintf(f, ",%s_coflows,%s_avg_cct_s,%s_p95_cct_s", col, col, col);
	}
	fprintf(f, ",jobs,avg_jct_s,p50_jct_s,p95_jct_s,p99_jct_s,avg_wjct_s,avg_isolation_s,"
		   "avg_cct_slowdown,avg_job_isolation_s,avg_wjob_isolation_s,avg_jct_slowdown,"
		   "makespan_s,utilisation,events,steps,decisions,wall_s,lp_bound_wjct_s,"
		   "lp_bound_cct_s,order_wjct_s,order_cct_s\n");
	for (size_t i = 0; i < n; i++) {
		const struct sim_summary *r = &s[i];

		csv_string(f, r->label);
		fprintf(f, ",%" PRIu32 ",%.10g,%.10g,%.10g,%.10g,%.10g", r->cct_s.n, r->cct_s.avg,
			r->cct_s.p50, r->cct_s.p95, r->cct_s.p99, r->cct_s.max);
		for (enum cp_bin b = 0; b < CP_BIN_COUNT; b++)
			fprintf(f, ",%" PRIu32 ",%.10g,%.10g", r->bin_cct_s[b].n,
				r->bin_cct_s[b].avg, r->bin_cct_s[b].p95);
		fprintf(f,
			",%" PRIu32 ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g",
			r->jct_s.n, r->jct_s.avg, r->jct_s.p50, r->jct_s.p95, r->jct_s.p99,
			r->avg_wjct_s, r->avg_isolation_s, r->avg_cct_slowdown,
			r->avg_job_isolation_s, r->avg_wjob_isolation_s, r->avg_jct_slowdown);
		fprintf(f, ",%.10g,%.10g", r->makespan_s, r->utilisation);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6g", r->stats.events,
			r->stats.steps, r->stats.decisions, r->wall_s);
		/* the workload's bounds, the same on every row; nan when not computed */
		fprintf(f, ",%.10g,%.10g,%.10g,%.10g\n", r->lp_bound_wjct_s, r->lp_bound_cct_s,
			r->order_wjct_s, r->order_cct_s);
	}
	return close_checked(f);
}

/* ---- the comparison table ----------------------------------------------- */

enum {
	TABLE_COLS = 10
};

/* The labels of the table's lower-bound rows. */
#define BOUND_LABEL    "(isolation bound)"
#define LP_BOUND_LABEL "(LP bound)"
#define ORDER_LABEL    "(best order)"

/* Varys' short name of a bin: initials of its name ("short_narrow" -> "SN"). */
static const char *bin_initials(enum cp_bin b, char *buf, size_t size)
{
	const char *name = cp_bin_name(b);
	size_t n = 0;

	for (size_t i = 0; name && name[i] && n + 1 < size; i++)
		if (isalpha((unsigned char)name[i]) &&
		    (i == 0 || !isalpha((unsigned char)name[i - 1])))
			buf[n++] = (char)toupper((unsigned char)name[i]);
	buf[n] = '\0';
	return buf;
}

/* Column j of summary r; *ok is false when the value does not exist (empty bin). */
static double table_value(const struct sim_summary *r, int j, bool *ok)
{
	*ok = true;
	switch (j) {
	case 0:
		*ok = r->cct_s.n > 0;
		return r->cct_s.avg;
	case 1:
		*ok = r->cct_s.n > 0;
		return r->cct_s.p95;
	case 2:
	case 3:
	case 4:
	case 5:
		*ok = r->bin_cct_s[j - 2].n > 0;
		return r->bin_cct_s[j - 2].avg;
	case 6:
		*ok = r->jct_s.n > 0;
		return r->jct_s.avg;
	case 7:
		*ok = r->jct_s.n > 0;
		return r->avg_wjct_s;
	case 8:
		*ok = r->avg_cct_slowdown > 0;
		return r->avg_cct_slowdown;
	default:
		*ok = r->avg_jct_slowdown > 0;
		return r->avg_jct_slowdown;
	}
}

/*
 * A lower-bound row under the policies, bound[j] under column j (0 or NAN:
 * none), as ratios to s[0] like every other row. The isolation row: avg
 * coflow isolation time under avg CCT, avg job critical-path isolation time
 * under avg JCT and its weighted mean under avg wJCT; the LP row: the LP
 * bounds under avg CCT (single-stage workloads) and avg wJCT; the best-order
 * row (an optimum over fixed orders, not a lower bound): its avg CCT and
 * avg wJCT.
 */
static void print_bound_row(FILE *f, const char *label, const double *bound,
			    const struct sim_summary *s, int lw, const int *cw)
{
	fprintf(f, "%-*s", lw, label);
	for (int j = 0; j < TABLE_COLS; j++) {
		bool ok;
		double base = table_value(&s[0], j, &ok);
		char cell[32];

		if (isfinite(bound[j]) && bound[j] > 0 && ok && base > 0)
			snprintf(cell, sizeof(cell), "%.3fx", bound[j] / base);
		else
			snprintf(cell, sizeof(cell), "-");
		fprintf(f, "  %*s", cw[j], cell);
	}
	fputc('\n', f);
}

/*
 * Prints s[0 .. n) as an aligned table to f: the first row in seconds (the
 * slowdown as a plain factor), every other row as its ratio to the first row,
 * so "0.62x" reads "38% lower than the baseline".
 */
void sim_print_table(FILE *f, const struct sim_summary *s, size_t n)
{
	static const char *const head[TABLE_COLS] = {
		"avg CCT", "p95 CCT", NULL,       NULL,       NULL,
		NULL,      "avg JCT", "avg wJCT", "CCT slow", "JCT slow",
	};
	char names[TABLE_COLS][24], abbr[8];
	int lw = (int)strlen("policy"), cw[TABLE_COLS];
	int rule = 0;

	if (n == 0)
		return;
	for (int j = 0; j < TABLE_COLS; j++) {
		if (head[j])
			snprintf(names[j], sizeof(names[j]), "%s", head[j]);
		else
			snprintf(names[j], sizeof(names[j]), "%s CCT",
				 bin_initials((enum cp_bin)(j - 2), abbr, sizeof(abbr)));
		cw[j] = (int)strlen(names[j]) > 9 ? (int)strlen(names[j]) : 9;
	}
	if ((int)strlen(BOUND_LABEL) > lw)
		lw = (int)strlen(BOUND_LABEL);
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(s[i].label) > lw)
			lw = (int)strlen(s[i].label);

	fprintf(f,
		"normalised to %s: first row in seconds, slowdowns as factors (CCT slow = CCT /\n"
		"coflow isolation time, JCT slow = JCT / job critical-path isolation time),\n",
		s[0].label);
	fprintf(f,
		"other rows as ratio to it (< 1x is better); %" PRIu32 " coflows, %" PRIu32
		" jobs in %s;\n",
		s[0].cct_s.n, s[0].jct_s.n, s[0].label);
	fprintf(f,
		"XX CCT = avg CCT of Varys bin XX: S/L = longest flow under/over %llu MiB, "
		"N/W = at most/over %u flows\n",
		(unsigned long long)(CP_BIN_SHORT_BYTES / 1048576), CP_BIN_NARROW_FLOWS);
	fprintf(f, "%-*s", lw, "policy");
	for (int j = 0; j < TABLE_COLS; j++) {
		fprintf(f, "  %*s", cw[j], names[j]);
		rule += cw[j] + 2;
	}
	fputc('\n', f);
	for (int k = 0; k < lw + rule; k++)
		fputc('-', f);
	fputc('\n', f);

	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%-*s", lw, s[i].label);
		for (int j = 0; j < TABLE_COLS; j++) {
			bool ok, base_ok;
			double v = table_value(&s[i], j, &ok);
			double base = table_value(&s[0], j, &base_ok);
			char cell[32];

			if (!ok)
				snprintf(cell, sizeof(cell), "-");
			else if (i == 0 && j >= TABLE_COLS - 2)
				snprintf(cell, sizeof(cell), "%.3g", v);
			else if (i == 0)
				snprintf(cell, sizeof(cell), "%.4gs", v);
			else if (!base_ok || base <= 0)
				snprintf(cell, sizeof(cell), "n/a");
			else
				snprintf(cell, sizeof(cell), "%.3fx", v / base);
			fprintf(f, "  %*s", cw[j], cell);
		}
		fputc('\n', f);
	}
	{
		double iso[TABLE_COLS] = {0}, lp[TABLE_COLS] = {0}, ord[TABLE_COLS] = {0};

		iso[0] = s[0].avg_isolation_s;
		iso[6] = s[0].avg_job_isolation_s;
		iso[7] = s[0].avg_wjob_isolation_s;
		print_bound_row(f, BOUND_LABEL, iso, s, lw, cw);
		/* the LP bound (sim_bound_lp()) when the caller computed it */
		lp[0] = s[0].lp_bound_cct_s;
		lp[7] = s[0].lp_bound_wjct_s;
		if ((isfinite(lp[0]) && lp[0] > 0) || (isfinite(lp[7]) && lp[7] > 0))
			print_bound_row(f, LP_BOUND_LABEL, lp, s, lw, cw);
		/* the best fixed order (sim_bound_order()), small workloads */
		ord[0] = s[0].order_cct_s;
		ord[7] = s[0].order_wjct_s;
		if (isfinite(ord[0]) && isfinite(ord[7]))
			print_bound_row(f, ORDER_LABEL, ord, s, lw, cw);
	}
}

/* ---- plots -------------------------------------------------------------- */

/*
 * Returns buf holding label with every byte outside [A-Za-z0-9._-] replaced
 * by '-' (and a leading '.' too, so no hidden or ".." names); an empty label
 * gives "run". Truncates to size - 1 bytes; size must be > 0.
 */
const char *sim_label_file(const char *label, char *buf, size_t size)
{
	size_t i = 0;

	assert(size > 0);
	if (!label || !*label)
		label = "run";
	for (; label[i] && i + 1 < size; i++) {
		unsigned char ch = (unsigned char)label[i];
		bool safe = isalnum(ch) || ch == '_' || ch == '-' || (ch == '.' && i > 0);

		buf[i] = safe ? (char)ch : '-';
	}
	buf[i] = '\0';
	return buf;
}

/* True when an executable named name is in one of PATH's directories. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (1) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		int r;

		if (len == 0)
			r = snprintf(buf, sizeof(buf), "./%s", name);
		else
			r = snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
		if (r > 0 && (size_t)r < sizeof(buf) && access(buf, X_OK) == 0)
			return true;
		if (!end)
			return false;
		path = end + 1;
	}
}

/* Reads a whole line-oriented CSV; returns the values of column `column` (empty skipped). */
static int read_csv_column(const char *path, const char *column, double **ret_v, uint32_t *ret_n)
{
	_cleanup_fclose_ FILE *f = fopen(path, "r");
	_cleanup_free_ char *line = NULL;
	_cleanup_free_ double *v = NULL;
	size_t cap = 0, vcap = 0;
	uint32_t n = 0;
	int col = -1;
	ssize_t len;

	if (!f)
		return loom_negerrno();
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *field, *p = line;
		int k = 0;

		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (col < 0) {
			/* The header names the column. */
			for (field = strsep(&p, ","); field; field = strsep(&p, ","), k++)
				if (strcmp(field, column) == 0)
					col = k;
			if (col < 0)
				return -EINVAL;
			continue;
		}
		for (field = strsep(&p, ","); field && k < col; field = strsep(&p, ","))
			k++;
		if (!field || !*field)
			continue;
		if (n == vcap) {
			size_t ncap = vcap ? vcap * 2 : 256;
			double *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			v = nv;
			vcap = ncap;
		}
		v[n++] = strtod(field, NULL);
	}
	if (ferror(f))
		return -EIO;
	if (col < 0)
		return -EINVAL; /* no header at all */
	*ret_v = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

/*
 * Writes out_path as a step CDF of column (nanoseconds) of csv_path: "seconds
 * fraction" lines, sorted. Values <= 0 cannot sit on a log axis: they are
 * left out but counted, so the curve starts at their share. Returns the
 * number of points written, or -errno.
 */
static int write_cdf(const char *csv_path, const char *column, const char *out_path)
{
	_cleanup_free_ double *v = NULL;
	uint32_t n = 0, first = 0;
	int points = 0;
	FILE *f;
	int r;

	r = read_csv_column(csv_path, column, &v, &n);
	if (r < 0)
		return r;
	qsort(v, n, sizeof(*v), cmp_double);
	f = fopen(out_path, "w");
	if (!f)
		return loom_negerrno();
	fprintf(f, "# %s from %s: seconds, fraction <= seconds (%" PRIu32 " values)\n", column,
		csv_path, n);
	while (first < n && v[first] <= 0)
		first++;
	if (first < n) {
		fprintf(f, "%.10g %.10g\n", v[first] / NS_PER_S, (double)first / n);
		points++;
	}
	for (uint32_t i = first; i < n; i++, points++)
		fprintf(f, "%.10g %.10g\n", v[i] / NS_PER_S, (double)(i + 1) / n);
	r = close_checked(f);
	return r < 0 ? r : points;
}

/* Writes s as a gnuplot single-quoted string ('' stands for a quote). */
static void gp_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		if (*s != '\n' && *s != '\r')
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* Writes s as a double-quoted gnuplot data-file field. */
static void gp_data_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || *s == '\n' || *s == '\r' ? '\'' : *s, f);
	fputc('"', f);
}

struct plot_ctx {
	const struct sim_summary *s;
	size_t n;
	char (*file)[96]; /* sim_label_file() of each label */
	int *cct_points, *jct_points;
};

/* One CDF plot over every summary with data: kind is "cct" or "jct". */
static void gp_cdf(FILE *f, const struct plot_ctx *c, const char *kind, const int *points,
		   const char *title, const char *xlabel, const char *ylabel)
{
	bool any = false;

	fprintf(f, "set title ");
	gp_string(f, title);
	fprintf(f, "\nset xlabel ");
	gp_string(f, xlabel);
	fprintf(f, "\nset ylabel ");
	gp_string(f, ylabel);
	fprintf(f, "\nset logscale x\nset format x '%%g'\nset yrange [0:1.02]\n"
		   "set key bottom right box opaque\nset grid xtics mxtics ytics\n");
	for (size_t i = 0; i < c->n; i++) {
		if (points[i] <= 0)
			continue;
		/* Line i: colour i mod 8 (gnuplot's default cycle), a new dash pattern per 8. */
		fprintf(f, "%s '%s-%s.dat' using 1:2 with steps lw 2 lt %zu dt %zu title ",
			any ? ", \\\n    " : "plot ", c->file[i], kind, i % 8 + 1, i / 8 + 1);
		gp_string(f, c->s[i].label);
		any = true;
	}
	if (!any)
		fprintf(f, "set label 1 'no data' at graph 0.5, graph 0.5 center\n"
			   "unset logscale x\nplot [0:1] NaN notitle\nunset label 1");
	fprintf(f, "\nunset logscale x\nset format x '%%g'\nset yrange [*:*]\n");
}

static void gp_bars(FILE *f, const struct plot_ctx *c)
{
	bool cct_ok = c->s[0].cct_s.avg > 0, jct_ok = c->s[0].jct_s.avg > 0;
	char title[160];

	snprintf(title, sizeof(title), "Average CCT and JCT normalised to %s", c->s[0].label);
	fprintf(f, "set title ");
	gp_string(f, title);
	fprintf(f, "\nset xlabel 'policy'\nset ylabel ");
	snprintf(title, sizeof(title), "ratio to %s (lower is better)", c->s[0].label);
	gp_string(f, title);
	fprintf(f, "\nset style data histograms\nset style histogram clustered gap 1\n"
		   "set style fill solid 0.75 border -1\nset boxwidth 0.9\n"
		   "set yrange [0:*]\nset offsets 0, 0, graph 0.12, 0\nset grid ytics\n"
		   "set key top right box opaque\n"
		   "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead "
		   "lc rgb 'gray30' lw 1.5 dt 2\n");
	fprintf(f, "%s\n", c->n > 6 ? "set xtics rotate by -30" : "set xtics norotate");
	if (!cct_ok && !jct_ok) {
		/* No ratio exists when the baseline's averages are 0. */
		fprintf(f, "set label 1 'no data' at graph 0.5, graph 0.5 center\n"
			   "plot [0:1] [0:1] NaN notitle\nunset label 1\n");
	} else if (cct_ok && jct_ok) {
		fprintf(f, "plot 'bars.dat' using 2:xtic(1) title 'avg CCT' lc rgb '#4472c4', \\\n"
			   "    '' using 3 title 'avg JCT' lc rgb '#ed7d31', \\\n"
			   "    '' using ($0 - 1.0/6):2:(sprintf('%%.2f', $2)) with labels "
			   "offset 0,0.6 notitle, \\\n"
			   "    '' using ($0 + 1.0/6):3:(sprintf('%%.2f', $3)) with labels "
			   "offset 0,0.6 notitle\n");
	} else {
		int col = cct_ok ? 2 : 3;

		fprintf(f,
			"plot 'bars.dat' using %d:xtic(1) title '%s' lc rgb '%s', \\\n"
			"    '' using 0:%d:(sprintf('%%.2f', $%d)) with labels offset 0,0.6 "
			"notitle\n",
			col, cct_ok ? "avg CCT" : "avg JCT", cct_ok ? "#4472c4" : "#ed7d31", col,
			col);
	}
	fprintf(f, "unset arrow 1\nset offsets 0, 0, 0, 0\nset style data points\n"
		   "set yrange [*:*]\nset xtics norotate\n"
		   "set xlabel\nset grid noytics\n");
}

/* The three plots into one output format: ext is "png" or "svg". */
static void gp_outputs(FILE *f, const struct plot_ctx *c, const char *ext)
{
	if (strcmp(ext, "png") == 0)
		fprintf(f, "eval sprintf('set terminal %%s size 1000,650 noenhanced', png_term)\n");
	else
		fprintf(f, "set terminal svg size 1000,650 dynamic noenhanced "
			   "background rgb 'white'\n");

	fprintf(f, "\nset output 'cct_cdf.%s'\n", ext);
	gp_cdf(f, c, "cct", c->cct_points, "Coflow completion time (CDF)",
	       "CCT (seconds, log scale)", "fraction of coflows");
	fprintf(f, "\nset output 'jct_cdf.%s'\n", ext);
	gp_cdf(f, c, "jct", c->jct_points, "Job completion time (CDF)", "JCT (seconds, log scale)",
	       "fraction of jobs");
	fprintf(f, "\nset output 'bars.%s'\n", ext);
	gp_bars(f, c);
	fprintf(f, "set output\n\n");
}

static int write_bars_dat(const char *dir, const struct sim_summary *s, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/bars.dat", dir);
	f = fopen(path, "w");
	if (!f)
		return loom_negerrno();
	fprintf(f, "# label avg_cct_ratio avg_jct_ratio (to %s)\n", s[0].label);
	for (size_t i = 0; i < n; i++) {
		double cct = s[0].cct_s.avg > 0 ? s[i].cct_s.avg / s[0].cct_s.avg : NAN;
		double jct = s[0].jct_s.avg > 0 ? s[i].jct_s.avg / s[0].jct_s.avg : NAN;

		gp_data_string(f, s[i].label);
		fprintf(f, " %.6g %.6g\n", cct, jct);
	}
	return close_checked(f);
}

/* Runs `gnuplot plots.gp` in dir, output into dir/plots.log. 0, or -errno / -EIO. */
static int run_gnuplot(const char *dir)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return loom_negerrno();
	if (pid == 0) {
		int fd;

		if (chdir(dir) < 0)
			_exit(126);
		fd = open("plots.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return loom_negerrno();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	return 0;
}

/*
 * Writes dir/<label>-cct.dat and -jct.dat (sorted CDFs read from the CSV
 * files the caller wrote), dir/bars.dat and dir/plots.gp, then runs gnuplot
 * in dir when it is on PATH (log in dir/plots.log). Returns 0, 1 when
 * gnuplot is missing, or -errno (-EINVAL when n is 0 or a CSV lacks the
 * column, -ENOENT for a missing CSV, -EIO when gnuplot fails).
 */
int sim_write_plots(const char *dir, const struct sim_summary *s, size_t n)
{
	_cleanup_free_ char(*file)[96] = NULL;
	_cleanup_free_ int *points = NULL;
	struct plot_ctx c = {.s = s, .n = n};
	char path[4096], out[4096];
	FILE *f;
	int r;

	if (n == 0)
		return -EINVAL;
	file = calloc(n, sizeof(*file));
	points = calloc(2 * n, sizeof(*points));
	if (!file || !points)
		return -ENOMEM;
	c.file = file;
	c.cct_points = points;
	c.jct_points = points + n;

	for (size_t i = 0; i < n; i++) {
		sim_label_file(s[i].label, file[i], sizeof(file[i]));
		snprintf(path, sizeof(path), "%s/%s-coflows.csv", dir, file[i]);
		snprintf(out, sizeof(out), "%s/%s-cct.dat", dir, file[i]);
		r = write_cdf(path, "cct_ns", out);
		if (r < 0)
			return r;
		c.cct_points[i] = r;
		snprintf(path, sizeof(path), "%s/%s-jobs.csv", dir, file[i]);
		snprintf(out, sizeof(out), "%s/%s-jct.dat", dir, file[i]);
		r = write_cdf(path, "jct_ns", out);
		if (r < 0)
			return r;
		c.jct_points[i] = r;
	}
	r = write_bars_dat(dir, s, n);
	if (r < 0)
		return r;

	snprintf(path, sizeof(path), "%s/plots.gp", dir);
	f = fopen(path, "w");
	if (!f)
		return loom_negerrno();
	fprintf(f, "# Written by loom (sim_write_plots). Run in this folder: gnuplot plots.gp\n"
		   "# Reads <label>-cct.dat, <label>-jct.dat (sorted CDFs of the CSV files)\n"
		   "# and bars.dat; writes cct_cdf, jct_cdf and bars as PNG and SVG.\n\n"
		   "png_term = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'\n"
		   "set datafile separator whitespace\n\n");
	gp_outputs(f, &c, "png");
	gp_outputs(f, &c, "svg");
	r = close_checked(f);
	if (r < 0)
		return r;

	if (!on_path("gnuplot"))
		return 1;
	return run_gnuplot(dir);
}
