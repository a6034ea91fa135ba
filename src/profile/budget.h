// SPDX-License-Identifier: MIT
// stackdump's own CPU budget while it samples (profile, top, record): the
// CPU it used over the last window against a share of one core; over it,
// samples are taken less often, and again at the rate asked once the cost
// allows. The caller measures (sd_cpu_seconds, sd_now_ns) and says what
// changed; this only decides.
#ifndef SD_BUDGET_H
#define SD_BUDGET_H

#include <stdint.h>

struct sd_budget {
	double percent;		  /* of one core; 0: no budget */
	uint64_t asked_ns;	  /* the interval asked */
	uint64_t interval_ns;	  /* the interval in use */
	uint64_t max_interval_ns; /* never slower than this */
	uint64_t window_ns;	  /* how long a measurement lasts */
	uint64_t win_start;	  /* 0 until the warm-up is over */
	double win_cpu;		  /* CPU seconds at the window's start */
	uint64_t warm_until;	  /* the first window starts here */
	double last_percent;	  /* CPU of the last full window, % of a core */
	/* Steady state (every full window): CPU seconds over wall ns. */
	double steady_cpu;
	uint64_t steady_ns;
	unsigned slowed, restored; /* times the interval grew, came back */
	unsigned over;		   /* windows in a row over the budget */
};

/* A budget of PERCENT of one core for sampling every INTERVAL_NS from
 * START_NS. The first second (the first capture of every thread, the
 * debug info read for the first stacks) is not judged. */
void budget_init(struct sd_budget *b, double percent, uint64_t interval_ns, uint64_t start_ns);

enum {
	BUDGET_SAME = 0,
	BUDGET_SLOWER, /* over budget: interval_ns grew */
	BUDGET_FASTER, /* well under it: interval_ns came back towards the one asked */
};

/* After a tick at NOW_NS with CPU_S seconds of CPU used so far (the whole
 * process): BUDGET_SLOWER or BUDGET_FASTER when interval_ns changed. */
int budget_tick(struct sd_budget *b, uint64_t now_ns, double cpu_s);

/* CPU of the steady state so far, % of one core (-1 when no full window
 * was measured). */
double budget_steady_percent(const struct sd_budget *b);

/* Is sampling keeping up? Judged over windows of two seconds or more
 * (and eight ticks): fewer than 90% of the ticks the interval asks for,
 * or (perf, ticks on a grid) a tick composed more than a second after
 * its time. */
struct sd_pace {
	uint64_t win_start, win_samples, last_said;
	double last_rate, last_window_s;
};

void pace_init(struct sd_pace *p, uint64_t start);
/* After a tick at NOW with SAMPLES taken so far at INTERVAL_NS (ON_GRID:
 * composed LAG_NS after its planned time): nonzero when it is time to say
 * that sampling fell behind (at most once in ten seconds). Windows start
 * at the START given to pace_init. */
int pace_check(struct sd_pace *p, uint64_t now, uint64_t samples, uint64_t interval_ns,
	       int on_grid, uint64_t lag_ns);

#endif
