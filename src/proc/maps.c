// SPDX-License-Identifier: MIT
// The process's memory map, from /proc/PID/maps: parsed into sorted
// ranges, looked up by address (part of the discover stage, procfs.h).
#include "procfs.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void procfs_maps_release(struct sd_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->v[i].path);
	free(maps->v);
	maps->v = NULL;
	maps->n = maps->cap = 0;
}

/* Parse an unsigned number in BASE (16 or 10) from *P up to END, moving
 * *P past it. Returns 0, or -1 when there is no digit or it overflows. */
static int maps_number(const char **p, const char *end, int base, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	while (s < end) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		s++;
	}
	if (s == *p)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int maps_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

/* One maps line [LINE, END): "start-end perms offset maj:min inode path".
 * Parsed in place with no length limit: the path may be as long as the
 * kernel makes it (a path with newlines comes escaped as \012, four bytes
 * each, and can pass PATH_MAX). */
static int maps_line(const char *line, const char *end, struct sd_map *m)
{
	const char *p = line;
	uint64_t start, stop, off, maj, min, inode;
	if (maps_number(&p, end, 16, &start) < 0 || maps_char(&p, end, '-') < 0 ||
	    maps_number(&p, end, 16, &stop) < 0 || maps_char(&p, end, ' ') < 0 || stop < start)
		return -1;
	if (end - p < 5 || p[4] != ' ')
		return -1;
	memcpy(m->perms, p, 4);
	m->perms[4] = '\0';
	p += 5;
	if (maps_number(&p, end, 16, &off) < 0 || maps_char(&p, end, ' ') < 0 ||
	    maps_number(&p, end, 16, &maj) < 0 || maps_char(&p, end, ':') < 0 ||
	    maps_number(&p, end, 16, &min) < 0 || maps_char(&p, end, ' ') < 0 ||
	    maps_number(&p, end, 10, &inode) < 0 || maj > UINT32_MAX || min > UINT32_MAX)
		return -1;
	if (p < end && *p != ' ' && *p != '\t')
		return -1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	m->start = start;
	m->end = stop;
	m->offset = off;
	m->dev_major = (unsigned)maj;
	m->dev_minor = (unsigned)min;
	m->inode = (unsigned long)inode;
	size_t plen = (size_t)(end - p);
	m->path = sd_xmalloc(plen + 1);
	memcpy(m->path, p, plen);
	m->path[plen] = '\0';
	return 0;
}

int procfs_parse_maps(const char *text, struct sd_maps *maps)
{
	const char *line = text;
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		if (end > line) {
			struct sd_map m;
			if (maps_line(line, end, &m) < 0)
				return -EINVAL;
			sd_grow(&maps->v, &maps->cap, maps->n + 1, sizeof(*maps->v));
			maps->v[maps->n++] = m;
		}
		line = eol ? eol + 1 : NULL;
	}
	return 0;
}

int procfs_read_maps(pid_t pid, struct sd_maps *maps, struct sd_error *err)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	ssize_t n = sd_read_file(path, &text, 64u << 20);
	if (n < 0)
		return sd_error_set(err, (int)-n, "cannot read %s: %s", path, sd_strerror((int)-n));
	int r = procfs_parse_maps(text, maps);
	free(text);
	if (r < 0)
		return sd_error_set(err, EINVAL, "cannot parse %s", path);
	return 0;
}

const struct sd_map *procfs_maps_find(const struct sd_maps *maps, uint64_t addr)
{
	return sd_range_find(maps->v, maps->n, sizeof(*maps->v), offsetof(struct sd_map, start),
			     offsetof(struct sd_map, end), addr);
}
