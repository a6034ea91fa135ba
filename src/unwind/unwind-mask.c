// SPDX-License-Identifier: MIT
// Quiet libunwind's signal masking while we unwind: its references to
// sigprocmask and pthread_sigmask (GOT slots of the libunwind objects
// loaded) are pointed at a wrapper that, for a thread inside our unwinding,
// returns without a system call. Found through dl_iterate_phdr and the
// objects' dynamic relocations; the page of a slot under RELRO is made
// writable only for the write.
#include "unwind-mask.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static __thread int quiet;

void unwind_mask_quiet(int on)
{
	quiet = on;
}

/* What libunwind's lock_acquire and lock_release call. Outside our
 * unwinding, and in every other thread, the real call. */
static int quiet_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (quiet) {
		/* The release that follows hands this back to us, still
		 * quiet: the mask is never really changed. */
		if (old)
			sigemptyset(old);
		return 0;
	}
	return pthread_sigmask(how, set, old);
}

static int quiet_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int e = quiet_pthread_sigmask(how, set, old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

struct hook_state {
	int redirected;
	int err; /* first errno, 0 if none */
};

/* A dynamic entry's address: glibc relocates them in place on x86_64, but
 * not everywhere. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* Write FN into the slot at ADDR; RELRO pages are read-only once the
 * object is relocated, so they go back to read-only after. */
static int write_slot(uintptr_t addr, void *fn, int relro)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = addr & ~(uintptr_t)(pg - 1);
	if (relro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	memcpy((void *)addr, &fn, sizeof(fn));
	if (relro && mprotect((void *)page, (size_t)pg, PROT_READ) < 0)
		return -errno;
	return 0;
}

/* Redirect the mask slots among N relocations at RELA. */
static void hook_relocs(const struct dl_phdr_info *info, const ElfW(Rela) * rela, size_t n,
			const ElfW(Sym) * symtab, const char *strtab, uintptr_t relro_lo,
			uintptr_t relro_hi, struct hook_state *st)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(rela[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		const char *name = strtab + symtab[ELF64_R_SYM(rela[i].r_info)].st_name;
		void *fn = NULL;
		if (!strcmp(name, "sigprocmask"))
			fn = (void *)quiet_sigprocmask;
		else if (!strcmp(name, "pthread_sigmask"))
			fn = (void *)quiet_pthread_sigmask;
		if (!fn)
			continue;
		uintptr_t slot = info->dlpi_addr + rela[i].r_offset;
		int r = write_slot(slot, fn, slot >= relro_lo && slot < relro_hi);
		if (r < 0 && !st->err)
			st->err = -r;
		else if (r == 0)
			st->redirected++;
	}
}

static int hook_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct hook_state *st = arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libunwind"))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = info->dlpi_addr + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmpsz = 0, relasz = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmpsz = dyn->d_un.d_val; break;
		case DT_RELA: rela = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		default: break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel)
		hook_relocs(info, jmprel, jmpsz / sizeof(*jmprel), symtab, strtab, relro_lo,
			    relro_hi, st);
	if (rela)
		hook_relocs(info, rela, relasz / sizeof(*rela), symtab, strtab, relro_lo, relro_hi,
			    st);
	return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct hook_state result;

static void install(void)
{
	dl_iterate_phdr(hook_object, &result);
}

int unwind_mask_install(void)
{
	pthread_once(&once, install);
	return result.err ? -result.err : result.redirected;
}
