// SPDX-License-Identifier: MIT
// A series of saved snapshots analyzed together (what `report` shows): in
// time order, each thread's state and stack per snapshot, the profile of
// them all, locks over time and the threads stuck in every snapshot. The
// series owns its snapshots; strings live as long as the series.
#ifndef SD_SERIES_H
#define SD_SERIES_H

#include <stdint.h>
#include <sys/types.h>

#include "findings.h"
#include "format.h"
#include "format-profile.h"
#include "snapio.h"
#include "snapshot.h"
#include "util.h"

/* One loaded snapshot. */
struct sd_series_snap {
	char *path;
	struct sd_snapshot *s;
	struct snapio_meta m;
};

/* A thread across snapshots, keyed by (pid, tid). */
struct sd_series_thread {
	pid_t pid, tid;
	const char *name; /* latest name, pool string of some snapshot */
	char *states;	  /* one state letter per snapshot, '.' when absent */
	uint64_t *hash;	  /* stack hash per snapshot, 0 when absent */
	size_t first;	  /* first snapshot it is in */
};

/* A lock seen in some snapshot: address, kind, and per snapshot its
 * holder and number of waiters. */
struct sd_series_lock {
	uint64_t addr;
	const char *symbol;
	enum sd_wait_kind kind;
	pid_t *holder;	 /* per snapshot, 0 none/unknown */
	size_t *waiters; /* per snapshot */
};

struct sd_series {
	struct sd_series_snap *v; /* in time order after series_build */
	size_t n, cap;
	struct sd_series_thread *th;
	size_t nth, thcap;
	struct sd_profile *prof; /* every thread stack of every snapshot */
	const struct sd_snapshot **sv; /* the snapshots in time order (series_build) */
	struct sd_findings fnd;        /* what to look at first (findings.c) */
};

/* The sections of a report. */
enum {
	SD_SERIES_SUMMARY = 1,
	SD_SERIES_PROFILE = 2,
	SD_SERIES_TIMELINE = 4,
	SD_SERIES_LOCKS = 8,
	SD_SERIES_STUCK = 16,
	SD_SERIES_FINDINGS = 32,
	SD_SERIES_ALL = 63,
};

/* An empty series whose profile aggregates with PO. */
struct sd_series *series_new(const struct sd_profile_opts *po);
/* Add snapshot S loaded from PATH with its metadata M; S becomes the
 * series'. Call series_build after the last. */
void series_add(struct sd_series *r, const char *path, struct sd_snapshot *s,
		const struct snapio_meta *m);
/* Sort the snapshots by time and build the threads, the findings and the
 * profile. */
void series_build(struct sd_series *r);
/* NULL does nothing. */
void series_free(struct sd_series *r);

/* The latest name of thread TID, or NULL. */
const char *series_thread_name(const struct sd_series *r, pid_t tid);
/* Thread T in snapshot K, or NULL when it is not there. */
const struct sd_thread *series_thread_in(const struct sd_series *r, size_t k,
					 const struct sd_series_thread *t);
/* Every lock waited for in some snapshot, in order of first sight: a heap
 * array in *OUT of the returned length, for series_locks_free. */
size_t series_locks(const struct sd_series *r, struct sd_series_lock **out);
void series_locks_free(struct sd_series_lock *v, size_t n);
/* The threads with the same stack and state in at least the last two
 * snapshots (a deadlock that forms during the recording counts from the
 * snapshot it formed in), lock waits first: a heap array of pointers into
 * R in *OUT, to free(). */
size_t series_stuck(const struct sd_series *r, const struct sd_series_thread ***out);
/* The first snapshot of T's last run of one stack and state that lasts to
 * the end (R->n when T is not in the last snapshot). */
size_t series_stuck_since(const struct sd_series *r, const struct sd_series_thread *t);

/* Rendering (format-series.c): the text report's sections and the JSON
 * report with SECTIONS (SD_SERIES_*; written through W); the timeline chart
 * is format_timeline_svg (timeline.h). R must hold at least one snapshot. */
void format_series_summary(const struct sd_series *r, struct strbuf *sb);
void format_series_profile(const struct sd_series *r, struct strbuf *sb, const char *view,
			   const struct sd_prender *ro);
void format_series_timeline(const struct sd_series *r, struct strbuf *sb);
void format_series_locks(const struct sd_series *r, struct strbuf *sb);
void format_series_stuck(const struct sd_series *r, struct strbuf *sb);
void format_series_json(struct jsonw *w, const struct sd_series *r, unsigned sections);

#endif
