// SPDX-License-Identifier: MIT
// Debug files made ready for libdw in memory. libdw inflates every
// compressed debug section of a file as it opens it, with zlib: for
// Debian's libc6-dbg that is 32-38 ms of CPU, a third of a one-shot dump
// of 1000 threads. Here libdeflate inflates the sections into a memory
// file (memfd) in about 14 ms, and the location lists, which stackdump
// never reads, are left out.
#ifndef SD_DEBUGIMAGE_H
#define SD_DEBUGIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* debugimage_make() found nothing to gain: use the file as it is. */
#define DEBUGIMAGE_NONE (-1)
/* debugimage_make() found a build-id other than the one asked for. */
#define DEBUGIMAGE_OTHER (-2)

/* The debug file open as FD with its compressed sections inflated and
 * its location lists (.debug_loc, .debug_loclists) left out: a
 * descriptor of a memory file holding the image (the caller's to close),
 * which libelf and libdw open like the file itself. When ID is not NULL,
 * the file's build-id note must be ID (LEN bytes), else DEBUGIMAGE_OTHER.
 * DEBUGIMAGE_NONE when the file has no compressed section, is not a
 * native 64-bit ELF file, uses a compression other than zlib, or anything
 * fails (libelf then inflates it as it always does). FD's offset is
 * untouched. Never prints. */
int debugimage_make(int fd, const unsigned char *id, size_t len);

/* What a debug image may inflate to. The size an inflated section claims
 * is read from the file, so it is bounded: in all at most MAX_TOTAL bytes
 * (default 4 GiB; real debug files inflate past 1 GiB, Chromium's to a few),
 * and each section at most MAX_RATIO times its compressed size (default
 * 1100: zlib cannot do better than about 1032 to 1, so only a claim that is
 * a lie passes it). A section past either is left out (libdw then goes on
 * without it) and the note says which. STACKDUMP_MAX_INFLATE (a size) and
 * STACKDUMP_MAX_INFLATE_RATIO (a number) raise them. */
#define DEBUGIMAGE_MAX_TOTAL ((uint64_t)4 << 30)
#define DEBUGIMAGE_MAX_RATIO 1100
struct debugimage_caps {
	uint64_t max_total;
	uint64_t max_ratio; /* 0: no ratio cap */
};

/* The caps in force: the defaults, raised by the environment. */
void debugimage_caps_default(struct debugimage_caps *c);

/* debugimage_make() under the caps CAPS; when a section is refused, NOTE
 * (NOTESIZE bytes, may be NULL) says which (else it is emptied). */
int debugimage_make_capped(int fd, const unsigned char *id, size_t len,
			   const struct debugimage_caps *caps, char *note, size_t notesize);

#endif
