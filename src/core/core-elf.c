// SPDX-License-Identifier: MIT
// The ELF core parser: program headers, the notes (threads, process name,
// mapped files, auxiliary vector, signal), the memory of the load
// segments. The file is input from outside: every offset, count and size
// is checked before it is used, and the arithmetic cannot overflow.
#include "core.h"
#include "core-write.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif

/* Limits that keep a hostile core bounded in memory. */
#define MAX_PHDRS 1000000u
#define MAX_THREADS 1000000u
#define MAX_FILES 1000000u

/* Is [off, off + len) inside a buffer of SIZE bytes? */
static int in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct sd_core_seg *x = a, *y = b;
	return (x->vaddr > y->vaddr) - (x->vaddr < y->vaddr);
}

/* The segment holding ADDR, or NULL. */
static const struct sd_core_seg *seg_at(const struct sd_core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sd_core_seg *s = &c->segs[mid];
		if (addr < s->vaddr)
			hi = mid;
		else if (addr - s->vaddr >= s->memsz)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

static int cmp_map(const void *a, const void *b)
{
	const struct sd_map *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static int parse_prstatus(struct sd_core *c, const uint8_t *d, size_t n, size_t *cap,
			  struct sd_error *err)
{
	struct elf_prstatus ps;
	if (n < offsetof(struct elf_prstatus, pr_reg) + sizeof(ps.pr_reg))
		return sd_error_set(err, EINVAL, "%s: NT_PRSTATUS note of %zu bytes is too short",
				    c->path, n);
	if (c->nthreads >= MAX_THREADS)
		return sd_error_set(err, E2BIG, "%s: more than %u threads", c->path, MAX_THREADS);
	memset(&ps, 0, sizeof(ps));
	memcpy(&ps, d, n < sizeof(ps) ? n : sizeof(ps));
	sd_grow(&c->threads, cap, c->nthreads + 1, sizeof(*c->threads));
	struct sd_core_thread *t = &c->threads[c->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = ps.pr_pid;
	t->cursig = ps.pr_cursig;
	_Static_assert(sizeof(ps.pr_reg) == sizeof(t->regs), "elf_gregset_t is user_regs_struct");
	memcpy(&t->regs, &ps.pr_reg, sizeof(t->regs));
	return 0;
}

static void parse_prpsinfo(struct sd_core *c, const uint8_t *d, size_t n)
{
	struct elf_prpsinfo pi;
	if (n < offsetof(struct elf_prpsinfo, pr_psargs) + sizeof(pi.pr_psargs))
		return; /* a short one says nothing we rely on */
	memcpy(&pi, d, n < sizeof(pi) ? n : sizeof(pi));
	memcpy(c->comm, pi.pr_fname, sizeof(pi.pr_fname));
	c->comm[sizeof(pi.pr_fname)] = '\0';
	memcpy(c->args, pi.pr_psargs, sizeof(pi.pr_psargs));
	c->args[sizeof(pi.pr_psargs)] = '\0';
	size_t al = strlen(c->args);
	while (al && c->args[al - 1] == ' ')
		c->args[--al] = '\0';
	if (n >= offsetof(struct elf_prpsinfo, pr_pid) + sizeof(pi.pr_pid) && !c->pid)
		c->pid = pi.pr_pid;
	c->have_prpsinfo = 1;
}

/* NT_FILE: count, page size, count (start, end, page offset) triples,
 * then count NUL-terminated paths. */
static int parse_file_note(struct sd_core *c, const uint8_t *d, size_t n, struct sd_error *err)
{
	uint64_t count, page;
	if (n < 16)
		return sd_error_set(err, EINVAL, "%s: NT_FILE note too short", c->path);
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (count > MAX_FILES || count * 24 > n - 16)
		return sd_error_set(err, EINVAL, "%s: NT_FILE note claims %llu files in %zu bytes",
				    c->path, (unsigned long long)count, n);
	if (page == 0 || (page & (page - 1)) || page > (1u << 30))
		return sd_error_set(err, EINVAL, "%s: NT_FILE page size %llu", c->path,
				    (unsigned long long)page);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i].path);
	free(c->files);
	c->files = sd_xcalloc(count ? count : 1, sizeof(*c->files));
	c->nfiles = 0;
	c->page_size = page;
	const uint8_t *names = d + 16 + count * 24, *end = d + n;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t v[3];
		memcpy(v, d + 16 + i * 24, 24);
		const uint8_t *z = memchr(names, '\0', (size_t)(end - names));
		if (!z)
			return sd_error_set(err, EINVAL, "%s: NT_FILE path %llu runs past the note",
					    c->path, (unsigned long long)i);
		if (v[1] <= v[0] || v[2] > UINT64_MAX / page) {
			names = z + 1;
			continue; /* an empty or impossible range: skipped */
		}
		struct sd_core_file *f = &c->files[c->nfiles++];
		f->start = v[0];
		f->end = v[1];
		f->offset = v[2] * page;
		f->path = sd_xstrdup((const char *)names);
		names = z + 1;
	}
	return 0;
}

