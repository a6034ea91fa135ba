// SPDX-License-Identifier: MIT
// Thread classification: what each thread is doing, from its state letter,
// the syscall it sits in (registers while frozen, else /proc) and, for
// futex waits, lock analysis.
#include "analyze.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "locks.h"
#include "procfs.h"
#include "symbols.h"

/* What rax holds while a thread is stopped inside a blocking syscall that
 * the kernel will restart: the syscall has not returned. Anything else
 * (0, -ETIMEDOUT, -EAGAIN...) means the wait already ended and the thread
 * was caught on its way back to user space. */
static int syscall_pending(const struct sd_thread *th)
{
	long rax = (long)th->regs.rax;
	return rax == -512 /* ERESTARTSYS */ || rax == -513 /* ERESTARTNOINTR */ ||
	       rax == -514 /* ERESTARTNOHAND */ || rax == -516 /* ERESTART_RESTARTBLOCK */ ||
	       rax == -4 /* EINTR: epoll_wait, sigtimedwait... interrupted by our stop */ ||
	       rax == -38 /* ENOSYS: stopped at syscall entry */;
}

int analyze_in_syscall(const struct sd_thread *th)
{
	return th->have_regs && (long)th->regs.orig_rax >= 0 && syscall_pending(th);
}

/* A restart_syscall is the continuation of an interrupted timed
 * wait: futex, but also clock_nanosleep or poll. The original arguments
 * are still in the registers; take it for a futex wait only when they read
 * as one (an aligned address, a wait operation) and wchan does not name
 * another wait. */
static int restart_is_futex(const struct sd_thread *th)
{
	uint64_t uaddr = th->syscall_args[0];
	unsigned op = (unsigned)th->syscall_args[1];
	unsigned cmd = op & 0x7f;
	if (!uaddr || (uaddr & 3) || (op & ~0x1ffu))
		return 0;
	if (cmd != 0 && cmd != 9 && cmd != 6 && cmd != 13 && cmd != 11)
		return 0;
	const char *wc = th->wchan;
	if (wc && *wc && !strstr(wc, "futex") && !strstr(wc, "rt_mutex") &&
	    strcmp(wc, "do_syscall_64"))
		return 0;
	return 1;
}

static void classify(struct sd_thread *th)
{
	struct sd_wait *w = &th->wait;
	memset(w, 0, sizeof(*w));
	th->stack_state = 0;
	if (th->status != SD_THREAD_OK && !th->syscall_known && !th->have_regs)
		return;
	switch (th->state) {
	case 'Z':
	case 'X':
		w->kind = SD_WAIT_ZOMBIE;
		return;
	case 'T':
	case 't':
		w->kind = SD_WAIT_STOPPED;
		return;
	case 'D':
		w->kind = SD_WAIT_DISK;
		return;
	default:
		break;
	}
	/* The registers were read while frozen, after the state letter: a
	 * thread seen running may have blocked since, and the reverse. */
	int in_syscall = th->syscall_nr >= 0 && !th->running;
	if (th->have_regs) {
		in_syscall = (long)th->regs.orig_rax >= 0 && syscall_pending(th);
		/* Asleep when /proc was read, out of the system call in the
		 * registers (read later: frozen, or stopped once for them):
		 * the stack is of that later instant; the header says so. */
		if (!th->regs_partial && th->state == 'S' && !in_syscall)
			th->stack_state = 'R';
		if ((long)th->regs.orig_rax >= 0 && !in_syscall &&
		    (th->syscall_nr == SYS_futex || th->syscall_nr == SYS_restart_syscall)) {
			/* Woken (or timed out) just before the freeze. */
			w->kind = SD_WAIT_RUNNABLE;
			w->note = "futex wait just returned";
			return;
		}
	}
	if (!in_syscall) {
		/* In user space: on a CPU or waiting for one. Without
		 * registers, S outside a syscall stays unclassified. */
		if (th->state == 'R' && !th->running)
			w->kind = SD_WAIT_RUNNABLE;
		else if (th->state == 'R' || th->running || th->have_regs)
			w->kind = SD_WAIT_RUNNING;
		return;
	}
	if (th->syscall_nr == SYS_futex ||
	    (th->syscall_nr == SYS_restart_syscall && restart_is_futex(th))) {
		w->kind = SD_WAIT_FUTEX;
		w->address = th->syscall_args[0];
		return;
	}
	w->kind = SD_WAIT_SYSCALL;
}

