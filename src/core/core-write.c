// SPDX-License-Identifier: MIT
// The core writer: a snapshot's registers and copies, and the few pages a
// debugger needs to find and place the modules, laid out as the kernel
// lays out a core (notes first, then one load segment per piece of each
// mapping), written through the safe writer.
#include "core-write.h"

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>

#include "capture.h"
#include "safefile.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif

#define PAGE 4096u
/* Bounds on what is read from the live process: it may be hostile, and
 * its list of libraries is walked through its own pointers. */
#define MAX_HEADER_BYTES (64u << 10) /* of an ELF module's first pages */
#define MAX_VDSO_BYTES (64u << 10)
#define MAX_DYNAMIC_BYTES (64u << 10)
#define MAX_LIBRARIES 8192u
#define MAX_NAME 4096u

/* Bytes of the process at [addr, addr + len): borrowed from the snapshot
 * or owned (read now). */
struct chunk {
	uint64_t addr, len;
	const uint8_t *data;
	uint8_t *own;
};

/* A PT_LOAD to write: memsz bytes at vaddr, the first filesz of which are
 * the pieces [first, first + n) of the piece list, in order. */
struct seg {
	uint64_t vaddr, memsz, filesz;
	uint32_t flags;
	size_t first, n;
};

struct writer {
	const struct sd_snapshot *s;
	const struct core_write_opts *o;
	struct chunk *chunks;
	size_t nchunks, ccap;
	struct chunk *pieces; /* borrowed views into chunks, clipped */
	size_t npieces, pcap;
	struct seg *segs;
	size_t nsegs, scap;
	uint8_t *auxv;
	size_t auxv_len;
	size_t libraries;
};

static void add_chunk(struct writer *w, uint64_t addr, uint64_t len, const uint8_t *data,
		      uint8_t *own)
{
	if (!len || addr + len < addr) {
		free(own);
		return;
	}
	sd_grow(&w->chunks, &w->ccap, w->nchunks + 1, sizeof(*w->chunks));
	w->chunks[w->nchunks++] = (struct chunk){addr, len, data ? data : own, own};
}

/* Read LEN bytes at ADDR of the live process into a new chunk; keeps
 * what could be read (a short read keeps its prefix). Returns the count. */
static size_t read_chunk(struct writer *w, uint64_t addr, size_t len)
{
	if (!len)
		return 0;
	uint8_t *buf = sd_xmalloc(len);
	ssize_t n = capture_read(w->o->pid, addr, buf, len);
	if (n <= 0) {
		free(buf);
		return 0;
	}
	add_chunk(w, addr, (uint64_t)n, NULL, buf);
	return (size_t)n;
}

/* The same for a small structure (r_debug, a link_map, a name), exactly
 * its bytes, held to the mapping it is in (a read across the end of one
 * fails). The page around it reads as zeros in the core: a debugger
 * reading it in chunks of a word or two stays inside what the core holds. */
static void read_small(struct writer *w, uint64_t addr, uint64_t len)
{
	const struct sd_map *m = procfs_maps_find(w->o->maps, addr);
	if (!m || len > MAX_NAME)
		return;
	if (len > m->end - addr)
		len = m->end - addr;
	read_chunk(w, addr, (size_t)len);
}

/* Read LEN bytes at ADDR into BUF: 1 when all were read. */
static int peek(struct writer *w, uint64_t addr, void *buf, size_t len)
{
	return capture_read(w->o->pid, addr, buf, len) == (ssize_t)len;
}

static uint64_t auxv_get(const struct writer *w, uint64_t type)
{
	for (size_t i = 0; i + 16 <= w->auxv_len; i += 16) {
		uint64_t v[2];
		memcpy(v, w->auxv + i, 16);
		if (v[0] == type)
			return v[1];
		if (v[0] == AT_NULL)
			break;
	}
	return 0;
}

/* The first pages of each mapped ELF file (its header, program headers
 * and build-id note, as the kernel dumps them) and the whole vdso. */