static void parse_auxv(struct sd_core *c, const uint8_t *d, size_t n)
{
	free(c->auxv);
	c->nauxv = n / 16;
	c->auxv = sd_xmalloc(c->nauxv * 16 + 16);
	memcpy(c->auxv, d, c->nauxv * 16);
}

static void parse_siginfo(struct sd_core *c, const uint8_t *d, size_t n)
{
	if (!c->nthreads || n < 24)
		return; /* it belongs to the thread before it */
	struct sd_core_thread *t = &c->threads[c->nthreads - 1];
	int32_t v[3];
	memcpy(v, d, 12);
	t->have_siginfo = 1;
	t->si_signo = v[0];
	t->si_code = v[2];
	/* fault_addr of the fault signals follows the three ints, aligned. */
	memcpy(&t->fault_addr, d + 16, 8);
}

/* stackdump's own note (core-write.h): (uint32 tid, name NUL) pairs, the
 * threads' names, matched to the threads parsed before it. */
static void parse_thread_names(struct sd_core *c, const uint8_t *d, size_t n)
{
	/* The names come in the threads' order: each is looked for where the
	 * last one was found first; the search as a whole is bounded (a
	 * hostile order cannot make it quadratic in a million threads). */
	size_t off = 0, hint = 0;
	uint64_t budget = (uint64_t)64 << 20;
	while (n - off > 4 && c->nthreads) {
		uint32_t tid;
		memcpy(&tid, d + off, 4);
		const uint8_t *z = memchr(d + off + 4, '\0', n - off - 4);
		if (!z)
			return;
		size_t len = (size_t)(z - (d + off + 4));
		for (size_t k = 0; k < c->nthreads && budget; k++, budget--) {
			size_t i = (hint + k) % c->nthreads;
			if ((uint32_t)c->threads[i].tid != tid)
				continue;
			struct sd_core_thread *t = &c->threads[i];
			size_t m = len < sizeof(t->name) - 1 ? len : sizeof(t->name) - 1;
			memcpy(t->name, d + off + 4, m);
			t->name[m] = '\0';
			hint = i + 1;
			break;
		}
		off += 4 + len + 1;
	}
}

static int parse_notes(struct sd_core *c, const uint8_t *d, size_t n, size_t *tcap,
		       struct sd_error *err)
{
	size_t off = 0;
	while (off < n) {
		Elf64_Nhdr h;
		if (n - off < sizeof(h))
			return sd_error_set(err, EINVAL, "%s: note header at %zu runs past its segment",
					    c->path, off);
		memcpy(&h, d + off, sizeof(h));
		uint64_t nsz = ((uint64_t)h.n_namesz + 3) & ~3ull;
		uint64_t dsz = ((uint64_t)h.n_descsz + 3) & ~3ull;
		uint64_t body = off + sizeof(h);
		if (!in_bounds(body, nsz, n) || !in_bounds(body + nsz, h.n_descsz, n))
			return sd_error_set(err, EINVAL,
					    "%s: note of type %#x at %zu runs past its segment (name %u, "
					    "data %u bytes)",
					    c->path, h.n_type, off, h.n_namesz, h.n_descsz);
		const char *name = (const char *)d + body;
		const uint8_t *desc = d + body + nsz;
		int core = h.n_namesz == 5 && !memcmp(name, "CORE", 5);
		if (core) {
			int r = 0;
			switch (h.n_type) {
			case NT_PRSTATUS: r = parse_prstatus(c, desc, h.n_descsz, tcap, err); break;
			case NT_PRPSINFO: parse_prpsinfo(c, desc, h.n_descsz); break;
			case NT_FILE: r = parse_file_note(c, desc, h.n_descsz, err); break;
			case NT_AUXV: parse_auxv(c, desc, h.n_descsz); break;
			case NT_SIGINFO: parse_siginfo(c, desc, h.n_descsz); break;
			default: break;
			}
			if (r < 0)
				return r;
		} else if (h.n_namesz == sizeof(CORE_NOTE_OWNER) &&
			   !memcmp(name, CORE_NOTE_OWNER, sizeof(CORE_NOTE_OWNER)) &&
			   h.n_type == CORE_NOTE_THREAD_NAMES) {
			parse_thread_names(c, desc, h.n_descsz);
		}
		uint64_t next = body + nsz + dsz;
		off = next > n ? n : (size_t)next;
	}
	return 0;
}

