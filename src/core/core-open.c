// SPDX-License-Identifier: MIT
// Opening a core file: safely (no symlink, no blocking, regular files
// only), mapped read-only; compressed cores (zstd, lz4, xz: what
// systemd-coredump keeps) inflated first into an unlinked 0600 temporary
// file, written sparse, at most SD_CORE_MAX_SIZE bytes.
#include "core.h"
#include "saferead.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

int core_safe_open(const char *path, uint64_t max_size, uint64_t *size, struct sd_error *err)
{
	/* The core itself is named by the user: its last component must not
	 * be a symbolic link (one planted in /tmp would point elsewhere);
	 * then the shared opener's checks (regular file, no blocking, the
	 * size cap). */
	int o = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (o < 0) {
		int en = errno;
		return sd_error_set(err, en, "cannot open %s: %s", path, sd_strerror(en));
	}
	struct stat st;
	if (fstat(o, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(o);
		return sd_error_set(err, ELOOP, "cannot open %s: it is a symbolic link (give the "
				    "file it points to)", path);
	}
	int fd = saferead_reopen(o, max_size, (uid_t)-1, &st, path, err);
	if (fd >= 0)
		*size = (uint64_t)st.st_size;
	return fd;
}

/* An unlinked temporary file of mode 0600 in $TMPDIR (or /tmp). */
static int temp_file(struct sd_error *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || dir[0] != '/')
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == ENOENT)) {
		char tmpl[4096];
		snprintf(tmpl, sizeof(tmpl), "%s/stackdump-core-XXXXXX", dir);
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			unlink(tmpl);
	}
	if (fd < 0)
		return sd_error_set(err, errno, "cannot make a temporary file in %s: %s", dir,
				    sd_strerror(errno));
	return fd;
}

/* Append N bytes of BUF to FD at *OFF, leaving holes for zero pages. */
static int write_sparse(int fd, const uint8_t *buf, size_t n, uint64_t *off)
{
	static const uint8_t zero[4096];
	size_t i = 0;
	while (i < n) {
		size_t k = n - i < 4096 ? n - i : 4096;
		if (k == 4096 && !memcmp(buf + i, zero, k)) {
			i += k;
			*off += k;
			continue;
		}
		ssize_t w = pwrite(fd, buf + i, k, (off_t)*off);
		if (w <= 0)
			return -(w < 0 ? errno : EIO);
		i += (size_t)w;
		*off += (uint64_t)w;
	}
	return 0;
}

enum codec { CODEC_ZSTD, CODEC_XZ, CODEC_LZ4 };

/* Inflate the LZ4 frames of IN (SIZE bytes) into FD from *OFF. */
static int inflate_lz4(const char *path, const uint8_t *in, size_t size, int fd, uint8_t *out,
		       size_t chunk, uint64_t *off, struct sd_error *err)
{
	LZ4F_dctx *z;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&z, LZ4F_VERSION)))
		return sd_error_set(err, ENOMEM, "%s: cannot start the lz4 decoder", path);
	size_t pos = 0, hint = 1;
	int r = 0;
	while (r == 0 && pos < size) {
		size_t src = size - pos, dst = chunk;
		hint = LZ4F_decompress(z, out, &dst, in + pos, &src, NULL);
		if (LZ4F_isError(hint)) {
			r = sd_error_set(err, EINVAL, "%s: corrupt lz4 data (%s)", path,
					 LZ4F_getErrorName(hint));
			break;
		}
		pos += src;
		if (*off + dst > SD_CORE_MAX_SIZE)
			r = -EFBIG;
		else if (write_sparse(fd, out, dst, off) < 0)
			r = -EIO;
		if (!src && !dst)
			break; /* no progress: the input ends inside a frame */
	}
	/* A frame not ended: more output may be held back, or input missing. */
	while (r == 0 && hint) {
		size_t src = 0, dst = chunk;
		hint = LZ4F_decompress(z, out, &dst, in + pos, &src, NULL);
		if (LZ4F_isError(hint) || !dst)
			break;
		if (*off + dst > SD_CORE_MAX_SIZE)
			r = -EFBIG;
		else if (write_sparse(fd, out, dst, off) < 0)
			r = -EIO;
	}
	if (r == 0 && hint)
		r = sd_error_set(err, EINVAL, "%s: truncated lz4 data (the frame does not end)", path);
	LZ4F_freeDecompressionContext(z);
	return r;
}

/* Inflate the CODEC stream of IN (SIZE bytes) into a temporary file.
 * Returns its descriptor and *OUTSIZE, or -errno with ERR. */
