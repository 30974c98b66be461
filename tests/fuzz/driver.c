/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bounded, deterministic stand-in for libFuzzer's main(): runs
 * LLVMFuzzerTestOneInput() on every seed file (files or folders given on the
 * command line), then on --runs mutations of them (byte flips, inserted and
 * deleted spans, duplicated lines, interesting numbers), stopping after
 * --seconds at the latest. A crash or sanitizer report fails the test; the
 * input that caused it is written to ./fuzz-crash-<target> first. A seed
 * path that is not there or cannot be read, or a folder without seed files,
 * is an error (exit 2): a renamed corpus must not leave an empty input to fuzz.
 * With no SEED at all, the mutations start from the empty input.
 *
 *   fuzz_x [--runs N] [--seconds S] [--seed X] SEED...
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/hash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEEDS      256
#define FUZZ_MAX_INPUT (1u << 20)

struct buf {
	uint8_t *p;
	size_t n;
};

static struct buf seeds[MAX_SEEDS];
static size_t nseeds;
static const uint8_t *cur_input;
static size_t cur_size;
static const char *prog;

static void save_crash(int sig)
{
	char path[256];
	const char *base = strrchr(prog, '/');
	FILE *f;

	snprintf(path, sizeof(path), "fuzz-crash-%s", base ? base + 1 : prog);
	f = fopen(path, "wb");
	if (f && cur_input) {
		fwrite(cur_input, 1, cur_size, f);
		fclose(f);
	}
	fprintf(stderr, "fuzz: signal %d on an input of %zu bytes, saved to %s\n", sig, cur_size,
		path);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Reads the seed file at path (the first FUZZ_MAX_INPUT bytes). 0, or -1 after saying why. */
static int add_seed_file(const char *path)
{
	FILE *f;
	struct buf b = {0};
	long n;
	bool ok = false;

	if (nseeds >= MAX_SEEDS)
		return 0; /* enough to start from */
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz: seed %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b.n = (size_t)n > FUZZ_MAX_INPUT ? FUZZ_MAX_INPUT : (size_t)n;
		b.p = malloc(b.n + 1);
		ok = b.p && fread(b.p, 1, b.n, f) == b.n;
	}
	fclose(f);
	if (!ok) {
		fprintf(stderr, "fuzz: seed %s: cannot read it\n", path);
		free(b.p);
		return -1;
	}
	seeds[nseeds++] = b;
	return 0;
}

/* Adds the seed file at path, or every regular file in the folder at path. 0 or -1 (said why). */
static int add_seed(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	char child[4096];
	size_t files = 0;
	int r = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz: seed %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return add_seed_file(path);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "fuzz: seed folder %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		if (stat(child, &st) == 0 && S_ISREG(st.st_mode)) {
			r = add_seed_file(child);
			files++;
		}
	}
	closedir(d);
	if (r == 0 && files == 0) {
		fprintf(stderr, "fuzz: seed folder %s has no seed files\n", path);
		return -1;
	}
	return r;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return loom_hash_u64(rng_state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
}

static const char *const interesting[] = {
	"0",     "-1",  "1",  "4294967295", "4294967296", "18446744073709551616",
	"1e308", "nan", "-0", "0.0",        "inf",        "99999999999999999999",
	" ",     "\n",  ":",  "|",          ">",          "{",
	"}",     "\"",
};

/* Applies 1..4 random mutations of src into dst (capacity cap); returns the new size. */
static size_t mutate(uint8_t *dst, size_t cap, const struct buf *src)
{
	size_t n = src->n < cap ? src->n : cap;
	int rounds = 1 + (int)(rnd() % 4);

	memcpy(dst, src->p, n);
	for (int r = 0; r < rounds; r++) {
		size_t pos = n ? rnd() % n : 0;

		switch (rnd() % 6) {
		case 0: /* flip a byte */
			if (n)
				dst[pos] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* random byte */
			if (n)
				dst[pos] = (uint8_t)rnd();
			break;
		case 2: { /* delete a span */
			size_t len = n ? 1 + rnd() % (n - pos < 16 ? n - pos : 16) : 0;

			if (len) {
				memmove(dst + pos, dst + pos + len, n - pos - len);
				n -= len;
			}
			break;
		}
		case 3: { /* insert an interesting token */
			const char *tok =
				interesting[rnd() % (sizeof(interesting) / sizeof(*interesting))];
			size_t len = strlen(tok);

			if (n + len <= cap) {
				memmove(dst + pos + len, dst + pos, n - pos);
				memcpy(dst + pos, tok, len);
				n += len;
			}
			break;
		}
		case 4: /* truncate */
			n = pos;
			break;
		case 5: { /* duplicate a span (e.g. a line) */
			size_t len = n ? 1 + rnd() % (n - pos < 64 ? n - pos : 64) : 0;

			if (len && n + len <= cap) {
				memmove(dst + pos + len, dst + pos, n - pos);
				n += len;
			}
			break;
		}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned long runs = 1000, seconds = 60;
	uint64_t seed = 1;
	uint8_t *work;
	time_t start = time(NULL);
	unsigned long done = 0;

	prog = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (add_seed(argv[i]) < 0)
			return 2;
	}
	signal(SIGSEGV, save_crash);
	signal(SIGABRT, save_crash);
	signal(SIGFPE, save_crash);
	signal(SIGBUS, save_crash);
	rng_state = seed;
	if (nseeds == 0) {
		static uint8_t empty[1];

		seeds[nseeds++] = (struct buf){empty, 0};
	}
	for (size_t i = 0; i < nseeds; i++) {
		cur_input = seeds[i].p;
		cur_size = seeds[i].n;
		LLVMFuzzerTestOneInput(seeds[i].p, seeds[i].n);
	}
	work = malloc(FUZZ_MAX_INPUT + 4096);
	if (!work)
		return 1;
	for (; done < runs; done++) {
		const struct buf *s = &seeds[rnd() % nseeds];
		size_t n = mutate(work, FUZZ_MAX_INPUT + 4096, s);
		uint8_t *copy = malloc(n ? n : 1); /* exact size so ASan sees overreads */

		if (!copy)
			return 1;
		memcpy(copy, work, n);
		cur_input = copy;
		cur_size = n;
		LLVMFuzzerTestOneInput(copy, n);
		free(copy);
		if ((unsigned long)(time(NULL) - start) >= seconds)
			break;
	}
	printf("fuzz: %zu seeds, %lu mutated inputs, no crash\n", nseeds, done);
	free(work);
	return 0;
}
