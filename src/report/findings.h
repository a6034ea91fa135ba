// SPDX-License-Identifier: MIT
// Findings of a series of snapshots (a recording): what an on-call engineer
// wants first. Deadlocks, the locks held longest and their holders, threads
// stuck on the same wait, CPU hot spots; each found once, with the wall
// clock times and the snapshots it spans.
#ifndef SD_FINDINGS_H
#define SD_FINDINGS_H

#include "jsonw.h"
#include "snapshot.h"
#include "util.h"

enum sd_finding_kind {
	SD_FINDING_DEADLOCK,
	SD_FINDING_LOCK_HELD,
	SD_FINDING_STUCK,
	SD_FINDING_HOT,
	/* A Tokio program's (findings among tasks, see format-tokio.h) */
	SD_FINDING_TASK_DEADLOCK,
	SD_FINDING_TOKIO_STALL,
	SD_FINDING_FUTURE_LOCK,
	SD_FINDING_LONG_POLL,
	SD_FINDING_GODEADLOCK, /* a cycle among goroutines (findings-go.c) */
	SD_FINDING_GOLEAK,     /* goroutines of one creation site only grew */
	SD_FINDING_GOSTUCK,    /* goroutines on the same wait and stack */
};

/* One finding. Strings are heap copies owned by the finding set. */
struct sd_finding {
	enum sd_finding_kind kind;
	pid_t pid;
	size_t first, last; /* 0-based snapshot indices of the series */
	size_t seen;	    /* snapshots between them it was seen in */
	double t0, t1;	    /* wall clock of the first and the last */
	char *title;	    /* one line, no newline */
	char *detail;	    /* lines ending in '\n', or NULL */
	pid_t *tids;	    /* threads concerned: the cycle, the holder, ... */
	size_t ntids;
	uint64_t address;      /* the lock, 0 if none */
	pid_t holder;	       /* lock held: its holder */
	uint64_t count, total; /* hot spot: samples in it, on-CPU samples */
	uint64_t key;	       /* Tokio: what makes it the same finding again */
	/* Goroutine findings: the goroutines concerned (stuck, in a cycle),
	 * the holder of what the stuck ones wait on (0 none), a leak's
	 * creation site and its count in each snapshot of the process from
	 * first to last. */
	uint64_t *goids;
	size_t ngoids;
	uint64_t goholder;
	char *site_function, *site_file;
	int site_line;
	uint64_t *counts;
	size_t ncounts;
};

struct sd_findings {
	struct sd_finding *v;
	size_t n;
	size_t nsnaps;
};

/* Analyze the N snapshots S (ordered by time; threads keyed by pid and
 * tid, so several processes may be mixed) into F, in this order:
 * deadlocks (each cycle once, over the snapshots it was in), a Tokio
 * program's findings (below), locks held
 * by the same thread in consecutive snapshots (longest first, at most
 * three, leaving out holders already in a deadlock), threads that sat
 * on the same lock wait or in D state with the same stack in three
 * consecutive snapshots or more (two when there are fewer), grouped by
 * what they wait for, then on-CPU hot spots (functions on top of at
 * least 10% of the on-CPU thread samples, at most three). A Tokio
 * program's: deadlocks among tasks, stalls (workers parked on a lock),
 * FutureLocks, each once over the snapshots it was in, and long polls
 * (a worker inside one poll of a task across consecutive snapshots, each
 * once with its longest run). F copies what
 * it keeps, so the snapshots may be freed before it. Release F with
 * findings_release (which accepts a zeroed or released set). */
void findings_analyze(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f);

/* The goroutine findings of the N snapshots S (findings-go.c): with
 * DEADLOCKS the cycles among goroutines (each once, over the snapshots it
 * was in), else goroutine leaks (a creation site whose count grew from
 * the first snapshot of its process to the last and never fell, by two
 * or more) then goroutines stuck on the same wait with the same stack in
 * three consecutive snapshots or more (two when there are fewer), a wait
 * that is no idleness: on a mutex, a WaitGroup, a semaphore, sync.Cond,
 * a channel send or a nil channel; grouped by wait and stack, leaving out
 * those in a cycle. Appends to *V (N_V entries, *CAP its room). */
void findings_go(const struct sd_snapshot *const *s, size_t n, int deadlocks,
		 struct sd_finding **v, size_t *n_v, size_t *cap);
void findings_release(struct sd_findings *f);
/* For the finders (finding.c): a new finding of KIND, zeroed, appended to
 * *V (*N entries, *CAP its room); and its span, from snapshot FIRST to
 * LAST of S, seen in SEEN of them. */
struct sd_finding *findings_add(struct sd_finding **v, size_t *n, size_t *cap,
				enum sd_finding_kind kind);
void findings_set_span(struct sd_finding *x, const struct sd_snapshot *const *s, size_t first,
		       size_t last, size_t seen);

/* Append "16:26:18-16:26:24, snapshots 12-16" (UTC; one time and
 * "snapshot 12" for a single one; "(in 3 of them)" when it was not seen
 * in every snapshot between) for finding X. */
void findings_span(struct strbuf *out, const struct sd_finding *x);

/* The findings block of a report: a heading, then each finding's title,
 * span and detail lines, indented; "none" when F is empty. */
void findings_format_text(struct strbuf *out, const struct sd_findings *f);

/* The findings as a JSON array, written through W: {"kind", "title",
 * "detail", "pid", "first", "last" (1-based snapshots), "seen", "start",
 * "end" (epoch seconds), "tids", "address", "holder"}. */
void findings_json(struct jsonw *w, const struct sd_findings *f);

/* "16:26:18" (UTC) of wall clock time T, into BUF of N bytes. */
void findings_clock(char *buf, size_t n, double t);

#endif
