// SPDX-License-Identifier: MIT
// Local read-only images of the target's ELF files (or of its vdso), with
// what unwinding needs from them: load segments, .eh_frame_hdr, build-id.
// Images are shared across targets and snapshots, keyed by file identity.
#ifndef SD_ELFCACHE_H
#define SD_ELFCACHE_H

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

struct sd_dwcfi;

struct sd_load {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

struct sd_elf {
	char *path;          /* the path it was opened by */
	int fd;              /* -1 for memory images */
	const uint8_t *data; /* the whole file, read-only */
	size_t size;
	int mapped;          /* data is an mmap (else heap) */
	dev_t dev;
	ino_t ino;
	int type;            /* ET_EXEC or ET_DYN */
	char build_id[129];  /* hex, "" if none */
	struct sd_load loads[16];
	int nloads;
	int has_eh_frame_hdr;
	uint64_t eh_frame_hdr_vaddr, eh_frame_hdr_size;
	/* .debug_frame, read on first use by elfcache_debug_frame() */
	struct sd_dwcfi *debug_frame;
	int debug_frame_state; /* 0 not read, 1 read, -1 none */
	int refs;
	struct sd_elf *next;
};

/* Open (or find in the cache) the ELF file at PATH, without blocking and
 * without taking a controlling terminal. The returned image is
 * referenced; drop it with elfcache_put(). NULL on error, ERR filled. */
struct sd_elf *elfcache_open(const char *path, struct sd_error *err);
/* The same for a file already open as FD (taken over: closed on error or
 * when the cache holds that file already), named NAME. Anything but a
 * regular file is refused before a byte is read. */
struct sd_elf *elfcache_open_fd(int fd, const char *name, struct sd_error *err);
/* An image of BYTES (copied) named NAME, e.g. the vdso. Not cached. */
struct sd_elf *elfcache_from_memory(const char *name, const void *bytes, size_t len,
				    struct sd_error *err);
void elfcache_put(struct sd_elf *e);

/* Parse the headers of an image already in memory. Returns 0 or -EINVAL.
 * Exposed for fuzzing and unit tests. */
int elfcache_parse(struct sd_elf *e);

/* The load segment whose file bytes hold virtual address VADDR of the file
 * (bias removed), or NULL. */
const struct sd_load *elfcache_load_at(const struct sd_elf *e, uint64_t vaddr);
/* Translate a virtual address of the file (bias removed) to a file offset.
 * Returns 0 and *OFF, or -1 if not backed by file bytes. */
int elfcache_vaddr_to_offset(const struct sd_elf *e, uint64_t vaddr, uint64_t *off);

/* The image's .debug_frame index (read and inflated on the first call), or
 * NULL when it has none. Lives as long as the image. */
const struct sd_dwcfi *elfcache_debug_frame(struct sd_elf *e);

/* Copy LEN bytes at file-relative virtual address VADDR. 0 or -1. */
int elfcache_read(const struct sd_elf *e, uint64_t vaddr, void *buf, size_t len);

#endif