static void read_module_headers(struct writer *w)
{
	const struct sd_maps *maps = w->o->maps;
	for (size_t i = 0; i < maps->n; i++) {
		const struct sd_map *m = &maps->v[i];
		if (!strcmp(m->path, "[vdso]")) {
			uint64_t len = m->end - m->start;
			read_chunk(w, m->start,
				   len > MAX_VDSO_BYTES ? MAX_VDSO_BYTES : (size_t)len);
			continue;
		}
		/* A device's mapping is never read (its memory may be a
		 * device's registers); the kernel does not dump those either. */
		if (m->path[0] != '/' || m->offset != 0 || m->perms[0] != 'r' ||
		    !strncmp(m->path, "/dev/", 5))
			continue;
		Elf64_Ehdr eh;
		if (!peek(w, m->start, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
		    eh.e_ident[EI_CLASS] != ELFCLASS64)
			continue;
		/* The headers and the notes, when they lie past the first page
		 * (they are in the file's first segment, mapped here). */
		uint64_t want = PAGE;
		uint64_t ph_end = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
		if (eh.e_phentsize == sizeof(Elf64_Phdr) && ph_end <= MAX_HEADER_BYTES) {
			if (ph_end > want)
				want = ph_end;
			Elf64_Phdr *ph = sd_xmalloc(eh.e_phnum * sizeof(*ph) + 1);
			if (peek(w, m->start + eh.e_phoff, ph, eh.e_phnum * sizeof(*ph)))
				for (unsigned k = 0; k < eh.e_phnum; k++)
					if (ph[k].p_type == PT_NOTE &&
					    ph[k].p_offset <= MAX_HEADER_BYTES &&
					    ph[k].p_filesz <= MAX_HEADER_BYTES &&
					    ph[k].p_offset + ph[k].p_filesz > want)
						want = ph[k].p_offset + ph[k].p_filesz;
			free(ph);
		}
		want = (want + PAGE - 1) & ~(uint64_t)(PAGE - 1);
		if (want > MAX_HEADER_BYTES)
			want = MAX_HEADER_BYTES;
		if (want > m->end - m->start)
			want = m->end - m->start;
		read_chunk(w, m->start, (size_t)want);
	}
}

/* What gdb walks to find the shared libraries: the executable's dynamic
 * section (its DT_DEBUG entry, set at run time), the r_debug it points
 * to, and each link_map of r_debug's list with its name. */
static void read_link_maps(struct writer *w)
{
	uint64_t phdr = auxv_get(w, AT_PHDR), phnum = auxv_get(w, AT_PHNUM);
	if (!phdr || !phnum || phnum > 256)
		return;
	Elf64_Phdr ph[256];
	if (!peek(w, phdr, ph, phnum * sizeof(*ph)))
		return;
	uint64_t bias = 0, dyn = 0, dynsz = 0;
	for (uint64_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = phdr - ph[i].p_vaddr;
	for (uint64_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = ph[i].p_vaddr + bias;
			dynsz = ph[i].p_memsz;
		}
	if (!dyn || !dynsz)
		return; /* linked statically: no libraries to find */
	if (dynsz > MAX_DYNAMIC_BYTES)
		dynsz = MAX_DYNAMIC_BYTES;
	size_t got = read_chunk(w, dyn, (size_t)dynsz);
	if (!got)
		return;
	const struct chunk *c = &w->chunks[w->nchunks - 1];
	uint64_t rdebug = 0;
	for (size_t off = 0; off + 16 <= got; off += 16) {
		int64_t tag;
		uint64_t val;
		memcpy(&tag, c->data + off, 8);
		memcpy(&val, c->data + off + 8, 8);
		if (tag == DT_NULL)
			break;
		if (tag == DT_DEBUG)
			rdebug = val;
	}
	/* struct r_debug: r_version (int), r_map, r_brk, r_state, r_ldbase;
	 * glibc 2.35 and later add r_next (the other namespaces). */
	uint64_t rd[6];
	if (!rdebug || !peek(w, rdebug, rd, 40))
		return;
	read_small(w, rdebug, sizeof(rd));
	/* struct link_map: l_addr, l_name, l_ld, l_next, l_prev. The list is
	 * the target's: a cycle in it is found when the entry met is the one
	 * met half as many steps in (it is, within twice the steps to close
	 * the cycle), and the walk is bounded. */
	uint64_t lm = rd[1];
	uint64_t *seen = sd_xmalloc(MAX_LIBRARIES * sizeof(*seen));
	for (unsigned n = 0; lm && n < MAX_LIBRARIES; n++) {
		if (n && lm == seen[n / 2])
			break;
		seen[n] = lm;
		uint64_t l[5];
		if (!peek(w, lm, l, sizeof(l)))
			break;
		read_small(w, lm, sizeof(l));
		w->libraries++;
		if (l[1]) {
			char name[MAX_NAME];
			ssize_t k = capture_read(w->o->pid, l[1], name, sizeof(name));
			if (k > 0) {
				const char *z = memchr(name, '\0', (size_t)k);
				read_small(w, l[1], z ? (uint64_t)(z - name) + 1 : (uint64_t)k);
			}
		}
		lm = l[3];
	}
	free(seen);
}

/* The snapshot's copies: each thread's stack window, the lock words. */
/* The stack memory a thread's unwind reached outside its copy (a signal
 * handler on a sigaltstack interrupting the thread's own stack, a copy
 * cut short): read now from each such frame's stack pointer up, as the
 * unwinder read it after the thaw, at most MAX_OUTSIDE bytes a thread. */
#define MAX_OUTSIDE (512u << 10)
static void outside_chunks(struct writer *w, const struct sd_thread *t)
{
	uint64_t lo = 0, hi = 0, budget = MAX_OUTSIDE;
	for (size_t k = 0; k < t->nframes && budget; k++) {
		uint64_t sp = t->frames[k].sp;
		if (!sp || (sp >= t->stack_base && sp - t->stack_base < t->stack_len) ||
		    (sp >= lo && sp < hi))
			continue;
		const struct sd_map *m = procfs_maps_find(w->o->maps, sp);
		if (!m || m->perms[0] != 'r')
			continue;
		uint64_t len = m->end - sp;
		if (len > budget)
			len = budget;
		if (t->stack_len && sp < t->stack_base && t->stack_base - sp < len &&
		    procfs_maps_find(w->o->maps, t->stack_base) == m)
			len = t->stack_base - sp; /* up to the copy */
		size_t got = read_chunk(w, sp, (size_t)len);
		budget -= got;
		lo = sp;
		hi = sp + got;
	}
}

/* Code no file holds (a JIT's, in anonymous executable memory) where a
 * frame of the thread is: the page around each such pc, read now, so that
 * a debugger can read the instructions it unwinds through (a file's code
 * it reads from the file). */
static void jit_chunks(struct writer *w, const struct sd_thread *t)
{
	uint64_t last = 0;
	for (size_t k = 0; k < t->nframes; k++) {
		uint64_t pc = t->frames[k].pc, page = pc & ~(uint64_t)(PAGE - 1);
		const struct sd_map *m = procfs_maps_find(w->o->maps, pc);
		if (!m || page == last || m->perms[2] != 'x' || m->path[0] == '/' ||
		    !strcmp(m->path, "[vdso]") || !strcmp(m->path, "[vsyscall]"))
			continue;
		uint64_t lo = page > m->start + PAGE ? page - PAGE : m->start;
		uint64_t hi = page + PAGE < m->end ? page + PAGE : m->end;
		read_chunk(w, lo, (size_t)(hi - lo));
		last = page;
	}
}

static void snapshot_chunks(struct writer *w)
{
	const struct sd_snapshot *s = w->s;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *t = &s->threads[i];
		if (t->stack && t->stack_len)
			add_chunk(w, t->stack_base, t->stack_len, t->stack, NULL);
		for (size_t k = 0; k < t->nlockmem; k++)
			add_chunk(w, t->lockmem[k].addr, t->lockmem[k].len, t->lockmem[k].bytes,
				  NULL);
		if (t->live_reads)
			outside_chunks(w, t);
		jit_chunks(w, t);
		/* No copy (the stack pointer points nowhere): the stack its
		 * frame pointer points into, as far as a debugger may walk it. */
		const struct sd_map *m;
		if (!t->stack_len && t->have_regs && !t->regs_partial && t->regs.rbp &&
		    (m = procfs_maps_find(w->o->maps, t->regs.rbp)) && m->perms[0] == 'r' &&
		    m->path[0] != '/') {
			uint64_t len = m->end - t->regs.rbp;
			read_chunk(w, t->regs.rbp, len > MAX_OUTSIDE ? MAX_OUTSIDE : (size_t)len);
		}
	}
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address the longer first; then the snapshot's (borrowed)
	 * before what was read later. */
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return (x->own != NULL) - (y->own != NULL);
}

static uint64_t page_up(uint64_t a)
{
	return (a + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

/* A piece of LEN bytes at ADDR: DATA, or zeros when DATA is NULL. */
static void add_piece(struct writer *w, uint64_t addr, uint64_t len, const uint8_t *data)
{
	if (!len)
		return;
	sd_grow(&w->pieces, &w->pcap, w->npieces + 1, sizeof(*w->pieces));
	w->pieces[w->npieces++] = (struct chunk){addr, len, data, NULL};
}

static void add_seg(struct writer *w, uint64_t vaddr, uint64_t memsz, uint64_t filesz,
		    uint32_t flags, size_t first, size_t n)
{
	sd_grow(&w->segs, &w->scap, w->nsegs + 1, sizeof(*w->segs));
	w->segs[w->nsegs++] = (struct seg){vaddr, memsz, filesz, flags, first, n};
}

/* Chunks to pieces (no two cover the same byte: where copies overlap the
 * first in address order wins), then to segments: each mapping cut where
 * its data starts and stops, so that every byte of it is in exactly one
 * PT_LOAD, with its bytes in the file or none. */
static void plan_segments(struct writer *w)
{
	sd_sort(w->chunks, w->nchunks, sizeof(*w->chunks), cmp_chunk);
	uint64_t covered = 0;
	for (size_t i = 0; i < w->nchunks; i++) {
		const struct chunk *c = &w->chunks[i];
		uint64_t lo = c->addr, hi = c->addr + c->len;
		if (hi <= covered)
			continue;
		if (lo < covered)
			lo = covered;
		/* Whole pages, as the kernel writes them and as libdwfl and gdb
		 * look segments up: what was not copied around the copy reads
		 * as zeros (no memory beyond what was asked is kept). */
		uint64_t page_lo = lo & ~(uint64_t)(PAGE - 1);
		if (w->npieces && page_lo <= covered) {
			add_piece(w, covered, lo - covered, NULL);
		} else {
			if (w->npieces)
				add_piece(w, covered, page_up(covered) - covered, NULL);
			add_piece(w, page_lo, lo - page_lo, NULL);
		}
		add_piece(w, lo, hi - lo, c->data + (lo - c->addr));
		covered = hi;
	}
	if (w->npieces)
		add_piece(w, covered, page_up(covered) - covered, NULL);
	const struct sd_maps *maps = w->o->maps;
	size_t p = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const struct sd_map *m = &maps->v[i];
		if (!strcmp(m->path, "[vsyscall]") || m->end <= m->start)
			continue;
		uint32_t flags = (m->perms[0] == 'r' ? PF_R : 0) | (m->perms[1] == 'w' ? PF_W : 0) |
				 (m->perms[2] == 'x' ? PF_X : 0);
		while (p < w->npieces && w->pieces[p].addr + w->pieces[p].len <= m->start)
			p++; /* outside every mapping: left out */
		uint64_t at = m->start;
		while (at < m->end) {
			/* The pieces overlapping [at, end): cut to the mapping. */
			if (p < w->npieces && w->pieces[p].addr < m->end) {
				struct chunk *pc = &w->pieces[p];
				if (pc->addr < at) {
					/* Began in the mapping before: its rest. */
					if (pc->data)
						pc->data += at - pc->addr;
					pc->len -= at - pc->addr;
					pc->addr = at;
				}
				if (pc->addr > at) {
					add_seg(w, at, pc->addr - at, 0, flags, 0, 0);
					at = pc->addr;
				}
				/* A run of contiguous pieces inside the mapping: one segment. */
				size_t first = p;
				uint64_t end = at;
				while (p < w->npieces && w->pieces[p].addr == end && end < m->end) {
					struct chunk *q = &w->pieces[p];
					if (q->addr + q->len > m->end) {
						/* Split it at the mapping's end. */
						sd_grow(&w->pieces, &w->pcap, w->npieces + 1,
							sizeof(*w->pieces));
						q = &w->pieces[p];
						memmove(q + 1, q, (w->npieces - p) * sizeof(*q));
						w->npieces++;
						uint64_t keep = m->end - q->addr;
						q[1].addr = m->end;
						q[1].data = q->data ? q->data + keep : NULL;
						q[1].len = q->len - keep;
						q->len = keep;
					}
					end = q->addr + q->len;
					p++;
				}
				add_seg(w, at, end - at, end - at, flags, first, p - first);
				at = end;
			} else {
				add_seg(w, at, m->end - at, 0, flags, 0, 0);
				at = m->end;
			}
		}
	}
}

/* One note: the header, the name and the data, each padded to 4 bytes. */
static void add_note(struct strbuf *sb, const char *name, uint32_t type, const void *desc,
		     size_t len)
{
	static const char zero[4];
	Elf64_Nhdr h = {
	    .n_namesz = (uint32_t)strlen(name) + 1, .n_descsz = (uint32_t)len, .n_type = type};
	strbuf_add(sb, (const char *)&h, sizeof(h));
	strbuf_add(sb, name, h.n_namesz);
	strbuf_add(sb, zero, (4 - h.n_namesz % 4) % 4);
	strbuf_add(sb, desc, len);
	strbuf_add(sb, zero, (4 - len % 4) % 4);
}

static void add_prstatus(struct strbuf *sb, const struct sd_snapshot *s, const struct sd_thread *t)
{
	struct elf_prstatus ps;
	memset(&ps, 0, sizeof(ps));
	ps.pr_pid = t->tid;
	ps.pr_pgrp = s->pid;
	_Static_assert(sizeof(ps.pr_reg) == sizeof(t->regs), "elf_gregset_t is user_regs_struct");
	memcpy(&ps.pr_reg, &t->regs, sizeof(t->regs));
	if (t->regs_partial) {
		/* Read from /proc without a stop: the segments are those of
		 * every 64-bit user thread. */
		struct user_regs_struct r = t->regs;
		r.cs = r.cs ? r.cs : 0x33;
		r.ss = r.ss ? r.ss : 0x2b;
		memcpy(&ps.pr_reg, &r, sizeof(r));
	}
	add_note(sb, "CORE", NT_PRSTATUS, &ps, sizeof(ps));
}

static void add_prpsinfo(struct strbuf *sb, const struct writer *w)
{
	const struct sd_snapshot *s = w->s;
	struct elf_prpsinfo pi;
	memset(&pi, 0, sizeof(pi));
	pi.pr_sname = s->state ? s->state : 'S';
	pi.pr_pid = s->pid;
	snprintf(pi.pr_fname, sizeof(pi.pr_fname), "%s", s->comm ? s->comm : "");
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)w->o->pid);
	if (sd_read_file(path, &text, 1 << 16) >= 0) {
		const char *p = strstr(text, "\nPPid:");
		if (p)
			pi.pr_ppid = (pid_t)strtol(p + 6, NULL, 10);
		p = strstr(text, "\nUid:");
		if (p)
			pi.pr_uid = (unsigned)strtoul(p + 5, NULL, 10);
		p = strstr(text, "\nGid:");
		if (p)
			pi.pr_gid = (unsigned)strtoul(p + 5, NULL, 10);
		free(text);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)w->o->pid);
	ssize_t n = sd_read_file(path, &text, 1 << 16);
	if (n > 0) {
		/* By default the program only (arguments can hold secrets), as
		 * the saved snapshot keeps it. */
		for (ssize_t i = 0; w->o->full_cmdline && i < n - 1; i++)
			if (!text[i])
				text[i] = ' ';
		snprintf(pi.pr_psargs, sizeof(pi.pr_psargs), "%s", text);
	}
	if (n >= 0)
		free(text);
	add_note(sb, "CORE", NT_PRPSINFO, &pi, sizeof(pi));
}

