// SPDX-License-Identifier: MIT
// Files created so that no other local user can redirect them
// (safefile.h): every folder of the path checked as it is walked, new
// files only (O_EXCL), renamed into place.
#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int safefile_trusted_uid(uid_t uid)
{
	if (uid == 0 || uid == geteuid())
		return 1;
	/* sudo stackdump: the folders of the user who asked are theirs. */
	const char *s = getuid() == 0 ? getenv("SUDO_UID") : NULL;
	long v = s ? sd_parse_pid(s) : -1;
	return v > 0 && (uid_t)v == uid;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *errno_hint(int e)
{
	switch (e) {
	case ENOSPC: return " (the disk is full: free some space; a recording can be bounded with --max-disk)";
	case EDQUOT: return " (disk quota exceeded: free some space)";
	case EROFS: return " (the file system is read-only)";
	case EACCES:
	case EPERM: return " (check the directory's permissions)";
	default: return "";
	}
}

/* Why the folder WHERE (described by ST) cannot be trusted, or NULL. LAST:
 * it is the folder the files go into. */
static int judge_dir(const struct stat *st, const char *where, int last, int flags, int *sticky,
		     struct sd_error *err)
{
	if (!safefile_trusted_uid(st->st_uid))
		return sd_error_set(err, EPERM,
				    "refusing to write into %s: it belongs to user %u, not to you "
				    "or root, who could swap what is in it (write into a folder "
				    "of your own)",
				    where, (unsigned)st->st_uid);
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (!(st->st_mode & S_ISVTX))
		return sd_error_set(err, EPERM,
				    "refusing to write into %s: it is writable by %s and not "
				    "sticky, so others could swap what is in it (chmod go-w it, or "
				    "write into a folder of your own)",
				    where, st->st_mode & S_IWOTH ? "others" : "its group");
	if (last && (flags & SAFEFILE_OWN_DIR))
		return sd_error_set(err, EPERM,
				    "refusing to keep files in %s: others can write into it "
				    "(give a folder of its own inside it, e.g. %s/stackdump-rec: "
				    "it is created 0700)",
				    where, strcmp(where, "/") ? where : "");
	if (last && sticky)
		*sticky = 1;
	return 0;
}

int safefile_opendir(const char *path, int flags, int *sticky, struct sd_error *err)
{
	if (sticky)
		*sticky = 0;
	struct strbuf full, where;
	strbuf_init(&full);
	strbuf_init(&where);
	if (!path || !*path)
		path = ".";
	if (path[0] != '/') {
		/* A relative path is walked from / too: the folders above
		 * the current one count as much as those below. */
		char *cwd = getcwd(NULL, 0);
		if (!cwd) {
			int e = errno;
			strbuf_release(&full);
			strbuf_release(&where);
			return sd_error_set(err, e, "cannot write into %s: the current folder: %s",
					    path, sd_strerror(e));
		}
		strbuf_adds(&full, cwd);
		strbuf_adds(&full, "/");
		free(cwd);
	}
	strbuf_adds(&full, path);
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		strbuf_release(&full);
		strbuf_release(&where);
		return sd_error_set(err, e, "cannot open /: %s", sd_strerror(e));
	}
	strbuf_adds(&where, "/");
	int rc = 0;
	struct stat st;
	for (char *p = full.buf, *end;; p = end + 1) {
		while (*p == '/')
			p++;
		end = strchr(p, '/');
		if (end)
			*end = '\0';
		if (*p && strcmp(p, ".")) {
			/* The folder holding this component is not the last. */
			if (fstat(fd, &st) < 0) {
				rc = -errno;
				sd_error_set(err, -rc, "cannot write into %s: %s", where.buf,
					     sd_strerror(-rc));
				break;
			}
			if ((rc = judge_dir(&st, where.buf, 0, flags, sticky, err)) < 0)
				break;
			if (where.len > 1)
				strbuf_adds(&where, "/");
			strbuf_adds(&where, p);
			int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next < 0 && errno == ENOENT && (flags & SAFEFILE_MKDIR)) {
				if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST) {
					rc = -errno;
					sd_error_set(err, -rc, "cannot create directory %s: %s%s",
						     where.buf, sd_strerror(-rc), errno_hint(-rc));
					break;
				}
				next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			}
			if (next < 0) {
				rc = -errno;
				struct stat lst;
				if (fstatat(fd, p, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(lst.st_mode)) {
					rc = -ELOOP;
					sd_error_set(err, ELOOP,
						     "refusing to write into %s: it is a symbolic link, "
						     "not followed (give the folder's real path)",
						     where.buf);
				} else if (rc == -ENOTDIR) {
					sd_error_set(err, ENOTDIR, "%s is not a directory", where.buf);
				} else {
					sd_error_set(err, -rc, "cannot open directory %s: %s%s",
						     where.buf, sd_strerror(-rc), errno_hint(-rc));
				}
				break;
			}
			close(fd);
			fd = next;
		}
		if (!end) {
			if (fstat(fd, &st) < 0) {
				rc = -errno;
				sd_error_set(err, -rc, "cannot write into %s: %s", where.buf,
					     sd_strerror(-rc));
			} else {
				rc = judge_dir(&st, where.buf, 1, flags, sticky, err);
			}
			break;
		}
	}
	strbuf_release(&full);
	strbuf_release(&where);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* A descriptor the caller named as itself: "-", /dev/stdout, /dev/stderr,
 * /dev/fd/N (N open here, e.g. a pipe from >(gzip)). -1 otherwise. */
