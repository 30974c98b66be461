/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gnn weights file (format in gnn.h): writing it atomically, and parsing
 * it from untrusted bytes. The checksum is FNV-1a 64 (Fowler, Noll, Vo),
 * which catches truncation and corruption, not tampering.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gnn/gnn_impl.h"

#define HDR_BYTES  44 /* magic 8, version 4, six dims 4 each, float count 8 */
#define HDR2_BYTES 52 /* version 2: + prior 4, prior_scale 4 */
#define TAIL_BYTES 8
#define MAX_FILE   (1ull << 31)

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Number of parameters of shape c (valid per gnn_config_check); matches model.c's tensors. */
static uint64_t count_params(const struct gnn_config *c)
{
	uint64_t d = c->hidden, L = c->layers, E = c->emb, D = 2 * E, h = c->mlp_hidden;
	uint64_t layer = 2 * d + 2 * 3 * d * d + 2 * 3 * d;

	return d * c->nfeatures + d + 2 * L * layer + E * 2 * L * d + 3 * D * D + D * D + h * D +
	       h + h + 1;
}

int gnn_save(const struct gnn_model *m, const char *path, struct gnn_err *err)
{
	uint32_t version = m->cfg.prior ? 2 : 1;
	size_t hdr = version == 2 ? HDR2_BYTES : HDR_BYTES;
	size_t len = hdr + 4 * m->nparams + TAIL_BYTES;
	uint8_t *buf;
	char tmp[4096];
	FILE *f;
	int r = 0;

	if (!path)
		return gnn_errf(err, EINVAL, "gnn save: NULL path");
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return gnn_errf(err, ENAMETOOLONG, "%s: path too long", path);
	buf = malloc(len);
	if (!buf)
		return gnn_errf(err, ENOMEM, "%s: out of memory", path);
	if ((r = m->be->sync(m->ctx, err)) < 0) {
		free(buf);
		return r;
	}
	memcpy(buf, GNN_WEIGHTS_MAGIC, 8); /* with its NUL */
	put32(buf + 8, version);
	put32(buf + 12, m->cfg.nfeatures);
	put32(buf + 16, m->cfg.hidden);
	put32(buf + 20, m->cfg.layers);
	put32(buf + 24, m->cfg.emb);
	put32(buf + 28, m->cfg.heads);
	put32(buf + 32, m->cfg.mlp_hidden);
	put64(buf + 36, m->nparams);
	if (version == 2) {
		uint32_t bits;

		put32(buf + 44, m->cfg.prior);
		memcpy(&bits, &m->cfg.prior_scale, 4);
		put32(buf + 48, bits);
	}
	for (size_t i = 0; i < m->nparams; i++) {
		uint32_t bits;

		memcpy(&bits, &m->params[i], 4);
		put32(buf + hdr + 4 * i, bits);
	}
	put64(buf + len - TAIL_BYTES, fnv1a(buf, len - TAIL_BYTES));
	f = fopen(tmp, "wb");
	if (!f) {
		r = gnn_errf(err, errno, "%s: cannot create: %s", tmp, strerror(errno));
		goto out;
	}
	if (fwrite(buf, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0) {
		r = gnn_errf(err, errno ? errno : EIO, "%s: write failed: %s", tmp,
			     strerror(errno ? errno : EIO));
		fclose(f);
		unlink(tmp);
		goto out;
	}
	if (fclose(f) != 0) {
		r = gnn_errf(err, errno, "%s: close failed: %s", tmp, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) != 0) {
		r = gnn_errf(err, errno, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
	}
out:
	free(buf);
	return r;
}

/* A parsed, validated file: its shape and a pointer to its floats (inside the input). */
struct parsed {
	struct gnn_config cfg;
	uint64_t nfloats;
	const uint8_t *data;
};

static int parse(const uint8_t *buf, size_t len, const char *name, struct parsed *ret,
		 struct gnn_err *err)
{
	struct gnn_config c = gnn_config_default();
	struct gnn_err sub = {{0}};
	uint32_t version;
	uint64_t n, want;
	size_t hdr = HDR_BYTES;

	if (len < HDR_BYTES + TAIL_BYTES)
		return gnn_errf(err, EINVAL, "%s: truncated: %zu bytes, a weights file has >= %d",
				name, len, HDR_BYTES + TAIL_BYTES);
	if (memcmp(buf, GNN_WEIGHTS_MAGIC, 8) != 0)
		return gnn_errf(err, EINVAL, "%s: not a gnn weights file (bad magic)", name);
	version = get32(buf + 8);
	if (version != 1 && version != GNN_WEIGHTS_VERSION)
		return gnn_errf(err, EINVAL, "%s: weights file version %u, this build reads 1..%u",
				name, version, GNN_WEIGHTS_VERSION);
	if (version == 2) {
		hdr = HDR2_BYTES;
		if (len < HDR2_BYTES + TAIL_BYTES)
			return gnn_errf(err, EINVAL,
					"%s: truncated: %zu bytes, a version 2 weights file has "
					">= %d",
					name, len, HDR2_BYTES + TAIL_BYTES);
	}
	n = get64(buf + 36);
	if (n > (len - hdr - TAIL_BYTES) / 4 || len != hdr + 4 * n + TAIL_BYTES)
		return gnn_errf(err, EINVAL,
				"%s: %zu bytes, but the header's %llu floats need %llu (truncated "
				"or trailing bytes)",
				name, len, (unsigned long long)n,
				n > MAX_FILE ? 0ULL :
					       (unsigned long long)(hdr + 4 * n + TAIL_BYTES));
	if (get64(buf + len - TAIL_BYTES) != fnv1a(buf, len - TAIL_BYTES))
		return gnn_errf(err, EINVAL, "%s: checksum mismatch (corrupted file)", name);
	c.nfeatures = get32(buf + 12);
	c.hidden = get32(buf + 16);
	c.layers = get32(buf + 20);
	c.emb = get32(buf + 24);
	c.heads = get32(buf + 28);
	c.mlp_hidden = get32(buf + 32);
	if (version == 2) {
		uint32_t bits = get32(buf + 48);

		c.prior = get32(buf + 44);
		memcpy(&c.prior_scale, &bits, 4);
		if (c.prior == 0)
			return gnn_errf(err, EINVAL,
					"%s: a version 2 weights file with prior 0 (version 1 "
					"is the format without a prior)",
					name);
	}
	if (gnn_config_check(&c, &sub) < 0)
		return gnn_errf(err, EINVAL, "%s: bad shape: %s", name, sub.msg);
	want = count_params(&c);
	if (n != want)
		return gnn_errf(err, EINVAL, "%s: %llu floats, the shape in its header needs %llu",
				name, (unsigned long long)n, (unsigned long long)want);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t bits = get32(buf + hdr + 4 * i);
		float v;

		memcpy(&v, &bits, 4);
		if (!isfinite(v))
			return gnn_errf(err, EINVAL, "%s: parameter %llu is not finite", name,
					(unsigned long long)i);
	}
	*ret = (struct parsed){.cfg = c, .nfloats = n, .data = buf + hdr};
	return 0;
}

static void copy_in(struct gnn_model *m, const struct parsed *p)
{
	m->be->sync(m->ctx, NULL);
	for (size_t i = 0; i < m->nparams; i++) {
		uint32_t bits = get32(p->data + 4 * i);

		memcpy(&m->params[i], &bits, 4);
	}
}

static int same_shape(const struct gnn_config *a, const struct gnn_config *b)
{
	return a->nfeatures == b->nfeatures && a->hidden == b->hidden && a->layers == b->layers &&
	       a->emb == b->emb && a->heads == b->heads && a->mlp_hidden == b->mlp_hidden;
}

/* Reads the file at path into a malloc'd buffer (*ret_buf, caller frees). 0 or -errno. */
static int slurp(const char *path, uint8_t **ret_buf, size_t *ret_len, struct gnn_err *err)
{
	struct stat st;
	uint8_t *buf;
	size_t got;
	FILE *f;

	if (!path)
		return gnn_errf(err, EINVAL, "gnn load: NULL path");
	f = fopen(path, "rb");
	if (!f)
		return gnn_errf(err, errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
		fclose(f);
		return gnn_errf(err, EINVAL, "%s: not a regular file of at most %llu bytes", path,
				(unsigned long long)MAX_FILE);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		fclose(f);
		return gnn_errf(err, ENOMEM, "%s: out of memory", path);
	}
	got = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	*ret_buf = buf;
	*ret_len = got;
	return 0;
}

int gnn_load_into(struct gnn_model *m, const char *path, struct gnn_err *err)
{
	struct parsed p;
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = slurp(path, &buf, &len, err)) < 0)
		return r;
	r = parse(buf, len, path, &p, err);
	if (r == 0 && !same_shape(&p.cfg, &m->cfg))
		r = gnn_errf(err, EINVAL,
			     "%s: shape F=%u d=%u L=%u E=%u heads=%u mlp=%u, the model's is F=%u "
			     "d=%u L=%u E=%u heads=%u mlp=%u",
			     path, p.cfg.nfeatures, p.cfg.hidden, p.cfg.layers, p.cfg.emb,
			     p.cfg.heads, p.cfg.mlp_hidden, m->cfg.nfeatures, m->cfg.hidden,
			     m->cfg.layers, m->cfg.emb, m->cfg.heads, m->cfg.mlp_hidden);
	if (r == 0 && (p.cfg.prior != m->cfg.prior || p.cfg.prior_scale != m->cfg.prior_scale))
		r = gnn_errf(err, EINVAL,
			     "%s: scores are residuals on prior %u x %g, the model's on prior %u "
			     "x %g",
			     path, p.cfg.prior, (double)p.cfg.prior_scale, m->cfg.prior,
			     (double)m->cfg.prior_scale);
	if (r == 0)
		copy_in(m, &p);
	free(buf);
	return r;
}

struct gnn_model *gnn_model_load_mem(const void *buf, size_t len, const char *name,
				     const char *backend_name, struct gnn_err *err)
{
	struct gnn_model *m;
	struct parsed p;
	int r;

	if (!name)
		name = "weights";
	if (!buf && len)
		r = gnn_errf(err, EINVAL, "%s: NULL buffer", name);
	else
		r = parse(buf, len, name, &p, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	m = gnn_model_new(&p.cfg, backend_name, 0, err);
	if (!m)
		return NULL;
	if (m->nparams != p.nfloats) {
		gnn_model_free(m);
		errno = -gnn_errf(err, EINVAL, "%s: internal: parameter count mismatch", name);
		return NULL;
	}
	copy_in(m, &p);
	return m;
}

struct gnn_model *gnn_model_load(const char *path, const char *backend_name, struct gnn_err *err)
{
	struct gnn_model *m;
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = slurp(path, &buf, &len, err)) < 0) {
		errno = -r;
		return NULL;
	}
	m = gnn_model_load_mem(buf, len, path, backend_name, err);
	r = errno;
	free(buf);
	errno = r;
	return m;
}
