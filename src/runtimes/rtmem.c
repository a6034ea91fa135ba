// SPDX-License-Identifier: MIT
// The typed reader's memory half (rtmem.h): bounded, checked reads of a
// target's memory, live or copied, and the composite values (fields,
// strings, slices) its DWARF types describe.
#include "rtmem.h"

#include "space.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "capture.h"

static ssize_t read_pid(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct rtmem *m = arg;
	return capture_read(m->pid, addr, buf, len);
}

static ssize_t read_copy(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct rtmem *m = arg;
	if (addr < m->base || addr - m->base > m->copy_len || len > m->copy_len - (addr - m->base))
		return -EFAULT;
	memcpy(buf, m->copy + (addr - m->base), len);
	return (ssize_t)len;
}

void rtmem_pid_init(struct rtmem *m, pid_t pid, const struct sd_maps *maps)
{
	memset(m, 0, sizeof(*m));
	m->read = read_pid;
	m->arg = m;
	m->pid = pid;
	m->maps = maps;
}

void rtmem_space_init(struct rtmem *m, const struct sd_space *sp)
{
	rtmem_pid_init(m, sp->pid, &sp->maps);
	if (sp->read_mem) { /* a core file: its load segments */
		m->read = sp->read_mem;
		m->arg = sp->read_arg;
	}
}

void rtmem_buf_init(struct rtmem *m, uint64_t base, const void *copy, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->read = read_copy;
	m->arg = m;
	m->base = base;
	m->copy = copy;
	m->copy_len = len;
}

int rtmem_mapped(const struct rtmem *m, uint64_t addr, size_t len)
{
	if (!len || addr + len < addr)
		return len == 0;
	if (!m->maps)
		return 1;
	uint64_t end = addr + len;
	while (addr < end) {
		const struct sd_map *mp = procfs_maps_find(m->maps, addr);
		if (!mp || mp->perms[0] != 'r')
			return 0;
		addr = mp->end;
	}
	return 1;
}

/* Times a reader of a live process reads its maps again, at most: a
 * runtime's structures move to memory mapped after the maps were read (a
 * Go heap that grew, a slice reallocated there), but a corrupt pointer
 * must not cost a read of the maps at every use. */
#define RTMEM_REREADS 8

/* Is [ADDR, ADDR + LEN) readable: by M's maps, or, for a live process,
 * by its maps read again now (what was mapped since they were read),
 * which M keeps and checks from then on. */
static int mapped_now(struct rtmem *m, uint64_t addr, size_t len)
{
	if (rtmem_mapped(m, addr, len))
		return 1;
	if (m->read != read_pid || !m->maps || m->rereads >= RTMEM_REREADS)
		return 0;
	m->rereads++;
	struct sd_maps now = {0};
	if (procfs_read_maps(m->pid, &now, NULL) < 0) {
		procfs_maps_release(&now);
		return 0;
	}
	procfs_maps_release(&m->fresh);
	m->fresh = now;
	m->maps = &m->fresh;
	return rtmem_mapped(m, addr, len);
}

void rtmem_release(struct rtmem *m)
{
	procfs_maps_release(&m->fresh);
	m->maps = NULL;
}

int rtmem_read(struct rtmem *m, uint64_t addr, void *buf, size_t len, const char *what,
	       struct sd_error *err)
{
	if (!what)
		what = "memory";
	if (!mapped_now(m, addr, len))
		return sd_error_set(err, EFAULT, "%s at 0x%llx (%zu bytes) is not mapped", what,
				    (unsigned long long)addr, len);
	m->reads++;
	ssize_t n = m->read(m->arg, addr, buf, len);
	if (n < 0 || (size_t)n != len)
		return sd_error_set(err, EFAULT, "cannot read %s at 0x%llx (%zu bytes)", what,
				    (unsigned long long)addr, len);
	m->bytes += len;
	return 0;
}

size_t rtmem_readv(struct rtmem *m, struct rtmem_iov *v, size_t n)
{
	size_t good = 0, i = 0;
	if (m->read != read_pid) { /* a core file or a copy: range by range */
		for (; i < n; i++)
			good += (v[i].ok = rtmem_read(m, v[i].addr, v[i].buf, v[i].len, NULL, NULL) == 0);
		return good;
	}
	struct iovec loc[RTMEM_IOV_MAX], rem[RTMEM_IOV_MAX];
	size_t at[RTMEM_IOV_MAX];
	while (i < n) {
		size_t cnt = 0;
		for (; i < n && cnt < RTMEM_IOV_MAX; i++) {
			v[i].ok = 0;
			if (!v[i].len) {
				good += (v[i].ok = 1);
				continue;
			}
			if (!mapped_now(m, v[i].addr, v[i].len))
				continue;
			loc[cnt] = (struct iovec){v[i].buf, v[i].len};
			rem[cnt] = (struct iovec){(void *)(uintptr_t)v[i].addr, v[i].len};
			at[cnt++] = i;
		}
		size_t k = 0;
		while (k < cnt) {
			m->reads++;
			ssize_t got = process_vm_readv(m->pid, loc + k, cnt - k, rem + k, cnt - k, 0);
			if (got < 0 && errno != EFAULT)
				return good; /* the process is gone or not ours: the rest fail */
			size_t left = got > 0 ? (size_t)got : 0;
			/* The call stops at the first range it cannot read in full:
			 * the ones before it are whole, that one failed, go on after. */
			while (k < cnt && left >= loc[k].iov_len) {
				left -= loc[k].iov_len;
				m->bytes += loc[k].iov_len;
				good += (v[at[k++]].ok = 1);
			}
			k++;
		}
	}
	return good;
}

