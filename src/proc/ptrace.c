// SPDX-License-Identifier: MIT
// The freeze and thaw stages. SEIZE queues no signal, so if we die the
// kernel detaches and the target runs on; every wait here is bounded.
#include "ptrace.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"

/* The freeze in progress, for ptrace_emergency_thaw(). */
static struct sd_freeze *volatile current_freeze;
static struct sd_tracee *volatile current_one;

/* Tracees interrupted but not stopped when we gave up waiting. */
static pid_t *stragglers;
static size_t nstragglers, capstragglers;

static void add_straggler(pid_t tid)
{
	sd_grow(&stragglers, &capstragglers, nstragglers + 1, sizeof(*stragglers));
	stragglers[nstragglers++] = tid;
}

int ptrace_is_straggler(pid_t tid)
{
	for (size_t i = 0; i < nstragglers; i++)
		if (stragglers[i] == tid)
			return 1;
	return 0;
}

/* Is TID traced by us (a tracee of an earlier freeze we lost track of)? */
static int traced_by_us(pid_t tid)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (sd_read_file(path, &text, 1 << 16) < 0)
		return 0;
	const char *p = strstr(text, "TracerPid:");
	long tracer = p ? strtol(p + 10, NULL, 10) : 0;
	free(text);
	return tracer == (long)getpid();
}

void ptrace_boost_begin(struct sd_boost *b)
{
	memset(b, 0, sizeof(*b));
	/* SCHED_FIFO at the lowest real-time priority runs us before every
	 * normal thread, however many spin: the freeze is short and sleeps
	 * in waitid, so it cannot starve the machine. Without the
	 * privilege, the best nice value we may take; else nothing. */
	b->policy = sched_getscheduler(0);
	if (b->policy == SCHED_OTHER || b->policy == SCHED_BATCH) {
		b->saved_param.sched_priority = 0;
		struct sched_param sp = {.sched_priority = 1};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
			b->how = 1;
			return;
		}
	}
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && nice_now > -20 && setpriority(PRIO_PROCESS, 0, -20) == 0) {
		b->nice = nice_now;
		b->how = 2;
	}
}

void ptrace_boost_nice(struct sd_boost *b, int nice)
{
	memset(b, 0, sizeof(*b));
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && nice_now > nice && setpriority(PRIO_PROCESS, 0, nice) == 0) {
		b->nice = nice_now;
		b->how = 2;
	}
}

void ptrace_boost_end(struct sd_boost *b)
{
	if (b->how == 1)
		sched_setscheduler(0, b->policy, &b->saved_param);
	else if (b->how == 2)
		setpriority(PRIO_PROCESS, 0, b->nice);
	b->how = 0;
}

size_t ptrace_reap_stragglers(void)
{
	size_t keep = 0;
	for (size_t i = 0; i < nstragglers; i++) {
		pid_t tid = stragglers[i];
		int st;
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);
		if (r == tid) {
			if (WIFSTOPPED(st)) {
				int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
				ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
			}
			continue;
		}
		if (r < 0 && errno == ECHILD)
			continue; /* gone, or no longer ours */
		stragglers[keep++] = tid;
	}
	nstragglers = keep;
	return keep;
}