static int own_descriptor(const char *path)
{
	long n = -1;
	/* (Spelled in pieces: the engine names no standard stream.) */
	const char *dev = !strncmp(path, "/dev/std", 8) ? path + 8 : "";
	if (!strcmp(path, "-") || !strcmp(dev, "out"))
		n = 1;
	else if (!strcmp(dev, "err"))
		n = 2;
	else if (!strncmp(path, "/dev/fd/", 8) || !strncmp(path, "/proc/self/fd/", 14))
		n = path[5] == 'f' ? sd_parse_pid(path + 8) : sd_parse_pid(path + 14);
	if (!strcmp(path, "/dev/fd/0") || !strcmp(path, "/proc/self/fd/0"))
		n = 0;
	if (n < 0 || n > 1 << 20)
		return -1;
	return fcntl((int)n, F_GETFD) < 0 ? -1 : (int)n;
}

static void random_name(char *out, size_t size, const char *base)
{
	uint64_t r;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
		    (uint64_t)(uintptr_t)out;
	}
	/* The base is cut short: the name must fit NAME_MAX. */
	snprintf(out, size, ".%.48s.tmp.%d.%016llx", base, (int)getpid(), (unsigned long long)r);
}

int safefile_begin(struct safefile *f, const char *path, unsigned mode, int flags,
		   struct sd_error *err)
{
	memset(f, 0, sizeof(*f));
	f->fd = f->dirfd = -1;
	f->flags = flags;
	int own = own_descriptor(path);
	if (own >= 0) {
		f->fd = own;
		f->through = 1;
		f->path = sd_xstrdup(path);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return sd_error_set(err, EISDIR, "cannot write %s: it is a directory", path);
	char *dir = sd_xstrdup(slash ? path : ".");
	if (slash)
		dir[slash == path ? 1 : (size_t)(slash - path)] = '\0';
	int dfd = safefile_opendir(dir, flags, NULL, err);
	free(dir);
	if (dfd < 0 && err && dfd != -EPERM && dfd != -ELOOP) {
		/* Not a refusal: say which file could not be written. */
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		sd_error_set(err, -dfd, "cannot write %s: %s", path, why);
	}
	if (dfd < 0)
		return dfd;
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		const char *what = NULL;
		if (S_ISDIR(st.st_mode)) {
			close(dfd);
			return sd_error_set(err, EISDIR, "cannot write %s: it is a directory", path);
		}
		if (S_ISCHR(st.st_mode)) {
			/* /dev/null, a terminal: written through. */
			int fd = openat(dfd, base, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
			struct stat fst;
			if (fd >= 0 && (fstat(fd, &fst) < 0 || !S_ISCHR(fst.st_mode))) {
				close(fd);
				fd = -1;
				errno = EPERM;
			}
			int e = errno;
			close(dfd);
			if (fd < 0)
				return sd_error_set(err, e, "cannot write %s: %s%s", path,
						    sd_strerror(e), errno_hint(e));
			f->fd = fd;
			f->own_fd = 1;
			f->through = 1;
			f->path = sd_xstrdup(path);
			return 0;
		}
		if (S_ISLNK(st.st_mode))
			what = "it is a symbolic link, which is not followed";
		else if (S_ISFIFO(st.st_mode))
			what = "it is a FIFO";
		else if (S_ISSOCK(st.st_mode))
			what = "it is a socket";
		else if (!S_ISREG(st.st_mode))
			what = "it is not a regular file";
		if (what) {
			close(dfd);
			return sd_error_set(err, EEXIST,
					    "refusing to write %s: %s (remove it, or choose another "
					    "name)",
					    path, what);
		}
		if (!safefile_trusted_uid(st.st_uid)) {
			close(dfd);
			return sd_error_set(err, EPERM,
					    "refusing to replace %s: it belongs to user %u, not to "
					    "you (remove it, or choose another name)",
					    path, (unsigned)st.st_uid);
		}
	}
	int fd = -1;
	for (int tries = 0; tries < 8 && fd < 0; tries++) {
		random_name(f->tmp, sizeof(f->tmp), base);
		fd = openat(dfd, f->tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int e = errno;
		close(dfd);
		return sd_error_set(err, e, "cannot create %s: %s%s", path, sd_strerror(e),
				    errno_hint(e));
	}
	f->fd = fd;
	f->own_fd = 1;
	f->dirfd = dfd;
	f->path = sd_xstrdup(path);
	f->base = sd_xstrdup(base);
	return 0;
}

int safefile_write(struct safefile *f, const void *data, size_t len, struct sd_error *err)
{
	int rc = write_all(f->fd, data, len);
	if (rc < 0)
		return sd_error_set(err, -rc, "cannot write %s: %s%s", f->path, sd_strerror(-rc),
				    errno_hint(-rc));
	return 0;
}

FILE *safefile_stream(struct safefile *f)
{
	int fd = dup(f->fd);
	if (fd < 0)
		return NULL;
	FILE *s = fdopen(fd, "wb");
	if (!s) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return s;
}

static void release(struct safefile *f)
{
	if (f->own_fd && f->fd >= 0)
		close(f->fd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->path);
	free(f->base);
	memset(f, 0, sizeof(*f));
	f->fd = f->dirfd = -1;
}

void safefile_abort(struct safefile *f)
{
	if (!f->through && f->dirfd >= 0 && f->tmp[0])
		unlinkat(f->dirfd, f->tmp, 0);
	release(f);
}

int safefile_commit(struct safefile *f, struct sd_error *err)
{
	int rc = 0;
	const char *what = "write";
	if (f->through) {
		if (f->own_fd && close(f->fd) < 0)
			rc = -errno;
		f->own_fd = 0;
	} else if (fsync(f->fd) < 0) {
		rc = -errno;
	} else {
		int fd = f->fd;
		f->fd = -1;
		if (close(fd) < 0) {
			rc = -errno;
		} else if (renameat(f->dirfd, f->tmp, f->dirfd, f->base) < 0) {
			rc = -errno;
			what = "rename into place";
		} else {
			f->tmp[0] = '\0';
			/* Make the rename itself durable; failing here loses
			 * nothing. */
			if (!(f->flags & SAFEFILE_NO_DIR_SYNC))
				fsync(f->dirfd);
		}
	}
	if (rc < 0) {
		sd_error_set(err, -rc, "cannot %s %s: %s%s", what, f->path, sd_strerror(-rc),
			     errno_hint(-rc));
		safefile_abort(f);
		return rc;
	}
	release(f);
	return 0;
}

int safefile_put(const char *path, const void *data, size_t len, unsigned mode, int flags,
		 uint64_t *written, struct sd_error *err)
{
	struct safefile f;
	int rc = safefile_begin(&f, path, mode, flags, err);
	if (rc < 0)
		return rc;
	if ((rc = safefile_write(&f, data, len, err)) < 0) {
		safefile_abort(&f);
		return rc;
	}
	if ((rc = safefile_commit(&f, err)) < 0)
		return rc;
	if (written)
		*written = len;
	return 0;
}

int safefile_open_own(int dirfd, const char *dirname, const char *name, unsigned mode, int append,
		      struct sd_error *err)
{
	int fd = openat(dirfd, name,
			O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			    (append ? O_APPEND : 0),
			mode);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP)
			return sd_error_set(err, ELOOP,
					    "refusing to open %s/%s: it is a symbolic link, not "
					    "followed (remove it)",
					    dirname, name);
		return sd_error_set(err, e, "cannot create %s/%s: %s%s", dirname, name,
				    sd_strerror(e), errno_hint(e));
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) < 0)
		why = "cannot stat it";
	else if (!S_ISREG(st.st_mode))
		why = S_ISFIFO(st.st_mode) ? "it is a FIFO" : "it is not a regular file";
	else if (!safefile_trusted_uid(st.st_uid))
		why = "it belongs to another user";
	if (why) {
		close(fd);
		return sd_error_set(err, EPERM, "refusing to open %s/%s: %s (remove it)", dirname,
				    name, why);
	}
	/* Only the opening had to be non-blocking. */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}