/* NT_FILE: count, page size, (start, end, offset in pages) per file-backed
 * mapping, then their paths. */
static size_t add_files(struct strbuf *sb, const struct writer *w)
{
	const struct sd_maps *maps = w->o->maps;
	struct strbuf d, names;
	strbuf_init(&d);
	strbuf_init(&names);
	uint64_t count = 0, page = PAGE;
	for (size_t i = 0; i < maps->n; i++)
		count += maps->v[i].path[0] == '/';
	strbuf_add(&d, (const char *)&count, 8);
	strbuf_add(&d, (const char *)&page, 8);
	for (size_t i = 0; i < maps->n; i++) {
		const struct sd_map *m = &maps->v[i];
		if (m->path[0] != '/')
			continue;
		uint64_t v[3] = {m->start, m->end, m->offset / PAGE};
		strbuf_add(&d, (const char *)v, sizeof(v));
		strbuf_add(&names, m->path, strlen(m->path) + 1);
	}
	strbuf_add(&d, names.buf, names.len);
	add_note(sb, "CORE", NT_FILE, d.buf, d.len);
	strbuf_release(&d);
	strbuf_release(&names);
	return (size_t)count;
}

static void add_thread_names(struct strbuf *sb, const struct sd_snapshot *s)
{
	struct strbuf d;
	strbuf_init(&d);
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *t = &s->threads[i];
		if (!t->have_regs || !t->name)
			continue;
		uint32_t tid = (uint32_t)t->tid;
		strbuf_add(&d, (const char *)&tid, 4);
		strbuf_add(&d, t->name, strlen(t->name) + 1);
	}
	add_note(sb, CORE_NOTE_OWNER, CORE_NOTE_THREAD_NAMES, d.buf, d.len);
	strbuf_release(&d);
}

