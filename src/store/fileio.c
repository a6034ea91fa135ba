// SPDX-License-Identifier: MIT
// Files as saved snapshots and recordings need them: written whole to a
// temporary name, synced and renamed (never half-written), gzip in and out
// with a size bound, and read back whole with a clear error.
#include "snapio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "safefile.h"

int snapio_gzip_buf(const void *in, size_t len, struct strbuf *out, struct sd_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip wrapper, so `zcat` and `gunzip` read the files.
	 * Level 1: snapshot JSON is repetitive enough that the fastest level
	 * already shrinks it about 25 times, at a fraction of level 6's CPU. */
	if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return sd_error_set(err, ENOMEM, "cannot compress: zlib failed to start");
	uLong bound = deflateBound(&zs, (uLong)len);
	out->len = 0;
	strbuf_grow(out, bound + 64);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out->buf;
	zs.avail_out = (uInt)(bound + 64);
	int r = deflate(&zs, Z_FINISH);
	if (r != Z_STREAM_END) {
		deflateEnd(&zs);
		return sd_error_set(err, EIO, "cannot compress: zlib error %d", r);
	}
	out->len = zs.total_out;
	deflateEnd(&zs);
	return 0;
}

int snapio_gunzip(const char *name, const void *in, size_t len, size_t max, char **out,
		  size_t *outlen, struct sd_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return sd_error_set(err, ENOMEM, "%s: cannot decompress: zlib failed to start",
				    name);
	size_t cap = len * 4 + 4096, n = 0;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = sd_xmalloc(cap + 1);
	zs.next_in = (Bytef *)in;
	int r = Z_OK;
	size_t fed = 0;
	for (;;) {
		if (zs.avail_in == 0 && fed < len) {
			size_t chunk = len - fed > (1u << 30) ? (1u << 30) : len - fed;
			zs.next_in = (Bytef *)in + fed;
			zs.avail_in = (uInt)chunk;
			fed += chunk;
		}
		if (n == cap) {
			if (cap > max) {
				inflateEnd(&zs);
				free(buf);
				return sd_error_set(err, EFBIG,
						    "%s: decompresses to more than %zu bytes: not a "
						    "snapshot (or a damaged one)",
						    name, max);
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = sd_xrealloc(buf, cap + 1);
		}
		zs.next_out = (Bytef *)buf + n;
		zs.avail_out = (uInt)(cap - n);
		r = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (r == Z_STREAM_END)
			break;
		if (r == Z_BUF_ERROR && zs.avail_in == 0 && fed >= len) {
			inflateEnd(&zs);
			free(buf);
			return sd_error_set(err, EINVAL,
					    "%s: truncated: the compressed data ends after %zu bytes "
					    "(%zu bytes decompressed)",
					    name, len, n);
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			const char *why = zs.msg ? zs.msg : "invalid data";
			size_t at = (size_t)zs.total_in;
			inflateEnd(&zs);
			free(buf);
			return sd_error_set(err, EINVAL, "%s: corrupted compressed data at byte %zu: %s",
					    name, at, r == Z_MEM_ERROR ? "out of memory" : why);
		}
	}
	size_t used = (size_t)zs.total_in;
	inflateEnd(&zs);
	if (used < len) {
		free(buf);
		return sd_error_set(err, EINVAL,
				    "%s: corrupted: %zu bytes of garbage after the compressed data "
				    "(at byte %zu)",
				    name, len - used, used);
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

int snapio_write_atomic(const char *path, const void *data, size_t len, int flags,
			unsigned mode, uint64_t *written, struct sd_error *err)
{
	struct strbuf zbuf;
	strbuf_init(&zbuf);
	if (flags & SNAPIO_GZIP) {
		int r = snapio_gzip_buf(data, len, &zbuf, err);
		if (r < 0) {
			strbuf_release(&zbuf);
			return r;
		}
		data = zbuf.buf;
		len = zbuf.len;
	}
	/* Created new, never through what another user planted
	 * (safefile.h): a symbolic link or a FIFO at PATH is refused, a
	 * device such as /dev/null is written through. */
	int rc = safefile_put(path, data, len, mode,
			      flags & SNAPIO_NO_DIR_SYNC ? SAFEFILE_NO_DIR_SYNC : 0, written, err);
	strbuf_release(&zbuf);
	return rc;
}

int snapio_read_file(const char *path, char **out, size_t *len, struct sd_error *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return sd_error_set(err, e, "cannot open %s: %s", path, sd_strerror(e));
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sd_error_set(err, e, "cannot read %s: %s", path, sd_strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		if (S_ISDIR(st.st_mode))
			return sd_error_set(err, EISDIR, "%s: is a directory, not a snapshot file",
					    path);
		return sd_error_set(err, EINVAL, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > SNAPIO_MAX_BYTES) {
		close(fd);
		return sd_error_set(err, EFBIG, "%s: too large for a snapshot (%lld bytes)", path,
				    (long long)st.st_size);
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = sd_xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap > SNAPIO_MAX_BYTES) {
				free(buf);
				close(fd);
				return sd_error_set(err, EFBIG, "%s: too large for a snapshot",
						    path);
			}
			cap *= 2;
			buf = sd_xrealloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			return sd_error_set(err, e, "cannot read %s: %s", path, sd_strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b) {
		char *plain;
		size_t pl;
		int r = snapio_gunzip(path, buf, n, SNAPIO_MAX_BYTES, &plain, &pl, err);
		free(buf);
		if (r < 0)
			return r;
		buf = plain;
		n = pl;
	}
	*out = buf;
	*len = n;
	return 0;
}
