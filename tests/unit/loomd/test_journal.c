/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/journal.c: records of every kind survive
 * a commit, a close and a reopen, and replay in append order with their
 * bodies; forgetting a job removes its records only; a rollback discards
 * what was not committed; replay stops at the callback's first error; a
 * file that is not SQLite, a journal of another schema version and an
 * unwritable place are refused with a message naming the file.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/loomd/journal.h"
#include "proto/wire.h"
#include "tests/unit/loomd/fixture.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/loom-journal-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void journal_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* One record as appended or replayed. */
struct rec {
	enum loomd_journal_kind kind;
	uint64_t job, id, time_ns;
	uint8_t body[64];
	size_t len;
};

#define MAX_RECS 64

struct log {
	struct rec r[MAX_RECS];
	size_t n;
	size_t stop_after; /* the callback fails on this record (0: never) */
};

static int collect(void *ctx, enum loomd_journal_kind kind, uint64_t job_id, uint64_t id,
		   uint64_t time_ns, const void *body, size_t len)
{
	struct log *l = ctx;
	struct rec *r;

	assert_true(l->n < MAX_RECS);
	assert_true(len <= sizeof(r->body));
	if (len)
		assert_non_null(body);
	r = &l->r[l->n++];
	r->kind = kind;
	r->job = job_id;
	r->id = id;
	r->time_ns = time_ns;
	r->len = len;
	if (len)
		memcpy(r->body, body, len);
	if (l->stop_after && l->n == l->stop_after)
		return -ECANCELED;
	return 0;
}

static void append(struct loomd_journal *j, const struct rec *r)
{
	struct loom_err err = {{0}};

	if (loomd_journal_append(j, r->kind, r->job, r->id, r->time_ns, r->len ? r->body : NULL,
				 r->len, &err) != 0)
		fail_msg("append: %s", err.msg);
}

static void replay_into(struct loomd_journal *j, struct log *l)
{
	struct loom_err err = {{0}};
	uint64_t n = 12345;

	l->n = 0;
	if (loomd_journal_replay(j, collect, l, &n, &err) != 0)
		fail_msg("replay: %s", err.msg);
	assert_int_equal(n, l->n);
}

static void assert_same(const struct rec *want, size_t nwant, const struct log *got)
{
	assert_int_equal(got->n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert_int_equal(got->r[i].kind, want[i].kind);
		assert_true(got->r[i].job == want[i].job);
		assert_true(got->r[i].id == want[i].id);
		assert_true(got->r[i].time_ns == want[i].time_ns);
		assert_int_equal(got->r[i].len, want[i].len);
		if (want[i].len)
			assert_memory_equal(got->r[i].body, want[i].body, want[i].len);
	}
}

/* A RegisterJob's bytes, as loomd journals them. */
static size_t pack_register(uint64_t job, uint8_t *buf, size_t size)
{
	Loom__RegisterJob m = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec c = LOOM__COFLOW_SPEC__INIT, *cs[1] = {&c};
	size_t n;

	c.id = job * 10;
	c.expected_flows = 2;
	m.job_id = job;
	m.weight = 1.5;
	m.name = "j";
	m.n_coflows = 1;
	m.coflows = cs;
	n = loom__register_job__get_packed_size(&m);
	assert_true(n <= size);
	return loom__register_job__pack(&m, buf);
}

