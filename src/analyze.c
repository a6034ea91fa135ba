// SPDX-License-Identifier: MIT
// Thread classification: what each thread is doing, from its state letter,
// the syscall it sits in and, for futex waits, lock analysis.
#include "analyze.h"

#include <string.h>

#include "locks.h"
#include "procfs.h"

#define NR_FUTEX 202
#define NR_RESTART 219

static void classify(struct sd_thread *th)
{
	struct sd_wait *w = &th->wait;
	memset(w, 0, sizeof(*w));
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
	case 'R':
		w->kind = th->running ? SD_WAIT_RUNNING : SD_WAIT_RUNNABLE;
		return;
	default:
		break;
	}
	if (th->running) {
		w->kind = SD_WAIT_RUNNING;
		return;
	}
	if (th->syscall_nr == NR_FUTEX || th->syscall_nr == NR_RESTART) {
		w->kind = SD_WAIT_FUTEX;
		w->address = th->syscall_args[0];
		return;
	}
	w->kind = th->syscall_nr >= 0 ? SD_WAIT_SYSCALL : SD_WAIT_NONE;
}

void analyze_snapshot(struct sd_target *t, struct sd_snapshot *s)
{
	for (size_t i = 0; i < s->nthreads; i++)
		classify(&s->threads[i]);
	locks_analyze(t, s);
}

const char *analyze_state_text(const struct sd_thread *th)
{
	switch (th->wait.kind) {
	case SD_WAIT_RUNNING: return "running";
	case SD_WAIT_RUNNABLE: return "runnable";
	case SD_WAIT_DISK: return "uninterruptible";
	case SD_WAIT_STOPPED: return "stopped";
	case SD_WAIT_ZOMBIE: return "zombie";
	default: break;
	}
	if (th->syscall_nr >= 0) {
		const char *n = procfs_syscall_name(th->syscall_nr);
		return n ? n : "syscall";
	}
	return "";
}