void analyze_snapshot(pid_t pid, struct sd_symbols *sym, struct sd_snapshot *s)
{
	/* Owners inferred from stacks that a loaded snapshot no longer has:
	 * kept from when it was taken. */
	struct sd_wait *inferred = NULL;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		if (!th->stack && th->wait.owner_known &&
		    th->wait.owner_evidence == SD_EVIDENCE_STACK) {
			if (!inferred)
				inferred = sd_xcalloc(s->nthreads, sizeof(*inferred));
			inferred[i] = th->wait;
		}
		/* A loaded snapshot may carry waits classified when it was
		 * taken, without the evidence to redo it: keep those. */
		if (!th->syscall_known && !th->have_regs && th->wait.kind != SD_WAIT_NONE)
			continue;
		struct sd_wait old = th->wait;
		classify(th);
		/* A core's state and registers are of one instant. */
		if (s->core)
			th->stack_state = 0;
		if (th->wait.kind == SD_WAIT_FUTEX && !th->nlockmem && locks_is_wait(old.kind) &&
		    old.kind != SD_WAIT_FUTEX)
			th->wait = old;
	}
	locks_analyze(pid, sym, s);
	for (size_t i = 0; inferred && i < s->nthreads; i++) {
		struct sd_wait *w = &s->threads[i].wait, *o = &inferred[i];
		if (o->owner_known && !w->owner_known && w->address == o->address &&
		    w->kind == o->kind) {
			w->owner = o->owner;
			w->owner_known = 1;
			w->owner_evidence = SD_EVIDENCE_STACK;
			w->owner_frame = o->owner_frame;
			w->note = o->note;
		}
	}
	free(inferred);
}

const char *analyze_restart_name(const char *function)
{
	/* restart_syscall hides the interrupted wait; the libc wrapper it
	 * sits in names it (exported names need no debug info). Our own
	 * stop is what interrupted it, so it is shown as the wait it
	 * continues: a snapshot must not change the state it reports (nor
	 * split one state in two in a profile). */
	static const struct {
		const char *needle, *text;
	} restarted[] = {
		{"nanosleep", "clock_nanosleep"},
		{"epoll", "epoll_wait"},
		{"poll", "poll"},
		{"select", "pselect6"},
		{"futex", "futex"},
	};
	for (size_t i = 0; function && i < sizeof(restarted) / sizeof(restarted[0]); i++)
		if (strstr(function, restarted[i].needle))
			return restarted[i].text;
	return NULL;
}

const char *analyze_state_text(const struct sd_thread *th)
{
	switch (th->wait.kind) {
	case SD_WAIT_RUNNING: return "running";
	case SD_WAIT_RUNNABLE:
		return th->wait.note ? "runnable (futex wait just returned)" : "runnable";
	case SD_WAIT_DISK: return "uninterruptible";
	case SD_WAIT_STOPPED: return "stopped";
	case SD_WAIT_ZOMBIE: return "zombie";
	case SD_WAIT_NONE: return "";
	default: break;
	}
	if (th->syscall_nr == SYS_restart_syscall && th->nframes) {
		const char *r = analyze_restart_name(th->frames[0].function);
		if (r)
			return r;
	}
	if (th->syscall_nr >= 0) {
		const char *n = procfs_syscall_name(th->syscall_nr);
		return n ? n : "syscall";
	}
	return "";
}