/* The notes: the first thread's status, the process's, the auxiliary
 * vector and the files (the order the kernel writes), then the other
 * threads', then ours. */
static void build_notes(struct strbuf *sb, struct writer *w, struct core_write_stats *st)
{
	const struct sd_snapshot *s = w->s;
	size_t lead = s->nthreads;
	for (size_t i = 0; i < s->nthreads && lead == s->nthreads; i++)
		if (s->threads[i].have_regs && s->threads[i].tid == s->pid)
			lead = i;
	for (size_t i = 0; i < s->nthreads && lead == s->nthreads; i++)
		if (s->threads[i].have_regs)
			lead = i;
	if (lead < s->nthreads) {
		add_prstatus(sb, s, &s->threads[lead]);
		st->threads++;
	}
	add_prpsinfo(sb, w);
	if (w->auxv_len)
		add_note(sb, "CORE", NT_AUXV, w->auxv, w->auxv_len);
	st->files = add_files(sb, w);
	for (size_t i = 0; i < s->nthreads; i++) {
		if (i == lead)
			continue;
		if (!s->threads[i].have_regs) {
			st->no_regs++;
			continue;
		}
		add_prstatus(sb, s, &s->threads[i]);
		st->threads++;
	}
	add_thread_names(sb, s);
}

static void writer_release(struct writer *w)
{
	for (size_t i = 0; i < w->nchunks; i++)
		free(w->chunks[i].own);
	free(w->chunks);
	free(w->pieces);
	free(w->segs);
	free(w->auxv);
}