void core_release(struct sd_core *c)
{
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i].path);
	free(c->files);
	free(c->threads);
	free(c->segs);
	free(c->auxv);
	c->files = NULL;
	c->threads = NULL;
	c->segs = NULL;
	c->auxv = NULL;
	c->nfiles = c->nthreads = c->nsegs = c->nauxv = 0;
}

int core_parse(struct sd_core *c, const void *data, size_t size, struct sd_error *err)
{
	const char *path = c->path ? c->path : "core";
	const uint8_t *d = data;
	Elf64_Ehdr eh;
	if (size < SELFMAG || memcmp(d, ELFMAG, SELFMAG))
		return sd_error_set(err, EINVAL, "%s: not an ELF file (no ELF magic)", path);
	if (size < EI_NIDENT || d[EI_CLASS] != ELFCLASS64 || d[EI_DATA] != ELFDATA2LSB)
		return sd_error_set(err, EINVAL,
				    "%s: a core of another architecture (%s, %s); stackdump reads "
				    "x86-64 cores",
				    path, size > EI_CLASS && d[EI_CLASS] == ELFCLASS32 ? "32-bit" : "not 64-bit",
				    size > EI_DATA && d[EI_DATA] == ELFDATA2MSB ? "big-endian" : "little-endian");
	if (size < sizeof(eh))
		return sd_error_set(err, EINVAL, "%s: truncated in the ELF header (%zu bytes)", path,
				    size);
	memcpy(&eh, d, sizeof(eh));
	if (eh.e_type != ET_CORE)
		return sd_error_set(err, EINVAL, "%s: an ELF file but not a core (type %u)", path,
				    eh.e_type);
	if (eh.e_machine != EM_X86_64)
		return sd_error_set(err, EINVAL,
				    "%s: a core of another architecture (ELF machine %u); stackdump "
				    "reads x86-64 cores",
				    path, eh.e_machine);
	uint64_t phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {
		/* More than 65534 headers: the count is in section 0's sh_info. */
		Elf64_Shdr sh;
		if (!eh.e_shoff || !in_bounds(eh.e_shoff, sizeof(sh), size))
			return sd_error_set(err, EINVAL, "%s: truncated (the section header giving the "
					    "number of segments is missing)", path);
		memcpy(&sh, d + eh.e_shoff, sizeof(sh));
		phnum = sh.sh_info;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || phnum > MAX_PHDRS)
		return sd_error_set(err, EINVAL, "%s: bad program headers (%llu of %u bytes)", path,
				    (unsigned long long)phnum, eh.e_phentsize);
	if (!in_bounds(eh.e_phoff, phnum * sizeof(Elf64_Phdr), size))
		return sd_error_set(err, EINVAL,
				    "%s: truncated: its %llu program headers end past the file's %zu "
				    "bytes",
				    path, (unsigned long long)phnum, size);
	c->data = d;
	c->size = size;
	c->page_size = 4096;
	size_t scap = 0, tcap = 0;
	int r = 0, notes = 0;
	for (uint64_t i = 0; i < phnum && r == 0; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, d + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE) {
			if (!in_bounds(ph.p_offset, ph.p_filesz, size)) {
				r = sd_error_set(err, EINVAL,
						 "%s: truncated or corrupt: its notes (%llu bytes at "
						 "%llu) end past the file's %zu bytes",
						 path, (unsigned long long)ph.p_filesz,
						 (unsigned long long)ph.p_offset, size);
				break;
			}
			r = parse_notes(c, d + ph.p_offset, ph.p_filesz, &tcap, err);
			notes++;
		} else if (ph.p_type == PT_LOAD && ph.p_memsz) {
			if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_filesz > ph.p_memsz)
				continue; /* wraps around, or more file than memory */
			sd_grow(&c->segs, &scap, c->nsegs + 1, sizeof(*c->segs));
			struct sd_core_seg *s = &c->segs[c->nsegs++];
			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->offset = ph.p_offset;
			/* A truncated core keeps the bytes it has. */
			s->filesz = ph.p_offset >= size ? 0
				    : ph.p_filesz > size - ph.p_offset ? size - ph.p_offset
								       : ph.p_filesz;
			s->flags = ph.p_flags;
		}
	}
	if (r == 0 && !notes)
		r = sd_error_set(err, EINVAL, "%s: a core without notes (no registers)", path);
	if (r == 0 && !c->nthreads)
		r = sd_error_set(err, EINVAL, "%s: a core without threads (no NT_PRSTATUS note)",
				 path);
	if (r < 0) {
		core_release(c);
		return r;
	}
	sd_sort(c->segs, c->nsegs, sizeof(*c->segs), cmp_seg);
	if (!c->pid)
		c->pid = c->threads[0].tid;
	return 0;
}

