// SPDX-License-Identifier: MIT
// The sampling driver: picks the capture engine of a sampled target once
// (perf events when the kernel permits them, else ptrace), takes its ticks,
// and sleeps between them while keeping perf ring buffers drained.
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "procfs.h"
#include "symbols.h"
#include "target.h"

struct sd_sampler {
	struct sd_target *t;
	struct sd_snap_opts so;
	enum sd_engine engine;
	struct sd_perf *perf;
	char fallback[512];
	char choice[256];
};

/* Waits a second (voluntary context switches, summed over a process's
 * threads) above which auto samples with perf only when the per-CPU clock
 * is open, else with ptrace: per-thread perf events are switched out and
 * in with their thread, so a server whose threads go in and out of their
 * waits pays for them at every switch, in its own time, while ptrace's
 * cost follows the threads that run at a tick (bench/realserver.sh:
 * MariaDB under sysbench switches about 25,000 times a second). With the
 * per-CPU clock its busiest switchers keep a counting clock alone. */
#define AUTO_SWITCHES_PER_S 2000
/* How long auto watches the switches before it chooses. */
#define AUTO_WATCH_NS 100000000ull

/* The threads' voluntary switches in all (the waits they went into; a
 * thread preempted on a busy host is not one that waits), or -1 when the
 * process cannot be read. */
static long long switches_now(pid_t pid)
{
	pid_t *tids = NULL;
	size_t n = 0;
	if (procfs_list_tids(pid, &tids, &n, NULL) < 0)
		return -1;
	long long sum = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t w;
		if (procfs_task_waits(pid, tids[i], &w) == 0)
			sum += (long long)w; /* else exited */
	}
	free(tids);
	return sum;
}

/* Auto's choice for PID: the waits a second over a short watch, or -1
 * when they cannot be read (then perf, as before). */
static double switch_rate(pid_t pid)
{
	uint64_t t0 = sd_now_ns();
	long long a = switches_now(pid);
	if (a < 0)
		return -1;
	struct timespec ts = {0, (long)AUTO_WATCH_NS};
	nanosleep(&ts, NULL);
	long long b = switches_now(pid);
	uint64_t t1 = sd_now_ns();
	if (b < 0 || t1 <= t0)
		return -1;
	/* A thread that exited in between takes its switches with it: a
	 * negative difference is no switching at all. */
	return b > a ? (double)(b - a) * 1e9 / (double)(t1 - t0) : 0;
}

const char *sd_engine_name(enum sd_engine e)
{
	switch (e) {
	case SD_ENGINE_PTRACE:
		return "ptrace";
	case SD_ENGINE_PERF:
		return "perf";
	default:
		return "auto";
	}
}

int sd_engine_parse(const char *name, enum sd_engine *e)
{
	if (!strcmp(name, "auto"))
		*e = SD_ENGINE_AUTO;
	else if (!strcmp(name, "ptrace"))
		*e = SD_ENGINE_PTRACE;
	else if (!strcmp(name, "perf"))
		*e = SD_ENGINE_PERF;
	else
		return -1;
	return 0;
}

struct sd_sampler *sampler_new(struct sd_target *t, const struct sd_snap_opts *so,
			       const struct sd_sampler_opts *o, struct sd_error *err)
{
	struct sd_sampler *s = sd_xcalloc(1, sizeof(*s));
	s->t = t;
	/* The modules indexed before sampling are not the profile's. */
	symbols_prefetch_cpu_take(t->sym);
	s->so = *so;
	s->engine = o->engine == SD_ENGINE_AUTO ? SD_ENGINE_PERF : o->engine;
	double rate = -1;
	if (o->engine == SD_ENGINE_AUTO && t->pid > 0) {
		rate = switch_rate(t->pid);
		if (rate >= AUTO_SWITCHES_PER_S) {
			/* Unless the per-CPU clock samples them (decided
			 * below, once the perf engine is open). */
			s->engine = SD_ENGINE_PTRACE;
			snprintf(s->choice, sizeof(s->choice),
				 "the threads go into a wait %.0f times a second; over %d, perf "
				 "events would cost them at every switch, and no per-CPU clock "
				 "samples them",
				 rate, AUTO_SWITCHES_PER_S);
		} else if (rate >= 0) {
			snprintf(s->choice, sizeof(s->choice),
				 "the threads go into a wait %.0f times a second, under %d", rate,
				 AUTO_SWITCHES_PER_S);
		}
	}
	/* A server busy switching: perf only with the per-CPU clock, which
	 * samples its busiest switchers with no cost at their switches. */
	int busy = o->engine == SD_ENGINE_AUTO && rate >= AUTO_SWITCHES_PER_S;
	if (s->engine == SD_ENGINE_PERF || busy) {
		struct sd_perf_opts po = {
		    /* A quarter of the tick: a thread that wakes and runs
		     * shows its new stack within a quarter of an interval
		     * of CPU time. Samples cost in proportion to the CPU
		     * the target uses, not to its threads. */
		    .period_ns = o->interval_us * 250 > 100000 ? o->interval_us * 250 : 100000,
		    .stack_copy = o->stack_copy,
		    .ring_kb = o->ring_kb,
		};
		/* For benchmarks: the hot threads sampled by their own task
		 * clock, as before the per-CPU clock. */
		const char *cc = getenv("STACKDUMP_PERF_CPU_CLOCK");
		po.no_cpu_clock = cc && !strcmp(cc, "off");
		struct sd_error e = {0};
		s->perf = perf_new(t, &po, &e);
		if (s->perf && busy && !perf_cpu_clock(s->perf)) {
			perf_free(s->perf);
			s->perf = NULL;
		} else if (s->perf && busy) {
			s->engine = SD_ENGINE_PERF;
			snprintf(s->choice, sizeof(s->choice),
				 "the threads go into a wait %.0f times a second; over %d, the "
				 "per-CPU clock samples them without a timer at each switch",
				 rate, AUTO_SWITCHES_PER_S);
		} else if (!s->perf && busy) {
			/* Refused: ptrace, as chosen (the reason is the choice). */
		} else if (!s->perf) {
			/* A process that is gone is gone for either engine. */
			if (o->engine == SD_ENGINE_PERF || e.code == ESRCH) {
				sd_error_set(err, e.code, "%s", e.msg);
				free(s);
				return NULL;
			}
			snprintf(s->fallback, sizeof(s->fallback), "%s", e.msg);
			s->engine = SD_ENGINE_PTRACE;
		}
	}
	return s;
}

