// SPDX-License-Identifier: MIT
// A JIT's own map of its code, /tmp/perf-PID.map (perfmap.h), read safely
// and kept sorted for the symbolizer.
#include "perfmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saferead.h"
#include "util.h"

static int cmp_perfmap(const void *a, const void *b)
{
	const struct sd_perfmap_ent *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

void perfmap_refresh(struct sd_perfmap *s, pid_t pid, struct strpool *pool)
{
	char path[96], proc[32];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	struct stat pst, st;
	int o = stat(proc, &pst) < 0 ? -1 : saferead_path(pid, path);
	if (o < 0) {
		s->n = 0;
		return;
	}
	if (fstat(o, &st) < 0) {
		close(o);
		s->n = 0;
		return;
	}
	if (st.st_size == s->size && st.st_mtim.tv_sec == s->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == s->mtime.tv_nsec) {
		close(o);
		return;
	}
	uint64_t cap = saferead_cap("STACKDUMP_MAX_PERF_MAP", SAFEREAD_PERFMAP_CAP);
	int fd = saferead_reopen(o, cap, pst.st_uid, &st, path, NULL);
	s->n = 0;
	if (fd < 0)
		return;
	/* Read at most CAP bytes, even if it grows meanwhile. */
	size_t want = (size_t)st.st_size, n = 0;
	char *text = sd_xmalloc(want + 1);
	while (n < want) {
		ssize_t r = read(fd, text + n, want - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	text[n] = '\0';
	size_t cap_ents = 0;
	for (char *line = text, *next; line < text + n; line = next) {
		next = memchr(line, '\n', (size_t)(text + n - line));
		next = next ? next + 1 : text + n;
		if (next[-1] == '\n')
			next[-1] = '\0';
		unsigned long long start, size;
		int k = 0;
		if (sscanf(line, "%llx %llx %n", &start, &size, &k) < 2 || k == 0 || !size)
			continue;
		char *name = line + k;
		sd_grow(&s->ents, &cap_ents, s->n + 1, sizeof(*s->ents));
		s->ents[s->n++] = (struct sd_perfmap_ent){
			.start = start, .end = start + size, .name = strpool_intern(pool, name)};
	}
	free(text);
	sd_sort(s->ents, s->n, sizeof(*s->ents), cmp_perfmap);
	s->size = st.st_size;
	s->mtime = st.st_mtim;
}

const struct sd_perfmap_ent *perfmap_find(const struct sd_perfmap *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && lo - i < 16; i--)
		if (addr < s->ents[i - 1].end)
			return &s->ents[i - 1];
	return NULL;
}

void perfmap_release(struct sd_perfmap *m)
{
	free(m->ents);
	memset(m, 0, sizeof(*m));
}
