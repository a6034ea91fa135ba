// SPDX-License-Identifier: MIT
// Local read-only images of ELF files: mapped once, parsed with bounds
// checks (the files come from the target and may be hostile), shared by
// identity (device, inode, size) across targets and snapshots.
#include "elfcache.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwcfi.h"

static struct sd_elf *cache;

static int in_bounds(const struct sd_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static void parse_note(struct sd_elf *e, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	while (off + sizeof(Elf64_Nhdr) <= end && in_bounds(e, off, sizeof(Elf64_Nhdr))) {
		Elf64_Nhdr nh;
		memcpy(&nh, e->data + off, sizeof(nh));
		uint64_t name_off = off + sizeof(nh);
		uint64_t desc_off = name_off + ((nh.n_namesz + 3u) & ~3u);
		uint64_t next = desc_off + ((nh.n_descsz + 3u) & ~3u);
		if (next > end || !in_bounds(e, desc_off, nh.n_descsz))
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(e->data + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= 64) {
			sd_hex(e->build_id, e->data + desc_off, nh.n_descsz);
			return;
		}
		off = next;
	}
}

int elfcache_parse(struct sd_elf *e)
{
	Elf64_Ehdr eh;
	if (e->size < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, e->data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -EINVAL;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_bounds(e, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr)))
		return -EINVAL;
	e->type = eh.e_type;
	e->nloads = 0;
	e->has_eh_frame_hdr = 0;
	e->build_id[0] = '\0';
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, e->data + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		switch (ph.p_type) {
		case PT_LOAD:
			if (e->nloads < 16) {
				struct sd_load *l = &e->loads[e->nloads++];
				l->vaddr = ph.p_vaddr;
				l->memsz = ph.p_memsz;
				l->offset = ph.p_offset;
				l->filesz = ph.p_filesz;
				l->flags = ph.p_flags;
			}
			break;
		case PT_GNU_EH_FRAME:
			e->has_eh_frame_hdr = 1;
			e->eh_frame_hdr_vaddr = ph.p_vaddr;
			e->eh_frame_hdr_size = ph.p_memsz;
			break;
		case PT_NOTE:
			if (!e->build_id[0] && in_bounds(e, ph.p_offset, ph.p_filesz))
				parse_note(e, ph.p_offset, ph.p_filesz);
			break;
		default:
			break;
		}
	}
	return e->nloads ? 0 : -EINVAL;
}

const struct sd_load *elfcache_load_at(const struct sd_elf *e, uint64_t vaddr)
{
	for (int i = 0; i < e->nloads; i++) {
		const struct sd_load *l = &e->loads[i];
		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz)
			return l;
	}
	return NULL;
}

int elfcache_vaddr_to_offset(const struct sd_elf *e, uint64_t vaddr, uint64_t *off)
{
	const struct sd_load *l = elfcache_load_at(e, vaddr);
	if (!l)
		return -1;
	*off = l->offset + (vaddr - l->vaddr);
	return 0;
}

int elfcache_read(const struct sd_elf *e, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;
	if (elfcache_vaddr_to_offset(e, vaddr, &off) < 0 || !in_bounds(e, off, len))
		return -1;
	memcpy(buf, e->data + off, len);
	return 0;
}

struct sd_elf *elfcache_open_fd(int fd, const char *name, struct sd_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		sd_error_set(err, EINVAL, "%s is not an ELF file", name);
		return NULL;
	}
	for (struct sd_elf *c = cache; c; c = c->next) {
		if (c->dev == st.st_dev && c->ino == st.st_ino && c->size == (size_t)st.st_size) {
			close(fd);
			c->refs++;
			return c;
		}
	}
	void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED) {
		int en = errno;
		close(fd);
		sd_error_set(err, en, "cannot map %s: %s", name, sd_strerror(en));
		return NULL;
	}
	struct sd_elf *e = sd_xcalloc(1, sizeof(*e));
	e->path = sd_xstrdup(name);
	e->fd = fd;
	e->data = data;
	e->size = (size_t)st.st_size;
	e->mapped = 1;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	if (elfcache_parse(e) < 0) {
		sd_error_set(err, EINVAL, "%s is not a usable ELF file", name);
		munmap(data, e->size);
		close(fd);
		free(e->path);
		free(e);
		return NULL;
	}
	e->refs = 1;
	e->next = cache;
	cache = e;
	return e;
}

struct sd_elf *elfcache_open(const char *path, struct sd_error *err)
{
	/* The file may come from the target: a FIFO would block open() for
	 * good without O_NONBLOCK, and a terminal would become ours without
	 * O_NOCTTY. Only a regular file is read (elfcache_open_fd checks). */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int en = errno;
		sd_error_set(err, en, "cannot open %s: %s", path, sd_strerror(en));
		return NULL;
	}
	return elfcache_open_fd(fd, path, err);
}

struct sd_elf *elfcache_from_memory(const char *name, const void *bytes, size_t len,
				    struct sd_error *err)
{
	struct sd_elf *e = sd_xcalloc(1, sizeof(*e));
	uint8_t *copy = sd_xmalloc(len);
	memcpy(copy, bytes, len);
	e->path = sd_xstrdup(name);
	e->fd = -1;
	e->data = copy;
	e->size = len;
	if (elfcache_parse(e) < 0) {
		sd_error_set(err, EINVAL, "%s is not a usable ELF image", name);
		free(copy);
		free(e->path);
		free(e);
		return NULL;
	}
	e->refs = 1;
	return e;
}

void elfcache_put(struct sd_elf *e)
{
	if (!e || --e->refs > 0)
		return;
	if (e->mapped) {
		/* Unlink from the cache. */
		for (struct sd_elf **pp = &cache; *pp; pp = &(*pp)->next) {
			if (*pp == e) {
				*pp = e->next;
				break;
			}
		}
		munmap((void *)e->data, e->size);
	} else {
		free((void *)e->data);
	}
	if (e->fd >= 0)
		close(e->fd);
	dwcfi_free(e->debug_frame);
	free(e->path);
	free(e);
}

const struct sd_dwcfi *elfcache_debug_frame(struct sd_elf *e)
{
	if (!e)
		return NULL;
	if (e->debug_frame_state == 0) {
		e->debug_frame = dwcfi_from_elf(e->data, e->size);
		e->debug_frame_state = e->debug_frame ? 1 : -1;
	}
	return e->debug_frame;
}
