// SPDX-License-Identifier: MIT
// Writing a snapshot as a small ELF core that gdb and eu-stack open: the
// threads' registers, the stack windows and lock words the snapshot
// copied, and what a debugger needs to find the modules (the auxiliary
// vector, the mapped files, each ELF module's headers, the vdso and the
// dynamic linker's list of libraries), instead of the whole address space.
#ifndef SD_CORE_WRITE_H
#define SD_CORE_WRITE_H

#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"
#include "snapshot.h"
#include "util.h"

/* The owner of stackdump's own note: the threads' names (which a kernel
 * core does not keep), one (uint32 tid, NUL-terminated name) after the
 * other, note type CORE_NOTE_THREAD_NAMES. */
#define CORE_NOTE_OWNER "STACKDUMP"
#define CORE_NOTE_THREAD_NAMES 1

struct core_write_opts {
	pid_t pid;		    /* the live process S is of: the memory a
				     * debugger needs besides S's copies (module
				     * headers, the vdso, the dynamic linker's
				     * list) is read from it, without a stop */
	const struct sd_maps *maps; /* its memory map as S saw it */
	int full_cmdline;	    /* NT_PRPSINFO's arguments: the whole
				     * command line (1) or only the program (0,
				     * arguments can hold secrets) */
};

/* What core_write wrote. */
struct core_write_stats {
	uint64_t bytes;	  /* the file's size */
	uint64_t memory;  /* bytes of the process's memory in it */
	size_t threads;	  /* threads with their registers */
	size_t no_regs;	  /* threads of S left out: no registers read */
	size_t segments;  /* PT_LOAD segments (with data or not) */
	size_t files;	  /* NT_FILE entries */
	size_t libraries; /* link_map entries copied (the executable's too) */
};

/* Write S (taken with keep_capture: its registers and stack copies still
 * there) as an ELF core to PATH, mode 0600, through the safe writer
 * (safefile.h: a temporary file renamed into place, nothing planted at
 * PATH followed; on any error, a full disk too, nothing is left at PATH
 * and a file already there is untouched). One NT_PRSTATUS per thread
 * with registers (S's first thread whose tid is the process's first),
 * NT_PRPSINFO, NT_AUXV and NT_FILE, stackdump's thread-name note; one
 * PT_LOAD per piece of each mapping of O->maps, holding data where S
 * copied it (stacks, lock words) or where it was read from O->pid now
 * (the first pages of each mapped ELF file, the vdso, the executable's
 * dynamic section, r_debug, each link_map and its name), the rest with
 * no bytes in the file. Returns 0 with *ST filled in (may be NULL), or a
 * negative errno with ERR. */
int core_write(const char *path, const struct sd_snapshot *s, const struct core_write_opts *o,
	       struct core_write_stats *st, struct sd_error *err);

#endif
