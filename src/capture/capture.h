// SPDX-License-Identifier: MIT
// The capture stage: while a thread is stopped, copy its registers, a
// window of its stack, and the lock words lock analysis needs. Nothing else.
#ifndef SD_CAPTURE_H
#define SD_CAPTURE_H

#include "procfs.h"
#include "snapshot.h"

/* Capture registers, the stack window [sp, min(end of sp's mapping,
 * sp + MAX_STACK)) and lock memory of the stopped thread T of PID. Returns
 * 0, or a negative errno when the registers could not be read (the thread
 * exited). Bytes copied are added to *BYTES. */
int capture_thread(pid_t pid, struct sd_thread *t, const struct sd_maps *maps,
		   size_t max_stack, uint64_t *bytes);

/* The two halves of capture_thread, for the all-thread freeze: read the
 * registers of a stopped thread and plan its memory reads (stack window,
 * lock words); then, still frozen, read the memory of N planned threads in
 * as few process_vm_readv calls as possible, into SNAP's prefaulted arena
 * when it has room (SNAP may be NULL: heap buffers). */
int capture_regs(struct sd_thread *t, const struct sd_maps *maps, size_t max_stack);
/* Plan the memory reads of T (stack window, lock words) from the
 * registers it holds, without a system call. */
void capture_plan(struct sd_thread *t, const struct sd_maps *maps, size_t max_stack);
/* Registers of a thread asleep in the kernel, without stopping it: SP,
 * PC, the syscall number and its six arguments from TI (its
 * /proc/TID/syscall); the callee-saved registers stay unknown (T gets
 * regs_partial). Follow with capture_plan(). */
void capture_regs_from_syscall(struct sd_thread *t, const struct sd_taskinfo *ti);
void capture_memory(pid_t pid, struct sd_snapshot *snap, struct sd_thread **threads, size_t n,
		    uint64_t *bytes);

/* The same from another source of the process's memory (a core file):
 * READ(ARG, ADDR, BUF, LEN) copies what it has at ADDR and returns the
 * count (short or 0 where it has less), once per planned read. */
typedef ssize_t (*capture_reader)(void *arg, uint64_t addr, void *buf, size_t len);
void capture_memory_from(capture_reader read, void *arg, struct sd_snapshot *snap,
			 struct sd_thread **threads, size_t n, uint64_t *bytes);

/* Hold the planned stack windows of the N THREADS (capture_regs) to TOTAL
 * bytes together: when they want more, the largest are cut to an even
 * share of what the smaller ones leave, and marked stack_truncated and
 * stack_cut. LATER threads still to be copied in later batches, each
 * assumed to want LATER_WANT, keep their share of TOTAL. Returns how many
 * were cut. Runs while frozen: no system call, O(N log N). */
size_t capture_budget(struct sd_thread **threads, size_t n, size_t total, size_t later,
		      size_t later_want);

/* Read LEN bytes at ADDR of PID into BUF; returns bytes read (may be
 * short) or a negative errno. */
ssize_t capture_read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