static int decode(const uint8_t *p, size_t size, uint64_t *v)
{
	switch (size) {
	case 1: *v = p[0]; return 0;
	case 2: { uint16_t x; memcpy(&x, p, 2); *v = x; return 0; }
	case 4: { uint32_t x; memcpy(&x, p, 4); *v = x; return 0; }
	case 8: memcpy(v, p, 8); return 0;
	default: return -EINVAL;
	}
}

int rtmem_uint(struct rtmem *m, uint64_t addr, size_t size, uint64_t *v, const char *what,
	       struct sd_error *err)
{
	uint8_t b[8];
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return sd_error_set(err, EINVAL, "%s: an integer of %zu bytes", what ? what : "value",
				    size);
	int r = rtmem_read(m, addr, b, size, what, err);
	return r < 0 ? r : decode(b, size, v);
}

/* The size of a field that is read as one integer: its own, or for a
 * struct of one integer (Go's atomic.Uint32 {noCopy, value}) that one's. */
static int scalar_of(struct dwt *d, const struct dwt_type *ft, uint64_t *extra, size_t *size)
{
	*extra = 0;
	struct dwt_type vt;
	if (ft->kind == DWT_STRUCT && dwt_member(d, ft, "value", extra, &vt, NULL) == 0 &&
	    vt.size == ft->size && vt.kind != DWT_STRUCT) {
		*size = vt.size;
		return 0;
	}
	*size = ft->size;
	return ft->kind == DWT_STRUCT || ft->kind == DWT_ARRAY ? -EINVAL : 0;
}

int rtmem_field(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		const char *path, uint64_t *v, struct sd_error *err)
{
	uint64_t off, extra;
	size_t size;
	struct dwt_type ft;
	int r = dwt_member(d, t, path, &off, &ft, err);
	if (r < 0)
		return r;
	if (scalar_of(d, &ft, &extra, &size) < 0)
		return sd_error_set(err, EINVAL, "field %s of %s is not an integer", path, t->name);
	return rtmem_uint(m, addr + off + extra, size, v, path, err);
}

int rtmem_field_in(struct dwt *d, const void *bytes, size_t len, const struct dwt_type *t,
		   const char *path, uint64_t *v, struct sd_error *err)
{
	uint64_t off, extra;
	size_t size;
	struct dwt_type ft;
	int r = dwt_member(d, t, path, &off, &ft, err);
	if (r < 0)
		return r;
	if (scalar_of(d, &ft, &extra, &size) < 0 || size > 8)
		return sd_error_set(err, EINVAL, "field %s of %s is not an integer", path, t->name);
	if (off + extra + size > len)
		return sd_error_set(err, EINVAL, "field %s of %s lies past the %zu bytes read", path,
				    t->name, len);
	if (decode((const uint8_t *)bytes + off + extra, size, v) < 0)
		return sd_error_set(err, EINVAL, "field %s of %s: an integer of %zu bytes", path,
				    t->name, size);
	return 0;
}

/* The first of NAMES that T has as a member. */
static const char *member_named(struct dwt *d, const struct dwt_type *t, const char *const *names)
{
	for (; *names; names++)
		if (dwt_has_member(d, t, *names))
			return *names;
	return NULL;
}

int rtmem_string(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		 size_t max, char **out, int *cut, struct sd_error *err)
{
	static const char *const ptrs[] = {"str", "data_ptr", NULL};
	static const char *const lens[] = {"len", "length", NULL};
	const char *pn = member_named(d, t, ptrs), *ln = member_named(d, t, lens);
	*out = NULL;
	if (!pn || !ln)
		return sd_error_set(err, EINVAL, "type %s is not a string (no str and len fields)",
				    t->name);
	uint64_t p, n;
	int r = rtmem_field(m, d, addr, t, pn, &p, err);
	if (r < 0 || (r = rtmem_field(m, d, addr, t, ln, &n, err)) < 0)
		return r;
	if (cut)
		*cut = n > max;
	if (n > max)
		n = max;
	char *s = sd_xmalloc(n + 1);
	if (n && (r = rtmem_read(m, p, s, n, "string bytes", err)) < 0) {
		free(s);
		return r;
	}
	s[n] = 0;
	*out = s;
	return 0;
}

int rtmem_slice(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		uint64_t max, uint64_t *ptr, uint64_t *len, struct dwt_type *elem,
		struct sd_error *err)
{
	if (!dwt_has_member(d, t, "array") || !dwt_has_member(d, t, "len"))
		return sd_error_set(err, EINVAL, "type %s is not a slice (no array and len fields)",
				    t->name);
	int r = rtmem_field(m, d, addr, t, "array", ptr, err);
	if (r < 0 || (r = rtmem_field(m, d, addr, t, "len", len, err)) < 0)
		return r;
	if (*len > max)
		return sd_error_set(err, E2BIG, "slice %s at 0x%llx holds %llu elements, more than %llu",
				    t->name, (unsigned long long)addr, (unsigned long long)*len,
				    (unsigned long long)max);
	if (elem) {
		uint64_t off;
		struct dwt_type at;
		if ((r = dwt_member(d, t, "array", &off, &at, err)) < 0 ||
		    (r = dwt_pointee(d, &at, elem, err)) < 0)
			return r;
	}
	return 0;
}