static int inflate(const char *path, const uint8_t *in, size_t size, enum codec codec,
		   uint64_t *outsize, struct sd_error *err)
{
	int xz = codec == CODEC_XZ;
	int fd = temp_file(err);
	if (fd < 0)
		return fd;
	enum { CHUNK = 1 << 20 };
	uint8_t *out = sd_xmalloc(CHUNK);
	uint64_t off = 0;
	int r = 0;
	const char *what = xz ? "xz" : codec == CODEC_LZ4 ? "lz4" : "zstd";
	if (codec == CODEC_LZ4) {
		r = inflate_lz4(path, in, size, fd, out, CHUNK, &off, err);
	} else if (xz) {
		lzma_stream s = LZMA_STREAM_INIT;
		if (lzma_stream_decoder(&s, 1ull << 30, LZMA_CONCATENATED) != LZMA_OK) {
			r = sd_error_set(err, ENOMEM, "%s: cannot start the xz decoder", path);
			goto out;
		}
		s.next_in = in;
		s.avail_in = size;
		lzma_ret lr = LZMA_OK;
		while (lr == LZMA_OK && r == 0) {
			s.next_out = out;
			s.avail_out = CHUNK;
			lr = lzma_code(&s, LZMA_FINISH);
			size_t got = CHUNK - s.avail_out;
			if (off + got > SD_CORE_MAX_SIZE)
				r = -EFBIG;
			else if (write_sparse(fd, out, got, &off) < 0)
				r = -EIO;
		}
		lzma_end(&s);
		if (r == 0 && lr != LZMA_STREAM_END)
			r = sd_error_set(err, EINVAL, "%s: corrupt or truncated xz data (%s)", path,
					 lr == LZMA_BUF_ERROR ? "it ends early" : "bad data");
	} else {
		ZSTD_DStream *z = ZSTD_createDStream();
		ZSTD_inBuffer ib = {in, size, 0};
		size_t zr = 1;
		while (r == 0 && ib.pos < ib.size) {
			ZSTD_outBuffer ob = {out, CHUNK, 0};
			zr = ZSTD_decompressStream(z, &ob, &ib);
			if (ZSTD_isError(zr)) {
				r = sd_error_set(err, EINVAL, "%s: corrupt zstd data (%s)", path,
						 ZSTD_getErrorName(zr));
				break;
			}
			if (off + ob.pos > SD_CORE_MAX_SIZE)
				r = -EFBIG;
			else if (write_sparse(fd, out, ob.pos, &off) < 0)
				r = -EIO;
			if (!ob.pos && zr && ib.pos == ib.size)
				break;
		}
		/* Flush what the decoder still holds. */
		while (r == 0 && zr && !ZSTD_isError(zr)) {
			ZSTD_outBuffer ob = {out, CHUNK, 0};
			zr = ZSTD_decompressStream(z, &ob, &ib);
			if (!ob.pos)
				break;
			if (ZSTD_isError(zr) || off + ob.pos > SD_CORE_MAX_SIZE ||
			    write_sparse(fd, out, ob.pos, &off) < 0)
				r = -EIO;
		}
		if (r == 0 && zr != 0)
			r = sd_error_set(err, EINVAL, "%s: truncated zstd data (the frame does not end)",
					 path);
		ZSTD_freeDStream(z);
	}
	if (r == -EFBIG)
		sd_error_set(err, EFBIG, "%s: refused: it inflates to more than %llu GiB (%s)", path,
			     (unsigned long long)(SD_CORE_MAX_SIZE >> 30), what);
	else if (r == -EIO && !err->msg[0])
		sd_error_set(err, EIO, "%s: cannot write the inflated core to a temporary file", path);
	if (r == 0 && ftruncate(fd, (off_t)off) < 0)
		r = sd_error_set(err, errno, "%s: cannot size the temporary file: %s", path,
				 sd_strerror(errno));
out:
	free(out);
	if (r < 0) {
		close(fd);
		return r;
	}
	*outsize = off;
	return fd;
}

struct sd_core *core_open(const char *path, struct sd_error *err)
{
	struct sd_error local = {0};
	if (!err)
		err = &local;
	uint64_t size;
	int fd = core_safe_open(path, SD_CORE_MAX_MAPPED, &size, err);
	if (fd < 0)
		return NULL;
	if (size < 64) {
		close(fd);
		sd_error_set(err, EINVAL, "%s: not a core file (%llu bytes: truncated in the ELF header)",
			     path, (unsigned long long)size);
		return NULL;
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		sd_error_set(err, errno, "cannot map %s: %s", path, sd_strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	struct sd_core *c = sd_xcalloc(1, sizeof(*c));
	c->path = sd_xstrdup(path);
	const uint8_t *d = map;
	static const uint8_t zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
	static const uint8_t xmagic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
	static const uint8_t lmagic[4] = {0x04, 0x22, 0x4d, 0x18};
	int xz = !memcmp(d, xmagic, 6), lz4 = !memcmp(d, lmagic, 4);
	if (xz || lz4 || !memcmp(d, zmagic, 4)) {
		enum codec codec = xz ? CODEC_XZ : lz4 ? CODEC_LZ4 : CODEC_ZSTD;
		c->compression = xz ? "xz" : lz4 ? "lz4" : "zstd";
		uint64_t out;
		int tfd = inflate(path, d, size, codec, &out, err);
		munmap(map, size);
		if (tfd < 0)
			goto fail;
		if (out == 0) {
			close(tfd);
			sd_error_set(err, EINVAL, "%s: empty once inflated", path);
			goto fail;
		}
		map = mmap(NULL, out, PROT_READ, MAP_PRIVATE, tfd, 0);
		close(tfd);
		if (map == MAP_FAILED) {
			sd_error_set(err, errno, "cannot map the inflated %s: %s", path,
				     sd_strerror(errno));
			goto fail;
		}
		size = out;
	}
	c->data = map;
	c->size = size;
	c->mapped = 1;
	if (core_parse(c, map, size, err) < 0) {
		munmap(map, size);
		c->data = NULL;
		goto fail;
	}
	return c;
fail:
	free(c->path);
	free(c);
	return NULL;
}

void core_free(struct sd_core *c)
{
	if (!c)
		return;
	core_release(c);
	if (c->mapped && c->data)
		munmap((void *)c->data, c->size);
	free(c->path);
	free(c);
}
