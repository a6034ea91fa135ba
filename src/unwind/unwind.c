// SPDX-License-Identifier: MIT
// The unwind stage: libunwind's remote API with accessors that read the
// captured stack window and local images of the target's ELF files. One
// exception reads the live process after the thaw: read_word's fallback for
// stack memory outside the copied window, counted in live_reads and shown.
#include "unwind.h"

#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "dwcfi.h"
#include "fpsite.h"
#include "space.h"
#include "unwind-code.h"
#include "unwind-mask.h"

/* Not in libunwind's public headers, but exported by libunwind-generic:
 * binary search of an .eh_frame_hdr table read through access_mem. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

struct sd_unwinder {
	struct sd_space *space;
	unw_addr_space_t as;
	/* Functions entered through a pushed return address (unwind.h,
	 * unwind_pushed_return): [lo, hi) pairs. */
	uint64_t (*pushed)[2];
	size_t npushed;
	/* Frame-pointer offsets at call sites, learned from unwinds with
	 * real registers (fpsite.h). */
	struct fpsites fp;
};

/* Is PC (a frame's pc, as looked up) in a function the code enters by
 * pushing the interrupted pc as its return address? */
static int in_pushed(const struct sd_unwinder *u, uint64_t pc)
{
	for (size_t i = 0; i < u->npushed; i++)
		if (pc >= u->pushed[i][0] && pc < u->pushed[i][1])
			return 1;
	return 0;
}

/* Per-thread state handed to the accessors as ARG. */
struct uctx {
	struct sd_unwinder *u;
	struct sd_thread *th;
	struct user_regs_struct regs; /* the registers the cursor starts from */
	int noinfo;          /* find_proc_info found no CFI for the last ip */
	int stack_exhausted; /* a read fell just past the captured window */
	int live_budget;     /* reads of live memory still allowed */
	/* The file range of the last image read: libunwind reads unwind
	 * tables a word at a time, mostly from one place. */
	uint64_t img_lo, img_hi;     /* target addresses */
	const uint8_t *img_data;     /* the bytes at img_lo */
	uint64_t bad_addr;
	/* Registers not known (bit UNW_X86_64_*): a thread read without a
	 * stop has only SP, PC and the syscall registers. A read of one of
	 * them fails and, unless PROBING, marks the thread needs_regs. */
	unsigned long unknown;
	int probing;
	int copy_only;       /* reads outside the copy fail (no live reads) */
	uint64_t bad_ra;     /* a return address refused: not after a call */
	int bad_ra_cfi;      /* ... given by .debug_frame (else by rbp) */
	/* The frame being stepped, for an rbp inferred from its call site
	 * (fp_n -1: none, as while the cursor starts). */
	long fp_n;
	uint64_t fp_ip, fp_sp;
	int fp_step_inferred; /* this step took rbp from the call site */
	uint64_t fp_rbp;      /* ... this value */
	int fp_inferred;      /* some step of this walk did */
};

/* The registers /proc/TID/syscall gives: rsp, rip, the syscall arguments
 * (rdi rsi rdx r10 r8 r9) and rax (-ENOSYS while in the syscall). */
static unsigned long partial_unknown(void)
{
	return (1ul << UNW_X86_64_RBX) | (1ul << UNW_X86_64_RBP) | (1ul << UNW_X86_64_RCX) |
	       (1ul << UNW_X86_64_R11) | (1ul << UNW_X86_64_R12) | (1ul << UNW_X86_64_R13) |
	       (1ul << UNW_X86_64_R14) | (1ul << UNW_X86_64_R15);
}

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_datarel 0x30