int ptrace_explain_seize(pid_t pid, int e, struct sd_error *err)
{
	struct sd_procinfo pi;
	if (e == ESRCH) {
		if (procfs_procinfo(pid, &pi, NULL) < 0)
			return sd_error_set(err, ESRCH, "no such process: %d", (int)pid);
		procfs_procinfo_release(&pi);
		return sd_error_set(err, ESRCH, "cannot attach to %d: it exited", (int)pid);
	}
	if (e == EPERM) {
		if (procfs_procinfo(pid, &pi, NULL) == 0) {
			if (pi.tracer > 0) {
				sd_error_set(err, EBUSY,
					     "cannot attach to %d: already traced by %d \"%s\" "
					     "(detach that debugger first)",
					     (int)pid, (int)pi.tracer, pi.tracer_comm);
				procfs_procinfo_release(&pi);
				return -EBUSY;
			}
			procfs_procinfo_release(&pi);
		}
		/* The Yama hint only where Yama is: elsewhere it sends the
		 * user after a setting that does not exist. */
		char *scope = NULL, hint[96] = "";
		if (sd_read_file("/proc/sys/kernel/yama/ptrace_scope", &scope, 32) >= 0) {
			long v = strtol(scope, NULL, 10);
			if (v > 0)
				snprintf(hint, sizeof(hint),
					 "; kernel.yama.ptrace_scope is %ld, 0 lets owners trace", v);
			free(scope);
		}
		return sd_error_set(err, EPERM,
				    "cannot attach to %d: operation not permitted (run as root or "
				    "the process owner with CAP_SYS_PTRACE%s)",
				    (int)pid, hint);
	}
	return sd_error_set(err, e, "cannot attach to %d: %s", (int)pid, sd_strerror(e));
}

static struct sd_tracee *find_tracee(struct sd_freeze *fz, pid_t tid)
{
	for (size_t i = 0; i < fz->n; i++)
		if (fz->v[i].tid == tid)
			return &fz->v[i];
	return NULL;
}

/* Called for each thread as it stops (the current freeze only). */
static void (*stop_cb)(struct sd_tracee *t, void *arg);
static void *stop_cb_arg;

/* Is TID of PID gone or exiting (no task entry, or state Z or X)? */
static int thread_exiting(pid_t pid, pid_t tid)
{
	struct sd_taskinfo ti;
	if (procfs_taskinfo_ex(pid, tid, &ti, 1) < 0)
		return 1;
	return ti.state == 'Z' || ti.state == 'X';
}

/* Record the stop described by wait status ST. */
static void note_stop(struct sd_tracee *t, int st)
{
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		t->state = SD_TRACEE_GONE;
		return;
	}
	if (!WIFSTOPPED(st))
		return;
	int event = st >> 16;
	int sig = WSTOPSIG(st);
	t->state = SD_TRACEE_STOPPED;
	t->stop_ns = sd_now_ns();
	if (event == PTRACE_EVENT_STOP) {
		/* Interrupt stop (SIGTRAP) or a job-control group stop. */
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			t->group_stop = 1;
	} else if (event == 0) {
		/* A signal arrived while we traced: it must be delivered. */
		t->inject_sig = sig;
	}
	if (stop_cb)
		stop_cb(t, stop_cb_arg);
}

static int seize_interrupt(struct sd_tracee *t)
{
	if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) < 0) {
		t->err = errno;
		t->state = errno == ESRCH ? SD_TRACEE_GONE : SD_TRACEE_FAILED;
		return -t->err;
	}
	t->state = SD_TRACEE_SEIZED;
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0) {
		/* Seized but gone already: the kernel cleans up. */
		t->err = errno;
		t->state = SD_TRACEE_GONE;
		return -t->err;
	}
	return 0;
}

static int cmp_tracee_tid(const void *a, const void *b)
{
	pid_t x = (*(struct sd_tracee *const *)a)->tid, y = (*(struct sd_tracee *const *)b)->tid;
	return (x > y) - (x < y);
}

/* One pass of WNOHANG waits over every pending tracee: finds those that
 * stopped and those gone without a word (reaped by their parent). */
static void poll_each(struct sd_tracee *v, size_t n, size_t *pending)
{
	for (size_t k = 0; k < n && *pending; k++) {
		struct sd_tracee *t = &v[k];
		if (t->state != SD_TRACEE_SEIZED)
			continue;
		int st;
		pid_t r = waitpid(t->tid, &st, __WALL | WNOHANG);
		if (r == t->tid) {
			note_stop(t, st);
			(*pending)--;
		} else if (r < 0 && errno == ECHILD) {
			t->state = SD_TRACEE_GONE;
			(*pending)--;
		}
	}
}

