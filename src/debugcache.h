// SPDX-License-Identifier: MIT
// A cache of debug files with their compressed sections inflated. libdw
// inflates every compressed debug section of a file when it opens it:
// for Debian's libc6-dbg that is 110 to 160 ms, most of a one-shot dump.
// The inflated copy, kept by build-id, opens in about 10 ms.
#ifndef SD_DEBUGCACHE_H
#define SD_DEBUGCACHE_H

#include <stddef.h>

/* The directory of the cache: $STACKDUMP_DEBUG_CACHE when set (empty or
 * "off": no cache), else $XDG_CACHE_HOME/stackdump/debug, else
 * $HOME/.cache/stackdump/debug. Returns a static string, or NULL when
 * there is none. */
const char *debugcache_dir(void);

/* For the debug file open as FD whose build-id is BUILD_ID (LEN bytes):
 * when it has compressed sections, a descriptor of its inflated copy in
 * the cache (made now if missing, within the cache's size cap, written to
 * a temporary file and renamed into place), with its path in *PATH (heap,
 * the caller's). Returns -1 (FD untouched) when the file has nothing
 * compressed, there is no cache, or anything fails: the caller uses FD.
 * Never prints. */
int debugcache_open(int fd, const unsigned char *build_id, size_t len, char **path);

#endif
