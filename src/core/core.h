// SPDX-License-Identifier: MIT
// ELF core files as a capture source: the threads' registers, the process
// name and arguments, the mapped files, the auxiliary vector and the
// signal from the notes; the memory from the load segments. Every offset
// and size read from the file is checked against the file's end.
#ifndef SD_CORE_H
#define SD_CORE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "elfcache.h"
#include "procfs.h"
#include "util.h"

/* One thread of the core (NT_PRSTATUS). */
struct sd_core_thread {
	pid_t tid;
	int cursig;	/* the signal it was stopped with, 0 if none */
	struct user_regs_struct regs;
	int have_siginfo; /* an NT_SIGINFO followed its NT_PRSTATUS */
	int si_signo, si_code;
	uint64_t fault_addr;
	char name[16];	/* from stackdump's own note (save --core), else "" */
};

/* One PT_LOAD segment: memory [vaddr, vaddr + memsz), of which the first
 * filesz bytes are in the file at offset. */
struct sd_core_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

/* One NT_FILE entry: the file PATH mapped at [start, end) from offset. */
struct sd_core_file {
	uint64_t start, end, offset;
	char *path;
};

struct sd_core {
	char *path;	       /* as given */
	const uint8_t *data;   /* the whole (decompressed) file, read-only */
	size_t size;
	int mapped;	       /* data is an mmap */
	const char *compression; /* "zstd", "lz4", "xz" or NULL (static) */
	pid_t pid;
	char comm[17];	       /* NT_PRPSINFO's pr_fname */
	char args[81];	       /* and pr_psargs */
	struct sd_core_thread *threads;
	size_t nthreads;
	struct sd_core_seg *segs; /* sorted by vaddr */
	size_t nsegs;
	struct sd_core_file *files;
	size_t nfiles;
	uint64_t *auxv;	       /* (type, value) pairs */
	size_t nauxv;
	uint64_t page_size;    /* NT_FILE's, 4096 when absent */
	int have_prpsinfo;
};

/* A compressed core inflating to more than this is refused (it is
 * written sparse to a temporary file); an uncompressed one is mapped,
 * not read, up to SD_CORE_MAX_MAPPED (sparse cores of huge processes). */
#define SD_CORE_MAX_SIZE ((uint64_t)16 << 30)
#define SD_CORE_MAX_MAPPED ((uint64_t)1 << 40)

/* Parse the core image DATA of SIZE bytes (not copied: it must outlive C)
 * into C (zeroed, but for path, which names the core in messages). Returns 0, or a negative errno with ERR saying
 * what is wrong: not an ELF core, another architecture, a header, segment
 * or note out of the file's bounds. Threads and segments read before a
 * bad note are kept only on success. For fuzzing and the opener. */
int core_parse(struct sd_core *c, const void *data, size_t size, struct sd_error *err);

/* Open the core file PATH (a regular file, no symlink followed at the
 * last component, opened without blocking), mapped read-only; a file
 * compressed with zstd, lz4 or xz (as systemd-coredump keeps them) is
 * decompressed into an unlinked temporary file of mode 0600 first, at
 * most SD_CORE_MAX_SIZE bytes. NULL with ERR on failure. */
struct sd_core *core_open(const char *path, struct sd_error *err);
/* Free C and everything it holds; NULL does nothing. */
void core_free(struct sd_core *c);
/* Release what core_parse filled (not the image). */
void core_release(struct sd_core *c);

/* Copy up to LEN bytes at ADDR of the process's memory into BUF: as many
 * as the core holds contiguously from ADDR (0 when ADDR is not in it). */
size_t core_read(const struct sd_core *c, uint64_t addr, void *buf, size_t len);
/* The same as a capture reader (ARG is the core); returns the count. */
ssize_t core_read_cb(void *arg, uint64_t addr, void *buf, size_t len);

/* The process's memory map as /proc would have shown it: one entry per
 * load segment, named by NT_FILE where a file is mapped there, "[vdso]"
 * at the auxiliary vector's AT_SYSINFO_EHDR; appended to MAPS. */
void core_maps(const struct sd_core *c, struct sd_maps *maps);
/* The value of auxiliary vector entry TYPE, 0 when absent. */
uint64_t core_auxv(const struct sd_core *c, uint64_t type);

/* Open the core file PATH for reading: its last component not a symlink
 * (O_NOFOLLOW), then through the shared opener (saferead_reopen: a
 * regular file of at most MAX_SIZE bytes, opened without blocking: no
 * FIFO waits). Returns the descriptor (close-on-exec) and *SIZE, or a
 * negative errno with ERR. */
int core_safe_open(const char *path, uint64_t max_size, uint64_t *size, struct sd_error *err);

/* The GNU build-id (hex, into OUT of 129 bytes) of the ELF image whose
 * first page the core holds at ADDR (the kernel dumps it for every
 * mapped ELF file). Returns 0, or -ENOENT when the core has no ELF header
 * there or the image no build-id note in the dumped memory. */
int core_build_id_at(const struct sd_core *c, uint64_t addr, char out[129]);

/* The signal's name ("SIGSEGV"), or NULL when unknown; the name of CODE
 * for that signal ("SEGV_MAPERR", "SI_USER"...), or NULL. Static. */
const char *core_signal_name(int signo);
const char *core_sigcode_name(int signo, int code);
/* Is SIGNO a signal whose default action dumps core? */
int core_signal_dumps(int signo);

/* The file for a module of the core: the file mapped at START (its ELF
 * header in the core's memory gives the build-id) whose NT_FILE path is
 * PATH, found under SYSROOT (may be NULL; PATH resolved inside it) first,
 * else at PATH, else by build-id in /usr/lib/debug/.build-id; each
 * candidate opened by the shared opener (saferead.h: no magic links, no
 * blocking, regular files only, size-capped) and kept only when its build-id is the core's. NULL when
 * none matches, with *WHY a heap string naming the module and what was
 * tried ("build-id abc... does not match /usr/lib/x.so"), the caller's to
 * free. A core with no build-id in memory for the module takes the file
 * at the path as it is, and says so in *WHY (still returned). */
struct sd_elf *core_open_module(const struct sd_core *c, const char *sysroot, const char *path,
				uint64_t start, char **why);

#endif
