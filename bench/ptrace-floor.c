// SPDX-License-Identifier: MIT
// Floor cost of stop-the-world ptrace sampling: at RATE Hz, stop every thread
// of a process, read its registers and let it go again, with nothing else
// (no unwinding, no /proc reads beyond the task list), so a profiler's cost
// can be compared with what the ptrace stops alone cost.  Default mode keeps
// every thread seized between samples; --reattach seizes and detaches every
// thread on every sample, as a one-shot tool run in a loop would.
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSEC 1000000000LL
#define STOP_WAIT_NS (2 * NSEC)

struct thr {
	pid_t tid;    /* 0: slot unused */
	char seized;  /* we trace it */
	char want;    /* interrupted in this burst, stop not yet seen */
	char stopped; /* in a ptrace-stop we have not resumed */
	char group;   /* that stop is a group-stop: LISTEN, not CONT */
	char dead;    /* zombie or not traceable: skip */
	char listed;  /* seen in the last /proc listing */
	int sig;      /* signal to hand back when resuming */
};

static struct thr *thr;
static int nthr, cap;
static pid_t target;
static int reattach, detaching, pending, no_tracees, seize_errno;
static sigset_t chld_set;
static volatile sig_atomic_t quit;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC + ts.tv_nsec;
}

static void on_quit(int sig)
{
	(void)sig;
	quit = 1;
}

static struct thr *find(pid_t tid)
{
	for (int i = 0; i < nthr; i++)
		if (thr[i].tid == tid)
			return &thr[i];
	return NULL;
}

static struct thr *add(pid_t tid)
{
	if (nthr == cap) {
		cap = cap ? cap * 2 : 256;
		thr = realloc(thr, cap * sizeof(*thr));
		if (!thr) {
			fprintf(stderr, "ptrace-floor: out of memory\n");
			exit(1);
		}
	}
	memset(&thr[nthr], 0, sizeof(thr[0]));
	thr[nthr].tid = tid;
	return &thr[nthr++];
}

/* Re-read /proc/PID/task; returns -1 if the process is gone. */
static int relist(void)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)target);
	d = opendir(path);
	if (!d)
		return -1;
	for (int i = 0; i < nthr; i++)
		thr[i].listed = 0;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		struct thr *t;

		if (tid > 0) {
			t = find(tid);
			(t ? t : add(tid))->listed = 1;
		}
	}
	closedir(d);
	/* drop gone slots; threads we trace stay until they are reaped */
	for (int i = 0; i < nthr; i++)
		if (thr[i].tid && (thr[i].seized || thr[i].listed))
			thr[n++] = thr[i];
	nthr = n;
	return 0;
}

/* Let a stopped thread go, handing back any signal it was stopped for. */
static void resume(struct thr *t)
{
	long r;

	if (reattach || detaching) {
		r = ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->sig);
		if (r == 0 || errno == ESRCH)
			t->seized = 0;
	} else if (t->group) {
		r = ptrace(PTRACE_LISTEN, t->tid, 0, 0);
	} else {
		r = ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)t->sig);
	}
	if (r < 0 && errno != ESRCH)
		fprintf(stderr, "ptrace-floor: resuming %d: %s\n", (int)t->tid, strerror(errno));
	t->stopped = 0;
	t->group = 0;
	t->sig = 0;
}

/*
 * Collect every pending child event without blocking.  A stop we asked for
 * (want) is kept for the caller; any other stop is a signal or a late
 * interrupt and is resumed at once, so the target never stays stopped.
 */
static void pump(void)
{
	for (;;) {
		siginfo_t si;
		struct thr *t;

		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WSTOPPED | WEXITED | __WALL | WNOHANG)) {
			if (errno == EINTR)
				continue;
			no_tracees = 1;
			return;
		}
		if (si.si_pid == 0)
			return;
		t = find(si.si_pid);
		if (!t)
			continue;
		if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
		    si.si_code == CLD_DUMPED) {
			if (t->want)
				pending--;
			t->want = t->stopped = t->seized = 0;
			t->tid = 0;
			continue;
		}
		/* waitid's si_status is (event << 8) | signal for ptrace stops */
		int event = si.si_status >> 8, sig = si.si_status & 0xff;

		t->stopped = 1;
		t->group = event == PTRACE_EVENT_STOP &&
			   (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU);
		t->sig = event == 0 ? sig : 0; /* signal-delivery-stop */
		if (t->want)
			pending--;
		else
			resume(t);
	}
}

/* A thread that did not stop in time: skip it from now on if a zombie. */
static void check_stuck(struct thr *t)
{
	char path[64], buf[512] = "", *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)target, (int)t->tid);
	f = fopen(path, "r");
	if (f) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
		fclose(f);
	}
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		t->dead = 1;
	else
		fprintf(stderr, "ptrace-floor: thread %d did not stop within 2 s\n", (int)t->tid);
}

/*
 * Block on SIGCHLD until @until, handling child events as they come.  In a
 * burst, return once every interrupted thread has stopped or exited;
 * otherwise return early only on SIGINT/SIGTERM.
 */
