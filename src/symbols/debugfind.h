// SPDX-License-Identifier: MIT
// Where a module's separate debug file is looked for, done here instead
// of by libdwfl's own search (which opens what it finds blocking and
// follows the target's links into our root): every candidate through the
// safe opener (saferead.h), kept only when it is the module's.
#ifndef SD_DEBUGFIND_H
#define SD_DEBUGFIND_H

#include <gelf.h>

/* The debug file of the module whose file is FILE_NAME (a path as
 * saferead.h spells it: "/proc/PID/root/..." inside the target's root),
 * with build-id ID (LEN bytes; LEN <= 0: none) and .gnu_debuglink LINK
 * (may be NULL) of CRC. Looked for, in this order, each candidate kept
 * only when its build-id note is ID (without one: its CRC is CRC):
 *   1. inside the target's root: /usr/lib/debug/.build-id/XX/REST.debug,
 *      then LINK beside the file, in .debug/ beside it, and under
 *      /usr/lib/debug/ + the file's folder;
 *   2. on the host: the same build-id path, then /usr/lib/debug/ +
 *      folder + LINK.
 * (The inflated cache, debugcache.h, is asked before this by the caller:
 * it only holds files that matched the build-id they are filed under.)
 * Returns a descriptor open for reading (the caller's) and the path in
 * *PATH (heap, the caller's), or -1. Never blocks. */
int debugfind_search(const char *file_name, const char *link, GElf_Word crc,
		     const unsigned char *id, int len, char **path);

/* The dwz alternate file NAME (.gnu_debugaltlink) the debug file
 * FILE_NAME asks for: absolute (inside the target's root first when
 * FILE_NAME is in one, then on the host) or relative to FILE_NAME's
 * folder, through the safe opener. Its build-id is libdw's to check.
 * Returns the descriptor with *PATH (heap), or -1. */
int debugfind_altfile(const char *file_name, const char *name, char **path);

#endif
