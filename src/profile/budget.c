// SPDX-License-Identifier: MIT
// The CPU budget of a sampling run (budget.h): judged over windows of a
// second or more, the interval stretched by how far the cost went over
// (two windows in a row, or one by half as much again) and brought back
// (by halves at most) when the cost at the faster rate would still fit.
#include "budget.h"

#include <string.h>

void budget_init(struct sd_budget *b, double percent, uint64_t interval_ns, uint64_t start_ns)
{
	*b = (struct sd_budget){.percent = percent, .asked_ns = interval_ns, .interval_ns = interval_ns};
	/* A window holds at least a second and four ticks: a cost is judged
	 * on more than one sample, and a rate too dear for the target is
	 * cut within two seconds of the start. */
	b->window_ns = interval_ns * 4 > 1000000000ull ? interval_ns * 4 : 1000000000ull;
	b->warm_until = start_ns + 1000000000ull;
	/* At most 16 times slower and never below one sample every 5 s (or
	 * the interval asked, when it is longer): a profile keeps samples. */
	uint64_t cap = interval_ns * 16;
	if (cap > 5000000000ull)
		cap = interval_ns > 5000000000ull ? interval_ns : 5000000000ull;
	b->max_interval_ns = cap;
	b->last_percent = -1;
}

int budget_tick(struct sd_budget *b, uint64_t now_ns, double cpu_s)
{
	if (!b->win_start) {
		if (now_ns < b->warm_until)
			return BUDGET_SAME;
		b->win_start = now_ns;
		b->win_cpu = cpu_s;
		return BUDGET_SAME;
	}
	/* A window holds a second and four ticks at the interval in use. */
	uint64_t win = b->interval_ns * 4 > b->window_ns ? b->interval_ns * 4 : b->window_ns;
	if (now_ns - b->win_start < win)
		return BUDGET_SAME;
	double used = cpu_s - b->win_cpu, wall = (double)(now_ns - b->win_start) / 1e9;
	b->steady_cpu += used;
	b->steady_ns += now_ns - b->win_start;
	b->last_percent = wall > 0 ? 100.0 * used / wall : 0;
	b->win_start = now_ns;
	b->win_cpu = cpu_s;
	if (b->percent <= 0)
		return BUDGET_SAME;
	/* One window a little over (up to half as much again: a few new
	 * stacks unwound, a busy second) is let pass once; a second in a
	 * row, or one far over, is cut. */
	b->over = b->last_percent > b->percent ? b->over + 1 : 0;
	if (b->over && (b->over >= 2 || b->last_percent > b->percent * 1.5) &&
	    b->interval_ns < b->max_interval_ns) {
		b->over = 0;
		/* The cost per sample is what it is: fewer samples, by the
		 * ratio it went over, to a twentieth under the budget (at
		 * least 1.25, at most 4 times). */
		double f = b->last_percent / (b->percent * 0.95);
		f = f < 1.25 ? 1.25 : f > 4 ? 4 : f;
		uint64_t next = (uint64_t)((double)b->interval_ns * f);
		b->interval_ns = next > b->max_interval_ns ? b->max_interval_ns : next;
		b->slowed++;
		return BUDGET_SLOWER;
	}
	if (b->interval_ns > b->asked_ns) {
		/* Back towards the rate asked, at most twice as fast at a
		 * time, when the cost at that rate would still fit with a
		 * tenth to spare (the cost of a sample taken as it is). */
		uint64_t next = b->interval_ns / 2 < b->asked_ns ? b->asked_ns : b->interval_ns / 2;
		double predicted = b->last_percent * (double)b->interval_ns / (double)next;
		if (predicted <= b->percent * 0.9) {
			b->interval_ns = next;
			b->restored++;
			return BUDGET_FASTER;
		}
	}
	return BUDGET_SAME;
}

double budget_steady_percent(const struct sd_budget *b)
{
	if (!b->steady_ns)
		return -1;
	return 100.0 * b->steady_cpu / ((double)b->steady_ns / 1e9);
}

void pace_init(struct sd_pace *p, uint64_t start)
{
	memset(p, 0, sizeof(*p));
	p->win_start = start;
}

int pace_check(struct sd_pace *p, uint64_t now, uint64_t samples, uint64_t interval_ns,
	       int on_grid, uint64_t lag_ns)
{
	if (now < p->win_start) { /* not judged yet */
		p->win_samples = samples;
		return 0;
	}
	uint64_t win = now - p->win_start;
	if (win < 2000000000ull || win < interval_ns * 8)
		return 0;
	double want = (double)win / (double)interval_ns;
	double got = (double)(samples - p->win_samples);
	p->last_window_s = (double)win / 1e9;
	p->last_rate = got / p->last_window_s;
	p->win_start = now;
	p->win_samples = samples;
	/* perf composes late ticks from the samples the kernel took: there
	 * only the lag tells; ptrace skips the ticks it missed. */
	int behind = on_grid ? lag_ns > 1000000000ull && lag_ns < (1ull << 62) : got < want * 0.9;
	if (!behind || (p->last_said && now - p->last_said < 10000000000ull))
		return 0;
	p->last_said = now;
	return 1;
}