/* Locate the binary-search table of a module's .eh_frame_hdr. */
static int module_table(struct sd_tmod *m)
{
	if (m->table_state)
		return m->table_state;
	m->table_state = -1;
	struct sd_elf *e = m->elf;
	if (!e || !e->has_eh_frame_hdr)
		return -1;
	uint8_t hdr[4];
	if (elfcache_read(e, e->eh_frame_hdr_vaddr, hdr, 4) < 0 || hdr[0] != 1)
		return -1;
	size_t ptrsz;
	switch (hdr[1] & 0x0f) {
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: ptrsz = 4; break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: ptrsz = 8; break;
	default: return -1;
	}
	/* Only the sorted datarel/sdata4 table can be binary searched. */
	if (hdr[2] != DW_EH_PE_udata4 || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -1;
	uint32_t count;
	if (elfcache_read(e, e->eh_frame_hdr_vaddr + 4 + ptrsz, &count, 4) < 0)
		return -1;
	m->table_hdr = m->bias + e->eh_frame_hdr_vaddr;
	m->table_data = m->table_hdr + 4 + ptrsz + 4;
	m->table_count = count;
	m->table_state = 1;
	return 1;
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct uctx *c = arg;
	struct sd_tmod *m = space_module_at(c->u->space, ip);
	if (!m || module_table(m) < 0) {
		c->noinfo = 1;
		return -UNW_ENOINFO;
	}
	unw_dyn_info_t di;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->text_start;
	di.end_ip = m->text_end;
	di.u.rti.segbase = m->table_hdr;
	di.u.rti.table_data = m->table_data;
	di.u.rti.table_len = m->table_count * 8 / sizeof(unw_word_t);
	int r = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
	if (r < 0)
		c->noinfo = 1;
	return r;
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* libunwind frees table-based unwind info itself. */
	(void)as;
	(void)pi;
	(void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as;
	(void)addr;
	(void)arg;
	return -UNW_ENOINFO;
}

/* Copy up to 8 bytes at ADDR from the stack window or a module image. */
static int read_word(struct uctx *c, uint64_t addr, unw_word_t *val)
{
	struct sd_thread *th = c->th;
	*val = 0;
	if (th->stack_len && addr >= th->stack_base && addr < th->stack_base + th->stack_len) {
		uint64_t off = addr - th->stack_base;
		size_t n = th->stack_len - off < 8 ? th->stack_len - off : 8;
		memcpy(val, th->stack + off, n);
		return 0;
	}
	if (addr >= c->img_lo && addr + 8 <= c->img_hi) {
		memcpy(val, c->img_data + (addr - c->img_lo), 8);
		return 0;
	}
	struct sd_tmod *m = space_module_at(c->u->space, addr);
	if (m && m->elf) {
		uint64_t va = addr - m->bias;
		const struct sd_load *l = elfcache_load_at(m->elf, va);
		uint64_t off = l ? l->offset + (va - l->vaddr) : 0;
		if (l && off < m->elf->size) {
			size_t n = m->elf->size - off < 8 ? m->elf->size - off : 8;
			memcpy(val, m->elf->data + off, n);
			/* Remember the whole load segment the word is in. */
			if (l->offset + l->filesz <= m->elf->size) {
				c->img_lo = l->vaddr + m->bias;
				c->img_hi = c->img_lo + l->filesz;
				c->img_data = m->elf->data + l->offset;
			}
			return 0;
		}
	}
	/* Outside the copy: the stack a signal handler on a sigaltstack
	 * interrupted, or a window cut short. The one read of the live
	 * process after the thaw: a thread still blocked where we saw it has
	 * not moved that memory, but one that ran since may have, so each
	 * word is counted (th->live_reads, printed under the thread) and the
	 * reads are bounded (live_budget). A window cut by --stack-total is
	 * not patched up from live memory: the cut is what the cap asked for. */
	if (c->copy_only) {
		c->bad_addr = addr;
		return -UNW_EINVAL;
	}
	const struct sd_map *mp = procfs_maps_find(&c->u->space->maps, addr);
	if (c->u->space->read_mem) {
		/* A core file: its memory does not move, and it is all there
		 * is (no live process to read). */
		if (mp && mp->perms[0] == 'r' &&
		    c->u->space->read_mem(c->u->space->read_arg, addr, val, 8) == 8)
			return 0;
		c->bad_addr = addr;
		return -UNW_EINVAL;
	}
	if (mp && mp->perms[0] == 'r' && mp->perms[2] != 'x' && addr + 8 <= mp->end) {
		if (c->live_budget > 0 && !th->stack_cut) {
			c->live_budget--;
			if (capture_read(c->u->space->pid, addr, val, 8) == 8) {
				th->live_reads++;
				return 0;
			}
		} else if (th->stack_truncated) {
			c->stack_exhausted = 1;
		}
	}
	c->bad_addr = addr;
	return -UNW_EINVAL;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			  void *arg)
{
	(void)as;
	if (write)
		return -UNW_EINVAL;
	return read_word(arg, addr, val);
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
			  void *arg)
{
	(void)as;
	struct uctx *c = arg;
	const struct user_regs_struct *r = &c->regs;
	if (write)
		return -UNW_EREADONLYREG;
	if (reg >= 0 && reg < 64 && (c->unknown & (1ul << reg))) {
		/* rbp of a caller frame that keeps its frame pointer: its sp
		 * plus the offset learned at that call (fpsite.c). Checked
		 * after the step (fp_check). */
		int64_t d;
		if (reg == UNW_X86_64_RBP && !c->probing && c->fp_n >= 1 &&
		    fpsite_lookup(&c->u->fp, c->fp_ip, &d)) {
			*val = c->fp_sp + (uint64_t)d;
			c->fp_step_inferred = 1;
			c->fp_rbp = *val;
			return 0;
		}
		/* Not in what /proc gave: this unwind cannot go on from the
		 * copy alone; the thread is stopped once for its registers. */
		if (!c->probing)
			c->th->needs_regs = 1;
		return -UNW_EBADREG;
	}
	switch (reg) {
	case UNW_X86_64_RAX: *val = r->rax; break;
	case UNW_X86_64_RDX: *val = r->rdx; break;
	case UNW_X86_64_RCX: *val = r->rcx; break;
	case UNW_X86_64_RBX: *val = r->rbx; break;
	case UNW_X86_64_RSI: *val = r->rsi; break;
	case UNW_X86_64_RDI: *val = r->rdi; break;
	case UNW_X86_64_RBP: *val = r->rbp; break;
	case UNW_X86_64_RSP: *val = r->rsp; break;
	case UNW_X86_64_R8: *val = r->r8; break;
	case UNW_X86_64_R9: *val = r->r9; break;
	case UNW_X86_64_R10: *val = r->r10; break;
	case UNW_X86_64_R11: *val = r->r11; break;
	case UNW_X86_64_R12: *val = r->r12; break;
	case UNW_X86_64_R13: *val = r->r13; break;
	case UNW_X86_64_R14: *val = r->r14; break;
	case UNW_X86_64_R15: *val = r->r15; break;
	case UNW_X86_64_RIP: *val = r->rip; break;
	default: return -UNW_EBADREG;
	}
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			    void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cur, void *arg)
{
	(void)as;
	(void)cur;
	(void)arg;
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			     unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

static uint64_t read_uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* Read an encoded pointer of the given DW_EH_PE encoding at *P (file
 * bytes of image E, whose vaddr is VADDR). Only the forms GCC, clang and
 * rustc emit are supported; returns -1 for others. */
static int read_encoded(const struct sd_elf *e, uint64_t vaddr, uint8_t enc, uint64_t *out,
			size_t *len)
{
	uint8_t b[8];
	size_t n;
	switch (enc & 0x0f) {
	case 0x03:
	case 0x0b: n = 4; break;
	case 0x04:
	case 0x0c:
	case 0x00: n = 8; break;
	default: return -1;
	}
	if (elfcache_read(e, vaddr, b, n) < 0)
		return -1;
	uint64_t v;
	if (n == 4) {
		uint32_t u;
		memcpy(&u, b, 4);
		v = (enc & 0x0f) == 0x0b ? (uint64_t)(int64_t)(int32_t)u : u;
	} else {
		memcpy(&v, b, 8);
	}
	if ((enc & 0x70) == 0x10)
		v += vaddr; /* pcrel */
	else if ((enc & 0x70) != 0)
		return -1;
	*out = v;
	*len = n;
	return 0;
}

/* Is there CFI for IP? A binary search of the module's .eh_frame_hdr
 * table, then the range of the one FDE that may hold IP. Asked before
 * each step so that code without CFI is walked by our own frame-pointer
 * step: libunwind's guess there leaves its cursor unable to go on. */
static int has_cfi(struct sd_space *t, uint64_t ip, int exact)
{
	uint64_t pc = exact ? ip : ip - 1;
	struct sd_tmod *m = space_module_at(t, pc);
	if (!m || module_table(m) < 0)
		return 0;
	const struct sd_elf *e = m->elf;
	uint64_t hdr = m->table_hdr - m->bias;
	uint64_t table = m->table_data - m->bias;
	int32_t rel = (int32_t)(pc - m->table_hdr);
	uint64_t lo = 0, hi = m->table_count;
	int32_t ent[2] = {0, 0};
	int found = 0;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		int32_t cur[2];
		if (elfcache_read(e, table + mid * 8, cur, 8) < 0)
			return 0;
		if (cur[0] <= rel) {
			memcpy(ent, cur, sizeof(ent));
			found = 1;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (!found)
		return 0;
	/* The FDE: length, CIE pointer, pc_begin, pc_range. */
	uint64_t fde = hdr + (uint64_t)(int64_t)ent[1];
	uint32_t w[2];
	if (elfcache_read(e, fde, w, 8) < 0 || w[0] == 0xffffffffu || w[1] == 0)
		return 0;
	uint64_t cie = fde + 4 - w[1];
	uint8_t cb[64];
	memset(cb, 0, sizeof(cb));
	uint32_t cielen;
	if (elfcache_read(e, cie, &cielen, 4) < 0)
		return 0;
	size_t take = cielen + 4 < sizeof(cb) ? cielen + 4 : sizeof(cb);
	if (elfcache_read(e, cie, cb, take) < 0)
		return 0;
	/* CIE: length, id, version, augmentation, code align, data align,
	 * return register, then the 'z' data with the 'R' encoding. */
	const uint8_t *p = cb + 9, *end = cb + take;
	const char *aug = (const char *)p;
	while (p < end && *p)
		p++;
	p++;
	read_uleb(&p, end);
	read_uleb(&p, end);
	if (cb[8] == 1)
		p++;
	else
		read_uleb(&p, end);
	uint8_t enc = 0x00; /* absptr */
	if (aug[0] == 'z') {
		read_uleb(&p, end);
		for (const char *a = aug + 1; *a && p < end; a++) {
			if (*a == 'R') {
				enc = *p++;
			} else if (*a == 'P') {
				uint8_t penc = *p++;
				p += (penc & 0x0f) == 0x04 || (penc & 0x0f) == 0x0c ? 8 : 4;
			} else if (*a == 'L') {
				p++;
			}
		}
	}
	uint64_t begin, range;
	size_t n1, n2;
	if (read_encoded(e, fde + 8, enc, &begin, &n1) < 0 ||
	    read_encoded(e, fde + 8 + n1, enc & 0x0f, &range, &n2) < 0)
		return 1; /* an unusual form: let libunwind decide */
	uint64_t vpc = pc - m->bias;
	return vpc >= begin && vpc < begin + range;
}

/* Cursor registers by DWARF register number (x86-64). */
static const int dw_regs[16] = {
    UNW_X86_64_RAX, UNW_X86_64_RDX, UNW_X86_64_RCX, UNW_X86_64_RBX, UNW_X86_64_RSI, UNW_X86_64_RDI,
    UNW_X86_64_RBP, UNW_X86_64_RSP, UNW_X86_64_R8,  UNW_X86_64_R9,  UNW_X86_64_R10, UNW_X86_64_R11,
    UNW_X86_64_R12, UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15,
};

/* Start a fresh cursor at registers R (after a step of our own), so that
 * CFI-based unwinding resumes cleanly in the caller. */
static int restart_at(unw_cursor_t *cur, struct uctx *c, unw_addr_space_t as,
		      const struct user_regs_struct *r)
{
	struct user_regs_struct saved = c->regs;
	c->regs = *r;
	unw_cursor_t fresh;
	int e = unw_init_remote(&fresh, as, c);
	if (e < 0) {
		c->regs = saved;
		return e;
	}
	*cur = fresh;
	return 1;
}

/* One step by the rules of the module's .debug_frame at IP, for code that
 * .eh_frame does not cover (Go binaries have only .debug_frame). Returns
 * 1, 0 at the outermost frame (return address undefined or 0),
 * -UNW_ENOINFO when no FDE covers IP, or another negative error. */
static int debug_frame_step(unw_cursor_t *cur, struct uctx *c, unw_addr_space_t as, uint64_t ip,
			    int exact)
{
	uint64_t pc = exact ? ip : ip - 1;
	struct sd_tmod *m = space_module_at(c->u->space, pc);
	if (!m || !m->elf)
		return -UNW_ENOINFO;
	struct dwcfi_row row;
	int e = dwcfi_row_at(elfcache_debug_frame(m->elf), pc - m->bias, &row);
	if (e == -ENOENT)
		return -UNW_ENOINFO;
	if (e < 0 || row.cfa_reg < 0 || row.cfa_reg >= 16)
		return -UNW_EBADFRAME;
	unw_word_t v[16];
	for (int i = 0; i < 16; i++)
		if (unw_get_reg(cur, dw_regs[i], &v[i]) < 0)
			v[i] = 0;
	uint64_t cfa = v[row.cfa_reg] + (uint64_t)row.cfa_off;
	unw_word_t nv[DWCFI_NREGS];
	for (int i = 0; i < DWCFI_NREGS; i++) {
		nv[i] = i < 16 ? v[i] : 0;
		switch (row.r[i].rule) {
		case DWCFI_SAME: break;
		case DWCFI_UNDEF:
			if (i == DWCFI_RA)
				return 0;
			break;
		case DWCFI_OFFSET:
			if (read_word(c, cfa + (uint64_t)row.r[i].off, &nv[i]) < 0)
				return -UNW_EINVAL;
			break;
		case DWCFI_VAL_OFFSET: nv[i] = cfa + (uint64_t)row.r[i].off; break;
		case DWCFI_REGISTER:
			nv[i] = row.r[i].reg >= 0 && row.r[i].reg < 16 ? v[row.r[i].reg] : 0;
			break;
		}
	}
	if (row.r[DWCFI_RA].rule == DWCFI_SAME)
		return -UNW_EBADFRAME;
	if (nv[DWCFI_RA] == 0)
		return 0;
	/* Code that switches stacks (Go's mcall and systemstack) leaves
	 * under its CFA whatever the other stack holds there, which may even
	 * point into code. A signal handler (Go's sigtramp) returns into the
	 * signal return trampoline, which no call precedes; Go's
	 * runtime.asyncPreempt returns to the pc its signal interrupted. */
	if (!in_pushed(c->u, pc) && !unwind_after_call(c->u->space, nv[DWCFI_RA], 1) &&
	    !unwind_planted_return(c->u->space, nv[DWCFI_RA]) &&
	    !unwind_is_sigreturn(c->u->space, nv[DWCFI_RA])) {
		c->bad_ra = nv[DWCFI_RA];
		c->bad_ra_cfi = 1;
		return -UNW_EBADFRAME;
	}
	/* No rule for rbp, yet rbp is this frame's frame pointer (it points
	 * just below the return address): the caller's rbp is saved there.
	 * Go's .debug_frame describes the CFA and return address only. */
	if (row.r[DWCFI_RBP].rule == DWCFI_SAME && v[DWCFI_RBP] == cfa - 16 &&
	    read_word(c, cfa - 16, &nv[DWCFI_RBP]) < 0)
		nv[DWCFI_RBP] = v[DWCFI_RBP];
	struct user_regs_struct r = c->regs;
	r.rbx = nv[3];
	r.rbp = nv[DWCFI_RBP];
	r.r12 = nv[12];
	r.r13 = nv[13];
	r.r14 = nv[14];
	r.r15 = nv[15];
	r.rip = nv[DWCFI_RA];
	r.rsp = cfa;
	return restart_at(cur, c, as, &r);
}

/* One frame-pointer step: the caller's pc is at [rbp+8], its sp is rbp+16
 * and its rbp is [rbp]. Returns 1, 0 at the end of the chain (rbp 0), or a
 * negative libunwind error; a "return address" that does not follow a call
 * is refused (C->BAD_RA says which). */
static int fp_step(unw_cursor_t *cur, struct uctx *c, unw_addr_space_t as)
{
	unw_word_t rbp, nrbp, nrip;
	if (unw_get_reg(cur, UNW_X86_64_RBP, &rbp) < 0)
		return -UNW_EBADREG;
	if (rbp == 0)
		return 0;
	if (rbp & 7)
		return -UNW_EBADFRAME;
	if (read_word(c, rbp, &nrbp) < 0 || read_word(c, rbp + 8, &nrip) < 0)
		return -UNW_EINVAL;
	if (nrip == 0)
		return 0;
	/* A signal handler returns into the kernel's trampoline, which no
	 * call precedes; a pushed return address follows none either. */
	unw_word_t ip = 0;
	unw_get_reg(cur, UNW_REG_IP, &ip);
	if (!unwind_after_call(c->u->space, nrip, 1) && !unwind_is_sigreturn(c->u->space, nrip) &&
	    !(ip && (in_pushed(c->u, ip) || in_pushed(c->u, ip - 1)))) {
		c->bad_ra = nrip;
		return -UNW_EBADFRAME;
	}
	struct user_regs_struct r = c->regs;
	unw_word_t v;
	/* The callee-saved registers carry over to the caller where they
	 * are known; one unknown here is not needed by this step. */
	static const struct {
		int reg;
		size_t off;
	} keep[] = {
		{UNW_X86_64_RBX, offsetof(struct user_regs_struct, rbx)},
		{UNW_X86_64_R12, offsetof(struct user_regs_struct, r12)},
		{UNW_X86_64_R13, offsetof(struct user_regs_struct, r13)},
		{UNW_X86_64_R14, offsetof(struct user_regs_struct, r14)},
		{UNW_X86_64_R15, offsetof(struct user_regs_struct, r15)},
	};
	unsigned long unknown = c->unknown & ~(1ul << UNW_X86_64_RBP);
	c->probing = 1;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		if (unw_get_reg(cur, keep[i].reg, &v) == 0) {
			memcpy((char *)&r + keep[i].off, &v, sizeof(v));
			unknown &= ~(1ul << keep[i].reg);
		}
	}
	c->probing = 0;
	r.rip = nrip;
	r.rsp = rbp + 16;

	r.rbp = nrbp;
	unsigned long saved_unknown = c->unknown;
	c->unknown = unknown;
	int e = restart_at(cur, c, as, &r);
	if (e < 0)
		c->unknown = saved_unknown;
	return e;
}

/* One step out of a frameless leaf that has no unwind information at all:
 * hand-written assembly that ends its CFI before a system call, as glibc's
 * clone3 does for the parent's return. Nothing has been pushed, so the
 * return address is at [rsp] and every other register is the caller's.
 * Innermost frame only, and only when [rsp] follows a call. */
static int leaf_step(unw_cursor_t *cur, struct uctx *c, unw_addr_space_t as)
{
	unw_word_t sp, ra;
	if (unw_get_reg(cur, UNW_X86_64_RSP, &sp) < 0)
		return -UNW_EBADREG;
	if (read_word(c, sp, &ra) < 0)
		return -UNW_EINVAL;
	if (ra == 0 || !unwind_after_call(c->u->space, ra, 1)) {
		c->bad_ra = ra;
		return -UNW_EBADFRAME;
	}
	struct user_regs_struct r = c->regs;
	r.rip = ra;
	r.rsp = sp + 8;
	return restart_at(cur, c, as, &r);
}

/* A step where no CFI covers IP: the innermost frame stopped at a system
 * call is a leaf ([rsp] holds its return address); otherwise follow the
 * frame pointer, and for the innermost frame try the leaf rule when the
 * frame pointer leads nowhere. */
static int nocfi_step(unw_cursor_t *cur, struct uctx *c, unw_addr_space_t as, uint64_t ip,
		      unsigned n)
{
	int r;
	if (n == 0 && unwind_at_syscall(c->u->space, ip)) {
		r = leaf_step(cur, c, as);
		if (r > 0)
			return r;
		c->bad_ra = 0;
	}
	r = fp_step(cur, c, as);
	if (r <= 0 && n == 0) {
		uint64_t bad = c->bad_ra;
		int l = leaf_step(cur, c, as);
		if (l > 0)
			return l;
		c->bad_ra = bad;
	}
	return r;
}

struct sd_unwinder *unwind_new(struct sd_space *sp)
{
	struct sd_unwinder *u = sd_xcalloc(1, sizeof(*u));
	u->space = sp;
	unwind_mask_install();
	fpsite_init(&u->fp);
	u->as = unw_create_addr_space(&accessors, 0);
	if (u->as)
		unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	return u;
}

void unwind_free(struct sd_unwinder *u)
{
	if (!u)
		return;
	if (u->as)
		unw_destroy_addr_space(u->as);
	free(u->pushed);
	fpsite_release(&u->fp);
	free(u);
}

void unwind_pushed_return(struct sd_unwinder *u, uint64_t lo, uint64_t hi)
{
	if (!u || lo >= hi)
		return;
	for (size_t i = 0; i < u->npushed; i++)
		if (u->pushed[i][0] == lo && u->pushed[i][1] == hi)
			return;
	u->pushed = sd_xrealloc(u->pushed, (u->npushed + 1) * sizeof(*u->pushed));
	u->pushed[u->npushed][0] = lo;
	u->pushed[u->npushed][1] = hi;
	u->npushed++;
}

void unwind_flush(struct sd_unwinder *u)
{
	if (u && u->as)
		unw_flush_cache(u->as, 0, 0);
	if (u)
		fpsite_clear(&u->fp);
}

static void unwind_walk(struct sd_unwinder *u, struct sd_snapshot *snap, struct sd_thread *th,
			unsigned max_frames);

/* Is TID one of the kernel's io_uring threads inside the process (io-wq
 * workers "iou-wrk-*", the SQPOLL thread "iou-sqp-*")? They run only in
 * the kernel: their user registers are all zero. PF_IO_WORKER (0x10) in
 * the flags of /proc/PID/task/TID/stat says so for certain. */
static int is_io_worker(pid_t pid, const struct sd_thread *th)
{
	if (th->regs.rip != 0 || th->regs.rsp != 0)
		return 0;
	char path[80], *text;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)th->tid);
	ssize_t n = sd_read_file(path, &text, 4096);
	if (n < 0)
		return 0;
	/* Fields after the comm: state ppid pgrp session tty tpgid flags. */
	const char *p = strrchr(text, ')');
	unsigned long flags = 0;
	int ok = p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1;
	free(text);
	return ok && (flags & 0x10);
}

void unwind_thread(struct sd_unwinder *u, struct sd_snapshot *snap, struct sd_thread *th,
		   unsigned max_frames)
{
	if (th->have_regs && is_io_worker(u->space->pid, th)) {
		th->unwind_stop = strpool_intern(snap->pool,
						 "io_uring worker: a kernel thread of the process, "
						 "with no user-space stack");
		return;
	}
	if (!th->have_regs) {
		if (!th->unwind_stop)
			th->unwind_stop = strpool_intern(snap->pool, "no registers");
		return;
	}
	if (!u->as) {
		th->unwind_stop = strpool_intern(snap->pool, "unwinder unavailable");
		return;
	}
	/* libunwind blocks every signal around each cache lock: two system
	 * calls per lock, several locks per step, more than the unwinding
	 * costs. Nothing of ours unwinds in a signal handler (unwind-mask.h). */
	unwind_mask_quiet(1);
	unwind_walk(u, snap, th, max_frames);
	unwind_mask_quiet(0);
}

/* F's callee-saved registers as the cursor CUR gives them for its frame:
 * the frame's own values, which lock analysis compares with lock
 * addresses. Read from the copy only (a register saved outside it is
 * left 0: not worth a read of the live process), never marking the
 * thread as needing its registers. */
static void record_csr(unw_cursor_t *cur, struct uctx *c, struct sd_frame *f)
{
	static const int regs[6] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
				    UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};
	c->probing = 1;
	c->copy_only = 1;
	for (size_t i = 0; i < 6; i++) {
		unw_word_t v;
		f->csr[i] = unw_get_reg(cur, regs[i], &v) == 0 ? v : 0;
	}
	c->copy_only = 0;
	c->probing = 0;
}