static int write_piece(struct safefile *f, const struct chunk *pc, struct sd_error *err)
{
	static const uint8_t zeros[PAGE];
	if (pc->data)
		return safefile_write(f, pc->data, pc->len, err);
	int rc = 0;
	for (uint64_t done = 0; done < pc->len && rc == 0; done += PAGE)
		rc = safefile_write(f, zeros, pc->len - done < PAGE ? pc->len - done : PAGE, err);
	return rc;
}

/* Write the file: the ELF header, the program headers (a section header
 * carries their count past 65534), the notes, each segment's bytes. */
static int write_file(const char *path, struct writer *w, const struct strbuf *notes,
		      struct core_write_stats *st, struct sd_error *err)
{
	uint64_t phnum = 1 + w->nsegs;
	int xnum = phnum >= PN_XNUM;
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = xnum ? PN_XNUM : (Elf64_Half)phnum;
	uint64_t off = sizeof(eh) + phnum * sizeof(Elf64_Phdr);
	Elf64_Shdr sh;
	memset(&sh, 0, sizeof(sh));
	if (xnum) {
		eh.e_shoff = off;
		eh.e_shentsize = sizeof(sh);
		eh.e_shnum = 1;
		sh.sh_info = (Elf64_Word)phnum;
		off += sizeof(sh);
	}
	uint64_t notes_off = off;
	off = (off + notes->len + PAGE - 1) & ~(uint64_t)(PAGE - 1);

