// SPDX-License-Identifier: MIT
// Folded stacks, Brendan Gregg's format: one line per merged stack, frames
// root first separated by ';', then a space and the sample count. Read by
// flamegraph.pl, inferno, speedscope, and by `stackdump diff`.
#include <inttypes.h>

#include "format-profile.h"

/* A frame name as one field: control characters escaped, and ';' (the
 * separator) replaced, since the format has no quoting. */
static void add_field(struct strbuf *out, const char *name)
{
	size_t start = out->len;
	strbuf_add_escaped(out, name && *name ? name : "[unknown]");
	for (size_t i = start; i < out->len; i++)
		if (out->buf[i] == ';')
			out->buf[i] = ':';
}

void format_profile_folded(struct strbuf *out, struct sd_profile *p)
{
	profile_sort(p);
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		if (!st->nframes)
			add_field(out, "[no frames]");
		for (size_t k = st->nframes; k-- > 0;) {
			add_field(out, st->frames[k].name);
			if (k)
				strbuf_adds(out, ";");
		}
		strbuf_addf(out, " %" PRIu64 "\n", st->count);
	}
}