/* After a step from frame F (the Nth) to the cursor's: learn its call
 * site's frame-pointer offset when the step was made from real registers
 * and F keeps its frame pointer (the caller's sp is F's rbp + 16); check
 * a step that took rbp from the call site: the new frame must be one (its
 * return address after a call, F's saved rbp slot in the copy), else the
 * guess is dropped and the thread is stopped for its registers. Returns
 * 1, or -UNW_EBADREG. */
static int fp_after_step(unw_cursor_t *cur, struct uctx *c, const struct sd_frame *f, unsigned n)
{
	unw_word_t nsp = 0, nip = 0;
	unw_get_reg(cur, UNW_REG_SP, &nsp);
	unw_get_reg(cur, UNW_REG_IP, &nip);
	if (c->fp_step_inferred) {
		c->fp_step_inferred = 0;
		struct sd_thread *th = c->th;
		uint64_t rbp = c->fp_rbp;
		int ok = !(rbp & 7) && rbp >= f->sp && th->stack_len && rbp >= th->stack_base &&
			 rbp + 16 <= th->stack_base + th->stack_len && nsp == rbp + 16 &&
			 (nip == 0 || unwind_after_call(c->u->space, nip, 1));
		if (!ok) {
			th->needs_regs = 1;
			return -UNW_EBADREG;
		}
		c->fp_inferred = 1;
		return 1;
	}
	/* The frame's rbp as record_csr read it: 0 when not known. Nothing
	 * is learned from a walk that guessed (what follows rests on it). */
	uint64_t rbp = f->csr[1];
	if (n >= 1 && !c->fp_inferred && rbp && rbp >= f->sp && nsp == rbp + 16)
		fpsite_learn(&c->u->fp, f->pc, (int64_t)(rbp - f->sp));
	return 1;
}

