// SPDX-License-Identifier: MIT
// What the perf engine and the switch-record rings that prove samples'
// sleepers (procfs.c) both read: the x86_64 user registers perf_event_open
// samples (PERF_SAMPLE_REGS_USER) in their order, and bytes of a ring.
#ifndef SD_PERF_REGS_H
#define SD_PERF_REGS_H

#include <stdint.h>
#include <string.h>
#include <sys/user.h>

/* ax..ss (0-11) and r8-r15 (16-23). ds, es, fs and gs (12-15) are
 * refused on 64-bit kernels. */
#define PERF_REGS_MASK (((1ull << 12) - 1) | (0xffull << 16))
#define PERF_NREGS 20
/* A sample record of those registers alone: its header, the ABI word and
 * the registers. */
#define PERF_REGS_SAMPLE_SIZE (8 + 8 + PERF_NREGS * 8)

/* R from the PERF_NREGS values V of a sample, in the mask's order. The
 * system call number is not among them: orig_rax is -1. */
static inline void perf_regs_set(struct user_regs_struct *r, const uint64_t *v)
{
	memset(r, 0, sizeof(*r));
	r->rax = v[0];
	r->rbx = v[1];
	r->rcx = v[2];
	r->rdx = v[3];
	r->rsi = v[4];
	r->rdi = v[5];
	r->rbp = v[6];
	r->rsp = v[7];
	r->rip = v[8];
	r->eflags = v[9];
	r->cs = v[10];
	r->ss = v[11];
	r->r8 = v[12];
	r->r9 = v[13];
	r->r10 = v[14];
	r->r11 = v[15];
	r->r12 = v[16];
	r->r13 = v[17];
	r->r14 = v[18];
	r->r15 = v[19];
	r->orig_rax = (unsigned long long)-1;
}

/* Copy LEN bytes at offset OFF (any: taken modulo SIZE) of a ring's data
 * of SIZE bytes, across its end if need be. */
static inline void perf_ring_copy(void *dst, const uint8_t *data, uint64_t size, uint64_t off,
				  size_t len)
{
	off %= size;
	size_t first = off + len > size ? (size_t)(size - off) : len;
	memcpy(dst, data + off, first);
	if (first < len)
		memcpy((uint8_t *)dst + first, data, len - first);
}

#endif
