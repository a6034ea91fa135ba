// SPDX-License-Identifier: MIT
// The conditions of `record --when`: parsing them, and deciding from cheap
// observations of the threads (state, syscall, context switches, process
// CPU time) and the occasional confirming snapshot whether one holds.
// Everything here is a function of its inputs; the recorder does the I/O.
#ifndef SD_TRIGGERS_H
#define SD_TRIGGERS_H

#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"
#include "snapshot.h"
#include "util.h"

enum sd_trig_kind { SD_TRIG_PARKED, SD_TRIG_CPU, SD_TRIG_STUCK, SD_TRIG_DEADLOCK };

#define SD_TRIGGERS_MAX 8

struct sd_trigger {
	enum sd_trig_kind kind;
	double threshold; /* parked count or CPU percent */
	uint64_t dur_us;  /* stuck */
	char text[64];	  /* as given, for reasons */
	int armed;	  /* fires again only after it was false */
};

/* What the recorder saw at one check. */
struct sd_observation {
	const struct sd_tobs *threads;
	size_t nthreads;
	uint64_t now_us;    /* monotonic */
	uint64_t cpu_ticks; /* utime + stime of the process */
	int have_cpu;	    /* cpu_ticks is valid */
	double clk_tck;	    /* ticks per second */
};

/* A thread that might be stuck: how long it has looked the same. */
struct sd_stuck_ent {
	pid_t tid;
	uint64_t since_us;
	struct sd_tobs last;
	uint64_t ref_hash; /* its stack in a snapshot at half the duration */
	int have_ref;
	int done; /* fired, or found idle: wait until it changes */
	int seen;
};

/* A set of conditions and what they remember between checks. */
struct sd_triggers {
	struct sd_trigger trig[SD_TRIGGERS_MAX];
	int n;
	struct sd_stuck_ent *stuck;
	size_t nstuck, stuckcap;
	uint64_t cpu_ticks, cpu_us;
	int cpu_have;
	char *dl_prev, *dl_probed; /* parked-thread signatures (deadlock) */
};

/* Takes a snapshot to confirm a condition, or returns NULL (the check then
 * does not fire). The snapshot becomes the caller's of triggers_check. */
typedef struct sd_snapshot *(*sd_probe_fn)(void *arg);

/* Parse SPEC ("parked:8,stuck:10s", conditions parked:N, deadlock,
 * cpu:PERCENT, stuck:DURATION, or NAME>=VALUE for NAME:VALUE; texts and
 * reasons are written NAME>=VALUE either way) into T, which must be zeroed or released.
 * Returns 0, or -EINVAL with ERR naming the bad condition. */
int triggers_parse(struct sd_triggers *t, const char *spec, struct sd_error *err);

/* Free what T holds and zero it. */
void triggers_release(struct sd_triggers *t);

/* Is there a condition of kind K? */
int triggers_has(const struct sd_triggers *t, enum sd_trig_kind k);

/* Append the conditions as given, comma-separated, to SB. */
void triggers_describe(const struct sd_triggers *t, struct strbuf *sb);

/* Forget what the conditions remember of the process (another process is
 * followed): stuck candidates, the CPU baseline. */
void triggers_reset(struct sd_triggers *t);

/* Evaluate every condition on OBS once. A condition fires when it holds
 * and did not at the previous check. PROBE (with ARG) is called at most
 * once or twice for a confirming snapshot (stuck, deadlock). Returns 1 when
 * something fired: REASON holds why, and *SNAP may hold a confirming
 * snapshot to save (the caller's to free); 0 otherwise (*SNAP NULL). */
int triggers_check(struct sd_triggers *t, const struct sd_observation *obs, sd_probe_fn probe,
		   void *arg, struct strbuf *reason, struct sd_snapshot **snap);

/* After a snapshot of our own: every thread stopped for it counted one
 * voluntary switch more (and timed futex waits came back as
 * restart_syscall). Take the counts of V (N threads, with context switch
 * counts) without restarting the clocks of the stuck candidates. */
void triggers_rebaseline(struct sd_triggers *t, const struct sd_tobs *v, size_t n);

/* A thread that may count as stuck: running, in a futex wait, or in D. */
int triggers_stuck_candidate(const struct sd_tobs *o);

#endif
