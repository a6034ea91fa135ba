// SPDX-License-Identifier: MIT
// The one way stackdump opens a file the target can influence (its mapped
// files, debug files found by build-id, .gnu_debuglink or beside it, DWARF
// packages, its perf map): inside the target's root, never blocking,
// regular files only, of a bounded size.
#ifndef SD_SAFEREAD_H
#define SD_SAFEREAD_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util.h"

/* Default size caps, raised with the environment variable named beside
 * each (a size such as 32G). Debug files pass 1 GiB (Chromium's, LLVM's),
 * and libelf maps them rather than reading them: the cap only keeps a
 * sparse file of a petabyte out. A perf map is read into memory whole. */
#define SAFEREAD_DEBUG_CAP ((uint64_t)64 << 30)   /* STACKDUMP_MAX_DEBUG_FILE */
#define SAFEREAD_PERFMAP_CAP ((uint64_t)256 << 20) /* STACKDUMP_MAX_PERF_MAP */

/* The cap in force: DEFAULT, or the size in the environment variable ENV
 * when it parses as one. */
uint64_t saferead_cap(const char *env, uint64_t def);

/* An O_PATH descriptor of PATH resolved inside the root of process PID
 * (openat2 on /proc/PID/root with RESOLVE_IN_ROOT: its absolute symlinks
 * and ".." stay in its root; no magic links), or, with PID 0, on the host
 * (no magic links). Returns the descriptor or -errno (-ENOSYS before
 * Linux 5.6). */
int saferead_path(pid_t pid, const char *path);

/* The same inside the folder ROOT (a copy of another host's files, such
 * as a core's --sysroot): PATH resolved with RESOLVE_IN_ROOT on ROOT, so
 * that its absolute symlinks and ".." stay under ROOT. Returns the
 * descriptor or -errno. */
int saferead_path_under(const char *root, const char *path);

/* Turn the O_PATH descriptor OPATH (closed here, whatever happens) into a
 * descriptor open for reading (O_RDONLY|O_NONBLOCK|O_NOCTTY), only if it is
 * a regular file of at most CAP bytes and, when OWNER is not (uid_t)-1,
 * owned by OWNER. Nothing else is ever opened: no FIFO to block on, no
 * device to wake. *ST (may be NULL) gets its stat. NAME names it in ERR.
 * Returns the descriptor (the caller's) or a negative errno. */
int saferead_reopen(int opath, uint64_t cap, uid_t owner, struct stat *st, const char *name,
		    struct sd_error *err);

/* saferead_path + saferead_reopen of NAME, a path as stackdump spells
 * them: "/proc/PID/root/REST" is REST inside PID's root, anything else a
 * host path. */
int saferead_open(const char *name, uint64_t cap, uid_t owner, struct stat *st,
		  struct sd_error *err);

#endif