/* The waitpid status word for what waitid reported in SI. */
static int status_of(const siginfo_t *si)
{
	switch (si->si_code) {
	case CLD_EXITED: return (si->si_status & 0xff) << 8;
	case CLD_KILLED: return si->si_status & 0x7f;
	case CLD_DUMPED: return (si->si_status & 0x7f) | 0x80;
	case CLD_TRAPPED:
	case CLD_STOPPED:
		/* For ptrace stops si_status is the whole stop code: the
		 * signal, and a PTRACE_EVENT in the bits above it. */
		return (si->si_status << 8) | 0x7f;
	default: return 0;
	}
}

/* Wait until every SEIZED tracee in V[0..N) stopped or exited, or the
 * deadline passed. Stops are collected in the order they happen: one
 * waitid on any child reaps whichever tracee is ready, so each stop costs
 * one call; between bursts we sleep in sigtimedwait on SIGCHLD, which
 * every ptrace stop sends us, so no time is lost polling. stackdump has no
 * child processes of its own while it freezes (the shell's "!" waits for
 * its command), so every status reaped here is a tracee's; one that is not
 * in V (a tracee of an earlier freeze, already detached) is dropped. */
static void wait_stops(struct sd_tracee *v, size_t n, uint64_t deadline)
{
	size_t pending = 0;
	for (size_t i = 0; i < n; i++)
		pending += v[i].state == SD_TRACEE_SEIZED;
	if (!pending)
		return;
	struct sd_tracee **idx = sd_xmalloc(n * sizeof(*idx));
	for (size_t i = 0; i < n; i++)
		idx[i] = &v[i];
	sd_sort(idx, n, sizeof(*idx), cmp_tracee_tid);
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	int quiet = 0; /* no SIGCHLD came for a while */
	while (pending) {
		int stale = 0;
		for (;;) {
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOHANG | __WALL) < 0) {
				if (errno == ECHILD)
					quiet = 1; /* none left: all gone */
				break;
			}
			if (si.si_pid == 0)
				break;
			struct sd_tracee key = {.tid = si.si_pid}, *kp = &key;
			struct sd_tracee **hit = bsearch(&kp, idx, n, sizeof(*idx), cmp_tracee_tid);
			if (!hit || (*hit)->state != SD_TRACEE_SEIZED) {
				/* Not one we wait for: a straggler of an
				 * earlier freeze stopping late. Detach it. */
				int st = status_of(&si);
				if (WIFSTOPPED(st))
					ptrace(PTRACE_DETACH, si.si_pid, 0,
					       (void *)(long)((st >> 16) == 0 ? WSTOPSIG(st) : 0));
				stale = 1;
				continue;
			}
			note_stop(*hit, status_of(&si));
			pending--;
		}
		if (stale)
			ptrace_reap_stragglers();
		if (quiet) {
			/* A tracee reaped by its parent (or gone with its
			 * process) reports nothing: ask after each one. */
			poll_each(v, n, &pending);
			quiet = 0;
		}
		if (!pending)
			break;
		uint64_t now = sd_now_ns();
		if (now > deadline)
			break;
		uint64_t wait = deadline - now;
		if (wait > 10000000)
			wait = 10000000;
		struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
		if (sigtimedwait(&chld, NULL, &ts) < 0)
			quiet = 1;
	}
	/* Leave no SIGCHLD of ours pending for the caller. */
	struct timespec zero = {0, 0};
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(idx);
}

