/* SPDX-License-Identifier: BSD-3-Clause */
/* The journal (journal.h): SQLite in WAL mode, one log table, group commit. */
#include "controlplane/loomd/journal.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_VERSION 1

struct loomd_journal {
	sqlite3 *db;
	sqlite3_stmt *append, *forget, *begin, *commit, *rollback;
	char path[PATH_MAX];
	bool in_txn;
};

static int fail(struct loomd_journal *j, struct loom_err *err, const char *what)
{
	return loom_err_set(err, EIO, "journal %s: %s: %s", j->path, what,
			    j->db ? sqlite3_errmsg(j->db) : "no database");
}

static int exec(struct loomd_journal *j, const char *sql, struct loom_err *err)
{
	char *msg = NULL;
	int r = sqlite3_exec(j->db, sql, NULL, NULL, &msg);

	if (r != SQLITE_OK) {
		loom_err_set(err, EIO, "journal %s: %s", j->path, msg ? msg : sqlite3_errstr(r));
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static int prepare(struct loomd_journal *j, const char *sql, sqlite3_stmt **ret,
		   struct loom_err *err)
{
	if (sqlite3_prepare_v2(j->db, sql, -1, ret, NULL) != SQLITE_OK)
		return fail(j, err, "prepare");
	return 0;
}

/* Reads the schema version in meta (0 when the table is new). */
static int schema_version(struct loomd_journal *j, int *ret, struct loom_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (prepare(j, "SELECT value FROM meta WHERE key = 'schema'", &st, err) < 0)
		return -EIO;
	r = sqlite3_step(st);
	*ret = r == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return fail(j, err, "read schema");
	return 0;
}

struct loomd_journal *loomd_journal_open(const char *path, int sync, struct loom_err *err)
{
	static const char *const sync_sql[] = {"PRAGMA synchronous = OFF",
					       "PRAGMA synchronous = NORMAL",
					       "PRAGMA synchronous = FULL"};
	struct loomd_journal *j = calloc(1, sizeof(*j));
	int version = 0;

	if (!j) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(j->path, sizeof(j->path), "%s", path);
	if (sqlite3_open_v2(path, &j->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		fail(j, err, "open");
		goto err;
	}
	sqlite3_busy_timeout(j->db, 2000);
	if (exec(j, "PRAGMA journal_mode = WAL", err) < 0)
		goto err;
	if (exec(j, sync_sql[sync < 0 ? 0 : sync > 2 ? 2 : sync], err) < 0)
		goto err;
	if (exec(j,
		 "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);"
		 "CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
		 " kind INTEGER NOT NULL, job INTEGER NOT NULL, id INTEGER NOT NULL,"
		 " time_ns INTEGER NOT NULL, body BLOB);"
		 "CREATE INDEX IF NOT EXISTS log_job ON log (job);",
		 err) < 0)
		goto err;
	if (schema_version(j, &version, err) < 0)
		goto err;
	if (version == 0) {
		if (exec(j, "INSERT INTO meta (key, value) VALUES ('schema', 1)", err) < 0)
			goto err;
	} else if (version != SCHEMA_VERSION) {
		loom_err_set(err, EPROTO,
			     "journal %s has schema version %d; this loomd reads version %d", path,
			     version, SCHEMA_VERSION);
		errno = EPROTO;
		goto err_keep_errno;
	}
	if (prepare(j, "INSERT INTO log (kind, job, id, time_ns, body) VALUES (?, ?, ?, ?, ?)",
		    &j->append, err) < 0 ||
	    prepare(j, "DELETE FROM log WHERE job = ?", &j->forget, err) < 0 ||
	    prepare(j, "BEGIN", &j->begin, err) < 0 || prepare(j, "COMMIT", &j->commit, err) < 0 ||
	    prepare(j, "ROLLBACK", &j->rollback, err) < 0)
		goto err;
	return j;
err:
	errno = EIO;
err_keep_errno:;
	int e = errno;

	loomd_journal_close(j);
	errno = e;
	return NULL;
}

struct loomd_journal *loomd_journal_close(struct loomd_journal *j)
{
	if (!j)
		return NULL;
	if (j->in_txn) {
		struct loom_err e;

		loomd_journal_commit(j, &e);
	}
	sqlite3_finalize(j->append);
	sqlite3_finalize(j->forget);
	sqlite3_finalize(j->begin);
	sqlite3_finalize(j->commit);
	sqlite3_finalize(j->rollback);
	sqlite3_close(j->db);
	free(j);
	return NULL;
}

static int step_reset(sqlite3_stmt *st)
{
	int r = sqlite3_step(st);

	sqlite3_reset(st);
	return r == SQLITE_DONE ? 0 : -EIO;
}

static int begin(struct loomd_journal *j, struct loom_err *err)
{
	if (j->in_txn)
		return 0;
	if (step_reset(j->begin) < 0)
		return fail(j, err, "begin");
	j->in_txn = true;
	return 0;
}

int loomd_journal_append(struct loomd_journal *j, enum loomd_journal_kind kind, uint64_t job_id,
			 uint64_t id, uint64_t time_ns, const void *body, size_t len,
			 struct loom_err *err)
{
	sqlite3_stmt *st = j->append;

	if (begin(j, err) < 0)
		return -EIO;
	sqlite3_bind_int(st, 1, (int)kind);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)job_id);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)id);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time_ns);
	if (body && len)
		sqlite3_bind_blob(st, 5, body, (int)len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	if (step_reset(st) < 0) {
		sqlite3_clear_bindings(st);
		return fail(j, err, "append");
	}
	sqlite3_clear_bindings(st);
	return 0;
}

int loomd_journal_forget(struct loomd_journal *j, uint64_t job_id, struct loom_err *err)
{
	if (begin(j, err) < 0)
		return -EIO;
	sqlite3_bind_int64(j->forget, 1, (sqlite3_int64)job_id);
	if (step_reset(j->forget) < 0)
		return fail(j, err, "delete");
	return 0;
}

bool loomd_journal_pending(const struct loomd_journal *j)
{
	return j && j->in_txn;
}

int loomd_journal_commit(struct loomd_journal *j, struct loom_err *err)
{
	if (!j->in_txn)
		return 0;
	if (step_reset(j->commit) < 0) {
		fail(j, err, "commit");
		loomd_journal_rollback(j);
		return -EIO;
	}
	j->in_txn = false;
	return 0;
}

void loomd_journal_rollback(struct loomd_journal *j)
{
	if (!j->in_txn)
		return;
	step_reset(j->rollback);
	j->in_txn = false;
}

int loomd_journal_replay(struct loomd_journal *j, loomd_journal_fn fn, void *ctx, uint64_t *ret_n,
			 struct loom_err *err)
{
	sqlite3_stmt *st;
	uint64_t n = 0;
	int r;

	if (prepare(j, "SELECT kind, job, id, time_ns, body FROM log ORDER BY seq", &st, err) < 0)
		return -EIO;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		int rc = fn(ctx, (enum loomd_journal_kind)sqlite3_column_int(st, 0),
			    (uint64_t)sqlite3_column_int64(st, 1),
			    (uint64_t)sqlite3_column_int64(st, 2),
			    (uint64_t)sqlite3_column_int64(st, 3), sqlite3_column_blob(st, 4),
			    (size_t)sqlite3_column_bytes(st, 4));

		n++;
		if (rc < 0) {
			sqlite3_finalize(st);
			if (ret_n)
				*ret_n = n;
			return rc;
		}
	}
	sqlite3_finalize(st);
	if (ret_n)
		*ret_n = n;
	if (r != SQLITE_DONE)
		return fail(j, err, "read");
	return 0;
}