static void wait_until(long long until, int burst)
{
	for (;;) {
		long long left;
		struct timespec ts;

		pump();
		if (burst ? pending <= 0 || no_tracees : quit)
			return;
		left = until - now_ns();
		if (left <= 0)
			break;
		ts.tv_sec = left / NSEC;
		ts.tv_nsec = left % NSEC;
		sigtimedwait(&chld_set, NULL, &ts);
	}
	for (int i = 0; burst && i < nthr; i++)
		if (thr[i].tid && thr[i].want && !thr[i].stopped)
			check_stuck(&thr[i]);
}

/* Interrupt every traced thread and wait for the stops. */
static void interrupt_all(void)
{
	pending = 0;
	no_tracees = 0;
	for (int i = 0; i < nthr; i++) {
		struct thr *t = &thr[i];

		t->want = 0;
		if (!t->tid || !t->seized || t->dead)
			continue;
		if (t->stopped || ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0) {
			t->want = 1;
			pending += !t->stopped;
		} else if (errno == ESRCH) {
			t->seized = 0; /* exiting; pump() reaps it */
		}
	}
	wait_until(now_ns() + STOP_WAIT_NS, 1);
}

/* One sample: returns the number of threads whose registers were read. */
static int sample(void)
{
	unsigned long long regs[128];
	struct iovec iov;
	int n = 0;

	if (relist() < 0)
		return -1;
	for (int i = 0; i < nthr; i++) {
		struct thr *t = &thr[i];

		if (t->seized || t->dead || !t->listed)
			continue;
		if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) == 0) {
			t->seized = 1;
		} else if (errno != ESRCH) {
			seize_errno = errno;
			t->dead = 1;
		}
	}
	interrupt_all();
	for (int i = 0; i < nthr; i++) {
		struct thr *t = &thr[i];

		if (!t->tid || !t->want)
			continue;
		t->want = 0; /* a late stop is then resumed by pump() */
		if (!t->stopped)
			continue;
		iov.iov_base = regs;
		iov.iov_len = sizeof(regs);
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) == 0)
			n++;
		resume(t);
	}
	return n;
}

/* A number in (lo, hi], or -1. */
static double num(const char *s, double lo, double hi)
{
	char *e;
	double v = strtod(s, &e);

	return *s && !*e && v > lo && v <= hi ? v : -1;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"reattach", no_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0},
	};
	double pid = -1, rate = 20, secs = 10;
	long long start, end, period, next;
	int opt, bad = 0, samples = 0, maxthr = 0;
	struct sigaction sa;
	struct rusage ru;
	const char *hint = " (need root or kernel.yama.ptrace_scope=0; already traced?)";

	while ((opt = getopt_long(argc, argv, "p:r:d:", lopts, NULL)) != -1) {
		if (opt == 'p')
			pid = num(optarg, 0, 1 << 30);
		else if (opt == 'r')
			rate = num(optarg, 0, 10000);
		else if (opt == 'd')
			secs = num(optarg, 0, 86400);
		else if (opt == 'R')
			reattach = 1;
		else
			bad = 1;
	}
	target = (pid_t)pid;
	if (bad || optind != argc || pid != target || target <= 0 || rate < 0 || secs < 0) {
		fprintf(stderr,
			"usage: ptrace-floor -p PID [-r RATE_HZ] [-d SECONDS] [--reattach]\n"
			"  PID > 0, 0 < RATE_HZ <= 10000 (default 20), 0 < SECONDS <= 86400 "
			"(default 10)\n");
		return 1;
	}

	sigemptyset(&chld_set);
	sigaddset(&chld_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld_set, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit; /* no SA_RESTART: waits return EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (relist() < 0 || !nthr) {
		fprintf(stderr, "ptrace-floor: no process %d (cannot read /proc/%d/task)\n",
			(int)target, (int)target);
		return 1;
	}
	period = (long long)(NSEC / rate);
	start = now_ns();
	end = start + (long long)(secs * NSEC);
	next = start;
	while (!quit) {
		int n;

		wait_until(next, 0);
		if (quit || now_ns() >= end)
			break;
		n = sample();
		if (n < 0) {
			fprintf(stderr, "ptrace-floor: process %d is gone\n", (int)target);
			break;
		}
		if (n == 0 && samples == 0 && seize_errno) {
			fprintf(stderr, "ptrace-floor: cannot attach to %d: %s%s\n", (int)target,
				strerror(seize_errno), seize_errno == EPERM ? hint : "");
			quit = 2;
			break;
		}
		samples++;
		if (n > maxthr)
			maxthr = n;
		next += period;
		if (next <= now_ns())
			next += ((now_ns() - next) / period + 1) * period;
	}
	end = now_ns();

	/* Stop whatever we still trace and detach it, handing signals back. */
	detaching = 1;
	interrupt_all();
	for (int i = 0; i < nthr; i++) {
		if (thr[i].tid && thr[i].seized && thr[i].stopped)
			resume(&thr[i]);
		if (thr[i].tid && thr[i].seized)
			fprintf(stderr,
				"ptrace-floor: thread %d not detached cleanly (the kernel detaches "
				"it when we exit)\n",
				(int)thr[i].tid);
	}
	if (quit == 2)
		return 1;

	getrusage(RUSAGE_SELF, &ru);
	printf("samples %d threads %d rate_achieved %.2f cpu_user_s %.3f cpu_sys_s %.3f\n", samples,
	       maxthr, samples * (double)NSEC / (end - start),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