size_t core_read(const struct sd_core *c, uint64_t addr, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		const struct sd_core_seg *s = seg_at(c, addr + got);
		if (!s)
			break;
		uint64_t in = addr + got - s->vaddr;
		if (in >= s->filesz)
			break; /* in memory but not dumped */
		uint64_t n = s->filesz - in;
		if (n > len - got)
			n = len - got;
		memcpy((uint8_t *)buf + got, c->data + s->offset + in, n);
		got += n;
	}
	return got;
}

ssize_t core_read_cb(void *arg, uint64_t addr, void *buf, size_t len)
{
	return (ssize_t)core_read(arg, addr, buf, len);
}

uint64_t core_auxv(const struct sd_core *c, uint64_t type)
{
	for (size_t i = 0; i < c->nauxv; i++)
		if (c->auxv[2 * i] == type)
			return c->auxv[2 * i + 1];
	return 0;
}

void core_maps(const struct sd_core *c, struct sd_maps *maps)
{
	uint64_t vdso = core_auxv(c, AT_SYSINFO_EHDR);
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct sd_core_seg *s = &c->segs[i];
		sd_grow(&maps->v, &maps->cap, maps->n + 1, sizeof(*maps->v));
		struct sd_map *m = &maps->v[maps->n++];
		memset(m, 0, sizeof(*m));
		m->start = s->vaddr;
		m->end = s->vaddr + s->memsz;
		m->perms[0] = s->flags & PF_R ? 'r' : '-';
		m->perms[1] = s->flags & PF_W ? 'w' : '-';
		m->perms[2] = s->flags & PF_X ? 'x' : '-';
		m->perms[3] = 'p';
		const char *path = vdso && s->vaddr == vdso ? "[vdso]" : "";
		for (size_t k = 0; k < c->nfiles && !*path; k++) {
			const struct sd_core_file *f = &c->files[k];
			if (s->vaddr >= f->start && s->vaddr < f->end) {
				path = f->path;
				m->offset = f->offset + (s->vaddr - f->start);
				/* The inode stands for the file: one per path. */
				m->inode = (unsigned long)k + 1;
				for (size_t j = 0; j < k; j++)
					if (!strcmp(c->files[j].path, f->path)) {
						m->inode = (unsigned long)j + 1;
						break;
					}
			}
		}
		m->path = sd_xstrdup(path);
	}
	/* gcore leaves out the mappings it can read from the files (a
	 * library's text): NT_FILE still lists them. Those are shown as
	 * read-only and executable (their text is what matters to the
	 * modules; the files' own segments say what is code). */
	for (size_t k = 0; k < c->nfiles; k++) {
		const struct sd_core_file *f = &c->files[k];
		if (seg_at(c, f->start))
			continue;
		sd_grow(&maps->v, &maps->cap, maps->n + 1, sizeof(*maps->v));
		struct sd_map *m = &maps->v[maps->n++];
		memset(m, 0, sizeof(*m));
		m->start = f->start;
		m->end = f->end;
		memcpy(m->perms, "r-xp", 5);
		m->offset = f->offset;
		m->inode = (unsigned long)k + 1;
		for (size_t j = 0; j < k; j++)
			if (!strcmp(c->files[j].path, f->path)) {
				m->inode = (unsigned long)j + 1;
				break;
			}
		m->path = sd_xstrdup(f->path);
	}
	sd_sort(maps->v, maps->n, sizeof(*maps->v), cmp_map);
}

