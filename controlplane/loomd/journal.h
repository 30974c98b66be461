/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/journal: every accepted change, in SQLite (WAL), before
 * it is acknowledged; replayed at start-up.
 *
 * An append-only log of accepted changes in one SQLite table (WAL mode):
 * (seq, kind, job, id, time, body). Bodies are the requests' protobuf bytes,
 * so replay goes through the same handlers as live requests. Forgetting a
 * job deletes its rows. Writes go into one open transaction that the daemon
 * commits before it acknowledges them (group commit).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_JOURNAL_H
#define LOOM_CONTROLPLANE_LOOMD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

enum loomd_journal_kind {
	LOOMD_J_REGISTER = 1, /* body: RegisterJob */
	LOOMD_J_FLOW = 2,     /* body: AnnounceFlow */
	LOOMD_J_COFLOW_DONE = 3,
	LOOMD_J_JOB_DONE = 4,
	LOOMD_J_FLOW_DONE = 5, /* body: FiveTuple */
};

struct loomd_journal;

/*
 * Opens (creating) the journal at path; sync is SQLite's synchronous level
 * (0 off, 1 normal, 2 full). NULL + errno with err naming the file (e.g.
 * not a journal, a newer schema, unwritable).
 */
struct loomd_journal *loomd_journal_open(const char *path, int sync, struct loom_err *err);
/* Commits what is pending and closes. Accepts NULL; returns NULL. */
struct loomd_journal *loomd_journal_close(struct loomd_journal *j);

/* Appends a record inside the open transaction (begun on demand). 0 or -EIO with err. */
int loomd_journal_append(struct loomd_journal *j, enum loomd_journal_kind kind, uint64_t job_id,
			 uint64_t id, uint64_t time_ns, const void *body, size_t len,
			 struct loom_err *err);
/* Deletes every record of job_id. 0 or -EIO. */
int loomd_journal_forget(struct loomd_journal *j, uint64_t job_id, struct loom_err *err);
/* True when records await loomd_journal_commit(). */
bool loomd_journal_pending(const struct loomd_journal *j);
/* Commits the open transaction (if any). 0 or -EIO with err. */
int loomd_journal_commit(struct loomd_journal *j, struct loom_err *err);
/* Undoes the open transaction. */
void loomd_journal_rollback(struct loomd_journal *j);

typedef int (*loomd_journal_fn)(void *ctx, enum loomd_journal_kind kind, uint64_t job_id,
				uint64_t id, uint64_t time_ns, const void *body, size_t len);

/*
 * Calls fn for every record in append order; stops at fn's first negative
 * return and returns it; 0 or -EIO with err otherwise. *ret_n counts records.
 */
int loomd_journal_replay(struct loomd_journal *j, loomd_journal_fn fn, void *ctx, uint64_t *ret_n,
			 struct loom_err *err);

#endif
