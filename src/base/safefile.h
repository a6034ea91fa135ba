// SPDX-License-Identifier: MIT
// The one way stackdump creates files (saved snapshots, recordings, reports,
// profiles, the debug cache, the shell's history): folders walked one
// component at a time and trusted only when no other user can change them,
// files created new under unpredictable names and renamed into place, and
// nothing another user planted (a symbolic link, a FIFO, a file of theirs)
// ever followed or written into.
#ifndef SD_SAFEFILE_H
#define SD_SAFEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util.h"

/* Flags of safefile_opendir() and safefile_begin(). */
#define SAFEFILE_MKDIR 1       /* create missing folders (0700, umask on top) */
#define SAFEFILE_OWN_DIR 2     /* the last folder must be one's own: a sticky
				* folder others write into (/tmp) is refused */
#define SAFEFILE_NO_DIR_SYNC 4 /* safefile_commit() leaves the folder's fsync
				* to the next file written into it */

/* Whether UID counts as the user running stackdump: root, the effective
 * user, or the user who ran sudo (SUDO_UID, when we run as root). */
int safefile_trusted_uid(uid_t uid);

/* Open the folder PATH ("" or NULL: the current one) for creating files in
 * it, walking it one component at a time with openat(O_DIRECTORY |
 * O_NOFOLLOW): a symbolic link anywhere in the path is refused, and so is
 * any folder owned by someone untrusted (safefile_trusted_uid) or writable
 * by group or others without the sticky bit. A folder others may write into
 * but sticky (/tmp) is accepted on the way, and as the last folder only
 * without SAFEFILE_OWN_DIR (*STICKY, may be NULL, is then 1: files must be
 * created O_EXCL, which safefile_begin always does). SAFEFILE_MKDIR creates
 * what is missing, mode 0700. Returns a descriptor (O_RDONLY|O_DIRECTORY,
 * the caller's) or a negative errno with ERR naming the folder, the reason
 * and the remedy. */
int safefile_opendir(const char *path, int flags, int *sticky, struct sd_error *err);

/* A file being written: the temporary name it gets until
 * safefile_commit() renames it into place, or a descriptor written through
 * (stdout, a descriptor the caller handed us, a character device). */
struct safefile {
	int fd;       /* write here */
	int dirfd;    /* -1 when written through */
	int flags;
	int through;  /* 1: fd is written through, nothing to rename */
	int own_fd;   /* 1: fd is ours to close */
	char *path;   /* as asked, for messages */
	char *base;   /* the last component */
	char tmp[96]; /* temporary name inside dirfd */
};

/* Start writing PATH with MODE (0600 for everything stackdump writes; the
 * umask applies on top). "-", "/dev/stdout", "/dev/stderr" and
 * "/dev/fd/N" naming a descriptor open in this process are written
 * through (nothing is created), and so is an existing character device
 * (/dev/null, a terminal). Otherwise PATH's folder goes through
 * safefile_opendir (FLAGS), an existing PATH must be a regular file of a
 * trusted user (a symbolic link, a FIFO, a socket, a device of another
 * kind, a folder or another user's file is refused, never followed), and
 * the data go to a new file (O_CREAT|O_EXCL|O_NOFOLLOW) under an
 * unpredictable hidden name ".BASE.tmp.PID.RANDOM" beside it. Returns 0
 * with F filled in, or a negative errno with ERR (F then needs nothing). */
int safefile_begin(struct safefile *f, const char *path, unsigned mode, int flags,
		   struct sd_error *err);

/* Write LEN bytes of DATA to F. 0 or a negative errno with ERR. */
int safefile_write(struct safefile *f, const void *data, size_t len, struct sd_error *err);

/* Finish F: fsync, rename the temporary file over PATH (a rename never
 * follows what has the name), fsync the folder (unless
 * SAFEFILE_NO_DIR_SYNC). F is released either way; on error the temporary
 * file is removed and PATH is untouched. 0 or a negative errno with ERR. */
int safefile_commit(struct safefile *f, struct sd_error *err);

/* Give F up: the temporary file is removed, PATH untouched. */
void safefile_abort(struct safefile *f);

/* A stdio stream writing to F (a duplicate of its descriptor): fclose()
 * it before safefile_commit(). NULL on failure (errno set). */
FILE *safefile_stream(struct safefile *f);

/* safefile_begin + write + commit of one buffer. *WRITTEN (may be NULL)
 * gets LEN on success. */
int safefile_put(const char *path, const void *data, size_t len, unsigned mode, int flags,
		 uint64_t *written, struct sd_error *err);

/* Open (creating it, MODE) the file NAME of our own inside the folder
 * DIRFD (from safefile_opendir) for reading and writing (APPEND: appending),
 * never following a symbolic link, never blocking on a FIFO: only a
 * regular file owned by a trusted user is accepted. For the files a folder
 * keeps across runs (a lock file, the shell's history). Returns the
 * descriptor or a negative errno with ERR naming DIRNAME/NAME. */
int safefile_open_own(int dirfd, const char *dirname, const char *name, unsigned mode, int append,
		      struct sd_error *err);

#endif