	struct strbuf hdr;
	strbuf_init(&hdr);
	strbuf_add(&hdr, (const char *)&eh, sizeof(eh));
	Elf64_Phdr ph = {
	    .p_type = PT_NOTE, .p_offset = notes_off, .p_filesz = notes->len, .p_align = 4};
	strbuf_add(&hdr, (const char *)&ph, sizeof(ph));
	for (size_t i = 0; i < w->nsegs; i++) {
		const struct seg *g = &w->segs[i];
		ph = (Elf64_Phdr){.p_type = PT_LOAD,
				  .p_flags = g->flags,
				  .p_offset = off,
				  .p_vaddr = g->vaddr,
				  .p_memsz = g->memsz,
				  .p_filesz = g->filesz,
				  .p_align = PAGE};
		strbuf_add(&hdr, (const char *)&ph, sizeof(ph));
		off += g->filesz;
		st->memory += g->filesz;
	}
	if (xnum)
		strbuf_add(&hdr, (const char *)&sh, sizeof(sh));
	strbuf_add(&hdr, notes->buf, notes->len);
	while (hdr.len % PAGE)
		strbuf_add(&hdr, "", 1);
	st->segments = w->nsegs;

	struct safefile f;
	int rc = safefile_begin(&f, path, 0600, 0, err);
	if (rc < 0) {
		strbuf_release(&hdr);
		return rc;
	}
	rc = safefile_write(&f, hdr.buf, hdr.len, err);
	strbuf_release(&hdr);
	for (size_t i = 0; i < w->nsegs && rc == 0; i++)
		for (size_t k = 0; k < w->segs[i].n && rc == 0; k++) {
			const struct chunk *pc = &w->pieces[w->segs[i].first + k];
			rc = write_piece(&f, pc, err);
		}
	if (rc < 0) {
		safefile_abort(&f);
		return rc;
	}
	if ((rc = safefile_commit(&f, err)) < 0)
		return rc;
	st->bytes = off;
	return 0;
}

