// SPDX-License-Identifier: MIT
// Long polls of Tokio tasks across a series of snapshots: a worker found
// polling the same task with its core's tick unchanged in consecutive
// snapshots has been inside one poll of it (no .await returned to the
// scheduler) for at least the time between them.
#ifndef SD_LONGPOLL_H
#define SD_LONGPOLL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jsonw.h"
#include "snapshot.h"
#include "util.h"

/* One long poll. Strings point into the newest snapshot of the series
 * (longpoll_find), or into the pool of who made it (a sampling run's). */
struct sd_long_poll {
	pid_t pid;	   /* the process (0: not said) */
	pid_t tid;	   /* the worker */
	const char *name;  /* its name, or NULL: the snapshot's */
	uint64_t runtime;  /* its runtime's id */
	uint64_t task;	   /* the task it polls */
	int64_t tick;	   /* its core's tick, the same in every snapshot counted */
	const char *future; /* the task's future, or NULL */
	const char *function, *file; /* the task's own frame on the worker's stack, or NULL */
	int line;
	size_t snaps;	   /* consecutive snapshots, up to the newest, that saw it */
	double seconds;	   /* between the first of them and the newest */
	int samples;	   /* they were a sampling run's samples (text: "samples") */
	int ongoing;	   /* a sampling run: still in that poll at its last sample */
};

/* The long polls of the N snapshots SNAPS (oldest first): each worker of
 * the newest that polls a task with a known tick, seen doing the same in
 * the snapshot before it (and so on back). Returns the count and a heap
 * array in *OUT (the caller frees it; NULL when none). */
size_t longpoll_find(struct sd_snapshot *const *snaps, size_t n, struct sd_long_poll **out);

/* Append "worker 4243 "tokio-runtime-w" has polled task 417,
 * fx::handle_conn at conn.rs:88, for at least 1.2 s (one poll: its tick 13
 * in 3 snapshots)" to OUT; S is the newest snapshot (for the worker's
 * name when P has none; may be NULL). */
void longpoll_text(struct strbuf *out, const struct sd_snapshot *s, const struct sd_long_poll *p);

/* P as the JSON object of docs/json.md ({"tid", "runtime", "task",
 * "future", "function", "file", "line", "tick", "snapshots", "seconds"},
 * plus "pid", "name" and "ongoing" for a sampling run's), through W. */
void longpoll_json(struct jsonw *w, const struct sd_long_poll *p);

#endif
