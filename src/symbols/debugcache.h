// SPDX-License-Identifier: MIT
// A cache of debug files with their compressed sections inflated
// (debugimage.h), kept by build-id on disk when the user asks for it: the
// copy opens without inflating anything.
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

/* Put the inflated image of a debug file open as IMAGE (debugimage.h;
 * build-id BUILD_ID, LEN bytes) into the cache: within the cache's size
 * cap, written to a temporary file and renamed into place; not when the
 * image names a dwz alternate file (named relative to the debug file).
 * IMAGE's offset is untouched. Anything failing leaves the cache as it
 * was. Never prints. */
void debugcache_add(int image, const unsigned char *build_id, size_t len);

#endif