int core_write(const char *path, const struct sd_snapshot *s, const struct core_write_opts *o,
	       struct core_write_stats *st, struct sd_error *err)
{
	struct core_write_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (!s->nthreads)
		return sd_error_set(err, EINVAL, "no thread to write to %s", path);
	size_t with_regs = 0;
	for (size_t i = 0; i < s->nthreads; i++)
		with_regs += s->threads[i].have_regs;
	if (!with_regs)
		return sd_error_set(
		    err, EINVAL,
		    "no registers in the snapshot of %d to write to %s (every thread "
		    "failed to be read)",
		    (int)s->pid, path);
	struct writer w = {.s = s, .o = o};
	char apath[64];
	snprintf(apath, sizeof(apath), "/proc/%d/auxv", (int)o->pid);
	char *auxv;
	ssize_t n = sd_read_file(apath, &auxv, 1 << 16);
	if (n > 0) {
		w.auxv = (uint8_t *)auxv;
		w.auxv_len = (size_t)n & ~(size_t)15;
	} else if (n == 0) {
		free(auxv);
	}
	snapshot_chunks(&w);
	read_module_headers(&w);
	read_link_maps(&w);
	plan_segments(&w);
	struct strbuf notes;
	strbuf_init(&notes);
	build_notes(&notes, &w, st);
	st->libraries = w.libraries;
	int rc = write_file(path, &w, &notes, st, err);
	strbuf_release(&notes);
	writer_release(&w);
	return rc;
}
