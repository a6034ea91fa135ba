// SPDX-License-Identifier: MIT
// A cache of debug files with their compressed sections inflated. libdw
// inflates every compressed debug section of a file when it opens it:
// for Debian's libc6-dbg that is 110 to 160 ms, most of a one-shot dump.
// The inflated copy, kept by build-id, opens in about 10 ms.
#ifndef SD_DEBUGCACHE_H
#define SD_DEBUGCACHE_H

#include <stddef.h>

/* The directory of the cache: $STACKDUMP_DEBUG_CACHE when set (made when
 * missing; empty or "off": no cache), else $XDG_CACHE_HOME/stackdump/debug
 * or $HOME/.cache/stackdump/debug when that directory exists (a dump
 * writes no file unless asked: making the directory is asking). Returns a
 * static string, or NULL when there is none. */
const char *debugcache_dir(void);

/* A descriptor of the inflated copy of the debug file whose build-id is
 * BUILD_ID (LEN bytes), with its path in *PATH (heap, the caller's), or -1
 * when the cache has none (a damaged one is removed). Never prints. */
int debugcache_find(const unsigned char *build_id, size_t len, char **path);

/* When the debug file open as FD (build-id BUILD_ID, LEN bytes) has
 * compressed sections, put its inflated copy into the cache: within the
 * cache's size cap, written to a temporary file and renamed into place.
 * FD's offset is untouched. Anything failing leaves the cache as it was.
 * Never prints. */
void debugcache_add(int fd, const unsigned char *build_id, size_t len);

#endif
