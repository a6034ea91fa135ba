// SPDX-License-Identifier: MIT
// Rendering of a Tokio program's runtimes and tasks (snapshot.h,
// sd_tokio_rt): a text section after the threads, each task with its await
// chain outermost first, identical chains grouped; and the JSON
// "runtimes" array of the dump schema.
#ifndef SD_FORMAT_TOKIO_H
#define SD_FORMAT_TOKIO_H

#include "format.h"

/* Append the runtimes and tasks of S (when S->tokio_read) to OUT: per
 * runtime a header line (flavor, workers, task count), a note when some
 * could not be shown, then each task ("task 7 [idle] fx::handle_conn")
 * with its chain, one level a line ("fx::read_frame at conn.rs:88", the
 * leaf "-> timer tokio::time::sleep::Sleep (deadline in 2.000 s)").
 * O->go_group groups tasks with the same state and chain as it groups
 * goroutines (0 none, 1 any, 2 four or more). Strings are escaped. */
void format_tokio_text(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_render_opts *o);

/* The members "tokio" (note) and "runtimes" of S's JSON object, through
 * W (nothing when S->tokio_read is not set). */
void format_tokio_json(struct jsonw *w, const struct sd_snapshot *s);
/* RT's deadlocks among tasks, as "deadlocks": [[task id, ...], ...]. */
void format_tokio_json_deadlocks(struct jsonw *w, const struct sd_tokio_rt *rt);

/* The lock view's part for tasks (`stackdump locks`): per runtime, each
 * tokio::sync lock a task holds (inferred) with the tasks awaiting it,
 * then the deadlocks among tasks. Nothing when S has no task in the lock
 * graph. Returns the number of deadlocks. */
size_t format_tokio_locks_text(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_render_opts *o);

/* The Tokio task thread TID polls in S (its context says), or 0. */
uint64_t format_tokio_task_of(const struct sd_snapshot *s, pid_t tid);

/* Findings among tasks, asked for by the findings block (format.h), by
 * KIND and number I (0, 1, ...): SD_TOKIO_FINDING_DEADLOCK the I-th cycle
 * among the tasks of S's runtimes; SD_TOKIO_FINDING_STALL the I-th lock of
 * G that threads of a runtime are parked on (the std-mutex stall: each
 * parked worker with the task it polls, the holder thread with its task);
 * SD_TOKIO_FINDING_FUTURE_LOCK the I-th tokio::sync lock held by a task
 * suspended on something else while other tasks wait for it. Appends
 * the finding's one line to SUMMARY and its lines ("    ...\n") to DETAIL
 * (either may be NULL); O may be NULL. Returns whether there is one. */
enum { SD_TOKIO_FINDING_DEADLOCK, SD_TOKIO_FINDING_STALL, SD_TOKIO_FINDING_FUTURE_LOCK };
int format_tokio_finding(const struct sd_snapshot *s, const struct sd_lockgraph *g, int kind,
			 size_t i, struct strbuf *summary, struct strbuf *detail,
			 const struct sd_render_opts *o);
/* The members "threads", "objects", "tasks" (task ids), "runtime" and, by
 * kind, "holder" and "holder_task" of the JSON object of that finding,
 * which must exist. */
void format_tokio_finding_json(struct jsonw *w, const struct sd_snapshot *s,
			       const struct sd_lockgraph *g, int kind, size_t i);
/* Are threads of a Tokio runtime of S parked on L (a finding of its own)? */
struct sd_lock;
int format_tokio_stalled_on(const struct sd_snapshot *s, const struct sd_lock *l);
/* The cycles among S's tasks, all runtimes together. */
size_t format_tokio_task_cycles(const struct sd_snapshot *s);

#endif