static void unwind_walk(struct sd_unwinder *u, struct sd_snapshot *snap, struct sd_thread *th,
			unsigned max_frames)
{
	struct uctx c = {.u = u, .th = th, .regs = th->regs, .live_budget = 65536, .fp_n = -1};
	if (th->regs_partial)
		c.unknown = partial_unknown();
	th->needs_regs = 0;
	th->rbp_inferred = 0;
	unw_cursor_t cur;
	int r = unw_init_remote(&cur, u->as, &c);
	if (r < 0) {
		struct sd_frame *f = snapshot_add_frame(th);
		f->pc = th->regs.rip;
		f->sp = th->regs.rsp;
		f->flags = SD_FRAME_EXACT;
		th->unwind_stop = strpool_intern(snap->pool, unw_strerror(r));
		return;
	}
	int exact = 1, from_fp = 0;
	uint64_t prev_sp = 0, prev_pc = 0;
	for (unsigned n = 0;; n++) {
		if (max_frames && n >= max_frames) {
			char msg[96];
			snprintf(msg, sizeof(msg), "stopped at --max-frames %u", max_frames);
			th->unwind_stop = strpool_intern(snap->pool, msg);
			break;
		}
		unw_word_t ip = 0, sp = 0;
		unw_get_reg(&cur, UNW_REG_IP, &ip);
		unw_get_reg(&cur, UNW_REG_SP, &sp);
		if (n > 0 && ip == 0)
			break; /* the outermost frame's return address */
		if (n > 0 && sp == prev_sp && ip == prev_pc) {
			th->unwind_stop = strpool_intern(snap->pool, "frame loop (corrupt stack?)");
			break;
		}
		struct sd_frame *f = snapshot_add_frame(th);
		f->pc = ip;
		f->sp = sp;
		record_csr(&cur, &c, f);
		if (exact)
			f->flags |= SD_FRAME_EXACT;
		if (from_fp)
			f->flags |= SD_FRAME_FP;
		int sig = unwind_is_sigreturn(u->space, ip);
		if (sig)
			f->flags |= SD_FRAME_SIGNAL | SD_FRAME_EXACT;
		/* A stack we copied was mapped when we copied it, whatever
		 * maps read earlier say (a thread born since). */
		int copied = th->stack_len && sp >= th->stack_base &&
			     sp < th->stack_base + th->stack_len;
		if (n == 0 && !copied && !procfs_maps_find(&u->space->maps, sp)) {
			u->space->maps_misses++;
			char msg[96];
			snprintf(msg, sizeof(msg), "stack pointer 0x%llx is not mapped (corrupt stack?)",
				 (unsigned long long)sp);
			th->unwind_stop = strpool_intern(snap->pool, msg);
			break;
		}
		const struct sd_map *pm = procfs_maps_find(&u->space->maps, ip);
		if (n > 0 && !sig && !space_module_at(u->space, ip) &&
		    !(pm && pm->perms[2] == 'x')) {
			/* A return address into no executable mapping: a smashed
			 * stack. Keep it, but do not trust what follows.
			 * (Anonymous executable memory, e.g. JIT code, is
			 * walked by frame pointer.) */
			u->space->maps_misses++;
			th->unwind_stop = strpool_intern(snap->pool,
							 "return address outside any executable mapping "
							 "(corrupt stack?)");
			break;
		}
		prev_sp = sp;
		prev_pc = ip;
		c.fp_n = (long)n;
		c.fp_ip = ip;
		c.fp_sp = sp;
		c.fp_step_inferred = 0;
		c.noinfo = 0;
		c.stack_exhausted = 0;
		c.bad_ra = 0;
		c.bad_ra_cfi = 0;
		if (!sig && !has_cfi(u->space, ip, exact)) {
			/* No .eh_frame here: the .debug_frame if it covers ip,
			 * else follow the frame pointer ourselves; either way a
			 * fresh cursor starts in the caller, so CFI-based
			 * unwinding resumes cleanly there. */
			r = debug_frame_step(&cur, &c, u->as, ip, exact);
			if (r == -UNW_ENOINFO) {
				r = nocfi_step(&cur, &c, u->as, ip, n);
				if (r > 0)
					c.noinfo = 1;
			}
		} else {
			c.noinfo = 0;
			r = unw_step(&cur);
		}
		c.fp_n = -1;
		if (r > 0)
			r = fp_after_step(&cur, &c, f, n);
		if (r == 0)
			break;
		if (r < 0) {
			char msg[160];
			if (c.bad_ra && c.bad_ra_cfi)
				snprintf(msg, sizeof(msg),
					 "the caller's return address 0x%llx does not follow a call "
					 "(the code switched stacks, or the stack is corrupt)",
					 (unsigned long long)c.bad_ra);
			else if (c.bad_ra)
				snprintf(msg, sizeof(msg),
					 "frame pointer gave 0x%llx, which does not follow a call "
					 "(not a return address)",
					 (unsigned long long)c.bad_ra);
			else if (c.stack_exhausted && th->stack_cut)
				snprintf(msg, sizeof(msg),
					 "stack window exhausted at %zu bytes, cut to share the "
					 "%zu %s all threads' copies may take (raise --stack-total)",
					 th->stack_len,
					 snap->stack_total % (1u << 20) ? snap->stack_total >> 10
									: snap->stack_total >> 20,
					 snap->stack_total % (1u << 20) ? "KiB" : "MiB");
			else if (c.stack_exhausted)
				snprintf(msg, sizeof(msg),
					 "stack window exhausted at %zu bytes (raise --stack-bytes)",
					 th->stack_len);
			else if (c.bad_addr)
				snprintf(msg, sizeof(msg), "%s (unreadable address 0x%llx)",
					 unw_strerror(r), (unsigned long long)c.bad_addr);
			else
				snprintf(msg, sizeof(msg), "%s", unw_strerror(r));
			th->unwind_stop = strpool_intern(snap->pool, msg);
			break;
		}
		/* Return addresses point after the call: only the interrupted
		 * pc of a signal frame's caller is exact, and the pc pushed as
		 * the return address of a function entered without a call. */
		exact = sig || in_pushed(u, f->flags & SD_FRAME_EXACT ? ip : ip - 1);
		from_fp = c.noinfo;
	}
	if (c.fp_inferred && !th->needs_regs) {
		th->rbp_inferred = 1;
		snap->nrbp_inferred++;
	}
}