void sampler_free(struct sd_sampler *s)
{
	if (!s)
		return;
	perf_free(s->perf);
	free(s);
}

void sampler_stop(struct sd_sampler *s)
{
	if (!s)
		return;
	if (s->perf)
		perf_stop(s->perf);
	target_release_files(s->t);
}

enum sd_engine sampler_engine(const struct sd_sampler *s)
{
	return s->engine;
}

const char *sampler_fallback(const struct sd_sampler *s)
{
	return s->fallback[0] ? s->fallback : NULL;
}

const char *sampler_choice(const struct sd_sampler *s)
{
	return s->choice[0] ? s->choice : NULL;
}

struct sd_snapshot *sampler_take(struct sd_sampler *s, struct sd_error *err)
{
	return sampler_take_at(s, 0, err);
}

struct sd_snapshot *sampler_take_at(struct sd_sampler *s, uint64_t at_ns, struct sd_error *err)
{
	if (s->perf) {
		/* The perf engine samples threads; what the runtimes schedule
		 * on them (goroutines, for record and report) is read as
		 * target_snapshot reads it, without stopping anything. */
		struct sd_snapshot *snap = perf_tick(s->perf, &s->so, at_ns, err);
		if (snap && (s->so.goroutines || s->so.tokio))
			target_runtimes(s->t, &s->so, snap);
		return snap;
	}
	return target_snapshot(s->t, &s->so, err);
}

void sampler_sleep_until(struct sd_sampler *const *v, size_t n, uint64_t deadline_ns)
{
	/* One descriptor per perf sampler (an epoll set of its threads'
	 * events): woken when a ring is filling, to drain it in time. */
	struct pollfd *pf = sd_xcalloc(n + 1, sizeof(*pf));
	struct sd_perf **owner = sd_xcalloc(n + 1, sizeof(*owner));
	size_t npf = 0;
	for (size_t i = 0; i < n; i++) {
		int fd = v[i] && v[i]->perf ? perf_poll_fd(v[i]->perf) : -1;
		if (fd < 0)
			continue;
		pf[npf].fd = fd;
		pf[npf].events = POLLIN;
		owner[npf++] = v[i]->perf;
	}
	if (!npf) {
		free(pf);
		free(owner);
		struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
				      (long)(deadline_ns % 1000000000ull)};
		/* EINTR (Ctrl-C) returns early. */
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		return;
	}
	for (;;) {
		uint64_t now = sd_now_ns();
		if (now >= deadline_ns)
			break;
		uint64_t left = deadline_ns - now;
		struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
		int r = ppoll(pf, npf, &ts, NULL);
		if (r < 0)
			break; /* a signal: the caller decides */
		if (r == 0)
			continue;
		for (size_t i = 0; i < npf; i++) {
			if (pf[i].revents)
				perf_drain_ready(owner[i]);
			pf[i].revents = 0;
		}
	}
	free(pf);
	free(owner);
}

void sampler_stats_add(const struct sd_sampler *s, struct sd_perf_stats *st)
{
	if (s->perf)
		perf_stats_add(s->perf, st);
}