int ptrace_freeze_all(struct sd_freeze *fz, pid_t pid, unsigned timeout_ms,
		      const pid_t *known, size_t nknown, int rescan,
		      int (*want)(pid_t tid, void *arg), void *want_arg,
		      void (*on_stop)(struct sd_tracee *t, void *arg), void *stop_arg,
		      struct sd_error *err)
{
	memset(fz, 0, sizeof(*fz));
	fz->pid = pid;
	ptrace_reap_stragglers();
	current_freeze = fz;
	fz->start_ns = sd_now_ns();
	uint64_t deadline = fz->start_ns + (uint64_t)timeout_ms * 1000000ull;
	int first_err = 0;
	size_t nseized = 0;
	/* Rescan until a pass finds no new thread: once every known thread
	 * is stopped none can create another. */
	for (int pass = 0; pass < 64; pass++) {
		pid_t *tids;
		size_t ntids;
		if (pass > 0 && known && !rescan)
			break;
		if (pass == 0 && known && nknown) {
			/* The caller's fresh listing: the next pass lists
			 * again for threads born since. */
			tids = sd_xmalloc(nknown * sizeof(*tids));
			memcpy(tids, known, nknown * sizeof(*tids));
			ntids = nknown;
		} else if (procfs_list_tids(pid, &tids, &ntids, pass ? NULL : err) < 0) {
			if (pass == 0) {
				current_freeze = NULL;
				return -ESRCH;
			}
			break;
		}
		size_t added = 0;
		for (size_t i = 0; i < ntids; i++) {
			if (find_tracee(fz, tids[i]) || (want && !want(tids[i], want_arg)))
				continue;
			/* Still ours from an earlier freeze (it had not
			 * stopped in time): not seized again, not a failure. */
			if (ptrace_is_straggler(tids[i]))
				continue;
			sd_grow(&fz->v, &fz->cap, fz->n + 1, sizeof(*fz->v));
			struct sd_tracee *t = &fz->v[fz->n++];
			memset(t, 0, sizeof(*t));
			t->tid = tids[i];
			int r = seize_interrupt(t);
			if (r < 0 && t->state == SD_TRACEE_FAILED) {
				/* A thread that is exiting refuses PTRACE_SEIZE with
				 * EPERM, like one we may not trace. Once another
				 * thread was seized, permission is not the problem:
				 * the thread is on its way out. */
				if (r == -EPERM && thread_exiting(pid, t->tid))
					t->state = SD_TRACEE_GONE;
				else if (r == -EPERM && traced_by_us(t->tid))
					t->state = SD_TRACEE_OURS;
				else if (!first_err && !nseized)
					first_err = -r;
				/* else: this one thread stays FAILED, the
				 * snapshot stands for the others */
			}
			if (r == 0) {
				added++;
				nseized++;
			}
		}
		free(tids);
		if (first_err)
			break;
		if (!added)
			break;
	}
	if (first_err) {
		ptrace_thaw_all(fz);
		current_freeze = NULL;
		return ptrace_explain_seize(pid, first_err, err);
	}
	stop_cb = on_stop;
	stop_cb_arg = stop_arg;
	fz->seized_ns = sd_now_ns();
	wait_stops(fz->v, fz->n, deadline);
	fz->stopped_ns = sd_now_ns();
	stop_cb = NULL;
	stop_cb_arg = NULL;
	size_t stopped = 0;
	for (size_t i = 0; i < fz->n; i++)
		stopped += fz->v[i].state == SD_TRACEE_STOPPED;
	if (!stopped) {
		ptrace_thaw_all(fz);
		current_freeze = NULL;
		struct sd_procinfo pi = {0};
		if (fz->n == 0 || procfs_procinfo(pid, &pi, NULL) < 0)
			return sd_error_set(err, ESRCH, "cannot attach to %d: it exited", (int)pid);
		procfs_procinfo_release(&pi);
		return sd_error_set(err, ETIMEDOUT,
				    "no thread of %d stopped within %u ms (all in "
				    "uninterruptible sleep?)",
				    (int)pid, timeout_ms);
	}
	return 0;
}

