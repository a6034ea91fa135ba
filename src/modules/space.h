// SPDX-License-Identifier: MIT
// The address space of a target as the stages below it see it: the
// process, its memory map, its modules (ELF images and load biases) and
// the module holding an address. The target (target.c) keeps it up to
// date; unwind.c and symbols.c read it and never see the target itself.
#ifndef SD_SPACE_H
#define SD_SPACE_H

#include <stdint.h>
#include <sys/types.h>

#include "elfcache.h"
#include "procfs.h"

/* One loaded module of the target. */
struct sd_tmod {
	struct sd_elf *elf;	       /* referenced, NULL if it could not be opened */
	uint64_t start, end;	       /* lowest and highest address of its mappings */
	uint64_t bias;		       /* runtime address minus file vaddr */
	uint64_t text_start, text_end; /* executable range */
	char *path;		       /* as in maps */
	const char *name;	       /* basename of path, without " (deleted)" */
	char *name_buf;
	const char *open_err; /* why elf is NULL */
	int is_vdso;
	void *dwmod; /* Dwfl_Module *, owned by the symbols session */
	/* unwind table, filled lazily by unwind.c */
	int table_state; /* 0 unknown, 1 ready, -1 none */
	uint64_t table_hdr, table_data, table_count;
};

struct sd_space {
	pid_t pid;
	struct sd_maps maps;
	struct sd_tmod *mods; /* sorted by start, not overlapping */
	size_t nmods;
	unsigned generation;  /* bumped when the modules change */
	uint64_t maps_misses; /* unwinds that met an address the maps lack */
	/* Where the process's memory is read when it is not a live process
	 * (a core file): READ_MEM(READ_ARG, ADDR, BUF, LEN) returns the bytes
	 * copied. NULL: the live process PID. */
	ssize_t (*read_mem)(void *arg, uint64_t addr, void *buf, size_t len);
	void *read_arg;
};

/* The module holding ADDR, or NULL. */
struct sd_tmod *space_module_at(struct sd_space *sp, uint64_t addr);

#endif