int core_build_id_at(const struct sd_core *c, uint64_t addr, char out[129])
{
	Elf64_Ehdr eh;
	out[0] = '\0';
	if (core_read(c, addr, &eh, sizeof(eh)) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 256)
		return -ENOENT;
	Elf64_Phdr ph[256];
	size_t phlen = eh.e_phnum * sizeof(Elf64_Phdr);
	if (eh.e_phoff > 1u << 20 || core_read(c, addr + eh.e_phoff, ph, phlen) != phlen)
		return -ENOENT;
	/* The notes' addresses are file vaddrs: the first load segment's
	 * page is at ADDR. */
	uint64_t base = UINT64_MAX;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 && base == UINT64_MAX)
			base = ph[i].p_vaddr;
	if (base == UINT64_MAX)
		return -ENOENT;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 65536)
			continue;
		size_t n = (size_t)ph[i].p_filesz;
		uint8_t *buf = sd_xmalloc(n + 1);
		if (core_read(c, addr + ph[i].p_vaddr - base, buf, n) != n) {
			free(buf);
			continue;
		}
		size_t off = 0;
		while (off + sizeof(Elf64_Nhdr) <= n) {
			Elf64_Nhdr h;
			memcpy(&h, buf + off, sizeof(h));
			size_t nsz = ((size_t)h.n_namesz + 3) & ~(size_t)3;
			size_t dsz = ((size_t)h.n_descsz + 3) & ~(size_t)3;
			size_t body = off + sizeof(h);
			if (nsz > n - body || h.n_descsz > n - body - nsz)
				break;
			if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 &&
			    !memcmp(buf + body, "GNU", 4) && h.n_descsz && h.n_descsz <= 64) {
				sd_hex(out, buf + body + nsz, h.n_descsz);
				free(buf);
				return 0;
			}
			off = body + nsz + dsz;
		}
		free(buf);
	}
	return -ENOENT;
}

const char *core_signal_name(int signo)
{
	static const struct {
		int n;
		const char *name;
	} names[] = {
		{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
		{SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},	  {SIGFPE, "SIGFPE"},
		{SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
		{SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
		{SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGXCPU, "SIGXCPU"},
		{SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].n == signo)
			return names[i].name;
	return NULL;
}

const char *core_sigcode_name(int signo, int code)
{
	switch (code) {
	case SI_USER: return "SI_USER";
	case SI_KERNEL: return "SI_KERNEL";
	case SI_QUEUE: return "SI_QUEUE";
	case SI_TKILL: return "SI_TKILL";
	default: break;
	}
	if (signo == SIGSEGV && code == SEGV_MAPERR)
		return "SEGV_MAPERR";
	if (signo == SIGSEGV && code == SEGV_ACCERR)
		return "SEGV_ACCERR";
	if (signo == SIGBUS && code == BUS_ADRALN)
		return "BUS_ADRALN";
	if (signo == SIGBUS && code == BUS_ADRERR)
		return "BUS_ADRERR";
	if (signo == SIGFPE && code == FPE_INTDIV)
		return "FPE_INTDIV";
	if (signo == SIGILL && code == ILL_ILLOPN)
		return "ILL_ILLOPN";
	return NULL;
}

int core_signal_dumps(int signo)
{
	switch (signo) {
	case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS:
	case SIGFPE: case SIGSEGV: case SIGXCPU: case SIGXFSZ: case SIGSYS:
		return 1;
	default:
		return 0;
	}
}
