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

#endif