int ptrace_freeze_one(struct sd_tracee *t, unsigned timeout_ms, struct sd_error *err)
{
	current_one = t;
	uint64_t deadline = sd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r = seize_interrupt(t);
	if (r < 0) {
		current_one = NULL;
		/* An exiting thread refuses the seize with EPERM. */
		if (t->state == SD_TRACEE_GONE ||
		    (r == -EPERM && thread_exiting(t->tid, t->tid))) {
			t->state = SD_TRACEE_GONE;
			return sd_error_set(err, ESRCH, "thread %d exited", (int)t->tid);
		}
		return ptrace_explain_seize(t->tid, -r, err);
	}
	wait_stops(t, 1, deadline);
	if (t->state == SD_TRACEE_STOPPED)
		return 0;
	ptrace_thaw_one(t);
	current_one = NULL;
	if (t->state == SD_TRACEE_GONE)
		return sd_error_set(err, ESRCH, "thread %d exited", (int)t->tid);
	return sd_error_set(err, ETIMEDOUT, "thread %d did not stop within %u ms",
			    (int)t->tid, timeout_ms);
}

int ptrace_wait_straggler(struct sd_tracee *t, unsigned timeout_ms)
{
	size_t i;
	for (i = 0; i < nstragglers && stragglers[i] != t->tid; i++)
		;
	if (i == nstragglers)
		return -ESRCH;
	memset(t, 0, sizeof(*t));
	t->tid = stragglers[i];
	t->state = SD_TRACEE_SEIZED;
	wait_stops(t, 1, sd_now_ns() + (uint64_t)timeout_ms * 1000000ull);
	if (t->state == SD_TRACEE_SEIZED)
		return -ETIMEDOUT; /* still a straggler */
	/* Stopped or gone: no longer waited for between commands. */
	stragglers[i] = stragglers[--nstragglers];
	if (t->state != SD_TRACEE_STOPPED)
		return -ESRCH;
	current_one = t;
	return 0;
}

void ptrace_thaw_one(struct sd_tracee *t)
{
	switch (t->state) {
	case SD_TRACEE_STOPPED:
		/* A group-stopped tracee goes back to its job-control stop on
		 * detach: a process stopped before we came stays stopped. */
		if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->inject_sig) < 0 &&
		    errno != ESRCH)
			add_straggler(t->tid);
		t->detach_ns = sd_now_ns();
		t->state = SD_TRACEE_DETACHED;
		break;
	case SD_TRACEE_SEIZED:
		/* Interrupted but not stopped yet: it will stop soon and must
		 * then be detached. Try once more now. */
		{
			int st;
			if (waitpid(t->tid, &st, __WALL | WNOHANG) == t->tid) {
				note_stop(t, st);
				if (t->state == SD_TRACEE_STOPPED) {
					ptrace_thaw_one(t);
					return;
				}
			} else {
				add_straggler(t->tid);
			}
		}
		t->state = SD_TRACEE_DETACHED;
		break;
	default:
		break;
	}
	if (current_one == t)
		current_one = NULL;
}

void ptrace_thaw_all(struct sd_freeze *fz)
{
	for (size_t i = 0; i < fz->n; i++)
		ptrace_thaw_one(&fz->v[i]);
	fz->end_ns = sd_now_ns();
	if (current_freeze == fz)
		current_freeze = NULL;
}

void ptrace_freeze_release(struct sd_freeze *fz)
{
	if (current_freeze == fz)
		current_freeze = NULL;
	free(fz->v);
	fz->v = NULL;
	fz->n = fz->cap = 0;
}

void ptrace_emergency_thaw(void)
{
	struct sd_freeze *fz = current_freeze;
	if (fz) {
		for (size_t i = 0; i < fz->n; i++) {
			struct sd_tracee *t = &fz->v[i];
			if (t->state == SD_TRACEE_STOPPED)
				ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->inject_sig);
		}
	}
	struct sd_tracee *t = current_one;
	if (t && t->state == SD_TRACEE_STOPPED)
		ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->inject_sig);
}