/* Records of every kind for two jobs, one with ids above INT64_MAX. */
static size_t make_records(struct rec *r)
{
	const uint8_t tuple[] = {0x0a, 0x04, 10, 0, 0, 1, 0x12, 0x04, 10, 0, 0, 2, 0x28, 0x06};
	const uint8_t announce[] = {0x08, 0x0a, 0x12, 0x02, 0x08, 0x01};
	size_t n = 0;

	memset(r, 0, sizeof(*r) * 8);
	r[n] = (struct rec){LOOMD_J_REGISTER, 1, 1, 1000, {0}, 0};
	r[n].len = pack_register(1, r[n].body, sizeof(r[n].body));
	n++;
	r[n] = (struct rec){LOOMD_J_REGISTER, UINT64_MAX, UINT64_MAX, UINT64_MAX - 1, {0}, 0};
	r[n].len = pack_register(UINT64_MAX, r[n].body, sizeof(r[n].body));
	n++;
	r[n] = (struct rec){LOOMD_J_FLOW, 1, 10, 2000, {0}, sizeof(announce)};
	memcpy(r[n].body, announce, sizeof(announce));
	n++;
	r[n] = (struct rec){LOOMD_J_FLOW_DONE, 1, 10, 3000, {0}, sizeof(tuple)};
	memcpy(r[n].body, tuple, sizeof(tuple));
	n++;
	r[n++] = (struct rec){LOOMD_J_COFLOW_DONE, 1, 10, 4000, {0}, 0};
	r[n++] = (struct rec){LOOMD_J_COFLOW_DONE, UINT64_MAX, 7, 4500, {0}, 0};
	r[n++] = (struct rec){LOOMD_J_JOB_DONE, 1, 1, 5000, {0}, 0};
	r[n++] = (struct rec){LOOMD_J_JOB_DONE, UINT64_MAX, UINT64_MAX, 0, {0}, 0};
	return n;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_append_reopen_replay(void **state)
{
	struct rec recs[8];
	size_t n = make_records(recs);
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;

	(void)state;
	journal_path(path, sizeof(path), "a.db");
	j = loomd_journal_open(path, 2, &err);
	if (!j)
		fail_msg("open: %s", err.msg);
	assert_false(loomd_journal_pending(j));
	assert_false(loomd_journal_pending(NULL));
	for (size_t i = 0; i < n; i++)
		append(j, &recs[i]);
	assert_true(loomd_journal_pending(j));
	/* the open transaction is visible to replay on the same connection */
	replay_into(j, &got);
	assert_same(recs, n, &got);
	assert_int_equal(loomd_journal_commit(j, &err), 0);
	assert_false(loomd_journal_pending(j));
	assert_int_equal(loomd_journal_commit(j, &err), 0); /* nothing pending: a no-op */
	assert_null(loomd_journal_close(j));

	j = loomd_journal_open(path, 1, &err);
	if (!j)
		fail_msg("reopen: %s", err.msg);
	replay_into(j, &got);
	assert_same(recs, n, &got);
	/* appends after a reopen follow the old ones */
	append(j, &recs[0]);
	assert_int_equal(loomd_journal_commit(j, &err), 0);
	replay_into(j, &got);
	assert_int_equal(got.n, n + 1);
	assert_same(recs, 1, &(struct log){.r = {got.r[n]}, .n = 1});
	loomd_journal_close(j);
	assert_null(loomd_journal_close(NULL));
}

static void test_close_commits(void **state)
{
	struct rec recs[8];
	size_t n = make_records(recs);
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;

	(void)state;
	journal_path(path, sizeof(path), "close.db");
	j = loomd_journal_open(path, 0, &err);
	assert_non_null(j);
	for (size_t i = 0; i < n; i++)
		append(j, &recs[i]);
	loomd_journal_close(j);                /* pending records are committed, not lost */
	j = loomd_journal_open(path, 5, &err); /* out-of-range sync levels are clamped */
	assert_non_null(j);
	replay_into(j, &got);
	assert_same(recs, n, &got);
	loomd_journal_close(j);
}

static void test_forget(void **state)
{
	struct rec recs[8], keep[8];
	size_t n = make_records(recs), nkeep = 0;
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;

	(void)state;
	journal_path(path, sizeof(path), "forget.db");
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	for (size_t i = 0; i < n; i++)
		append(j, &recs[i]);
	assert_int_equal(loomd_journal_commit(j, &err), 0);

	assert_int_equal(loomd_journal_forget(j, 1, &err), 0);
	assert_true(loomd_journal_pending(j));
	assert_int_equal(loomd_journal_commit(j, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (recs[i].job != 1)
			keep[nkeep++] = recs[i];
	assert_int_equal(nkeep, 3);
	replay_into(j, &got);
	assert_same(keep, nkeep, &got);
	/* forgetting a job with no records is fine */
	assert_int_equal(loomd_journal_forget(j, 424242, &err), 0);
	assert_int_equal(loomd_journal_commit(j, &err), 0);
	loomd_journal_close(j);

	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	replay_into(j, &got);
	assert_same(keep, nkeep, &got);
	assert_int_equal(loomd_journal_forget(j, UINT64_MAX, &err), 0);
	loomd_journal_close(j);
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	replay_into(j, &got);
	assert_int_equal(got.n, 0);
	loomd_journal_close(j);
}

static void test_rollback(void **state)
{
	struct rec recs[8];
	size_t n = make_records(recs);
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;

	(void)state;
	journal_path(path, sizeof(path), "rollback.db");
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	append(j, &recs[0]);
	append(j, &recs[1]);
	assert_int_equal(loomd_journal_commit(j, &err), 0);
	for (size_t i = 2; i < n; i++)
		append(j, &recs[i]);
	assert_int_equal(loomd_journal_forget(j, recs[0].job, &err), 0);
	loomd_journal_rollback(j);
	assert_false(loomd_journal_pending(j));
	loomd_journal_rollback(j); /* nothing open: a no-op */
	replay_into(j, &got);
	assert_same(recs, 2, &got);
	loomd_journal_close(j);
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	replay_into(j, &got);
	assert_same(recs, 2, &got);
	loomd_journal_close(j);
}

static void test_replay_stops(void **state)
{
	struct rec recs[8];
	size_t n = make_records(recs);
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;
	uint64_t count = 0;

	(void)state;
	journal_path(path, sizeof(path), "stop.db");
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	for (size_t i = 0; i < n; i++)
		append(j, &recs[i]);
	loomd_journal_commit(j, &err);
	memset(&got, 0, sizeof(got));
	got.stop_after = 3;
	assert_int_equal(loomd_journal_replay(j, collect, &got, &count, &err), -ECANCELED);
	assert_int_equal(count, 3);
	assert_same(recs, 3, &got);
	/* ret_n may be NULL */
	got.n = 0;
	got.stop_after = 0;
	assert_int_equal(loomd_journal_replay(j, collect, &got, NULL, &err), 0);
	assert_int_equal(got.n, n);
	loomd_journal_close(j);

	/* an empty journal replays nothing */
	journal_path(path, sizeof(path), "empty.db");
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	count = 99;
	got.n = 0;
	assert_int_equal(loomd_journal_replay(j, collect, &got, &count, &err), 0);
	assert_int_equal(count, 0);
	assert_int_equal(got.n, 0);
	loomd_journal_close(j);
}

static void test_not_sqlite(void **state)
{
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	FILE *f;

	(void)state;
	journal_path(path, sizeof(path), "text.db");
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fputs("this is a configuration file, not a journal\n", f);
	fclose(f);
	errno = 0;
	j = loomd_journal_open(path, 2, &err);
	assert_null(j);
	assert_int_equal(errno, EIO);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "not a database");
}

static void test_unwritable(void **state)
{
	char path[PATH_MAX + 32];
	struct loom_err err = {{0}};
	struct loomd_journal *j;

	(void)state;
	journal_path(path, sizeof(path), "no/such/dir/j.db");
	errno = 0;
	j = loomd_journal_open(path, 2, &err);
	assert_null(j);
	assert_true(errno != 0);
	assert_contains(err.msg, path);

	/* a directory in the file's place */
	journal_path(path, sizeof(path), "");
	j = loomd_journal_open(path, 2, &err);
	assert_null(j);
	assert_contains(err.msg, tmpdir);
}

static void set_schema(const char *path, int version)
{
	sqlite3 *db = NULL;
	char sql[96];

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql), "UPDATE meta SET value = %d WHERE key = 'schema'", version);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_changes(db), 1);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void test_other_schema(void **state)
{
	struct rec recs[8];
	char path[PATH_MAX + 32], want[PATH_MAX + 64];
	struct loom_err err = {{0}};
	struct loomd_journal *j;
	static struct log got;

	(void)state;
	make_records(recs);
	journal_path(path, sizeof(path), "schema.db");
	j = loomd_journal_open(path, 2, &err);
	assert_non_null(j);
	append(j, &recs[0]);
	loomd_journal_close(j);

	set_schema(path, 99);
	errno = 0;
	j = loomd_journal_open(path, 2, &err);
	assert_null(j);
	assert_int_equal(errno, EPROTO);
	snprintf(want, sizeof(want), "journal %s has schema version 99", path);
	assert_contains(err.msg, want);

	/* nothing was changed: back at version 1 it opens with its record */
	set_schema(path, 1);
	j = loomd_journal_open(path, 2, &err);
	if (!j)
		fail_msg("open: %s", err.msg);
	replay_into(j, &got);
	assert_same(recs, 1, &got);
	loomd_journal_close(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_reopen_replay),
		cmocka_unit_test(test_close_commits),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_replay_stops),
		cmocka_unit_test(test_not_sqlite),
		cmocka_unit_test(test_unwritable),
		cmocka_unit_test(test_other_schema),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
