// SPDX-License-Identifier: MIT
// The goroutine-leak view (format-goleak.h).
#include "format-goleak.h"

#include <inttypes.h>
#include <stdlib.h>

static void site_name(struct strbuf *out, const struct sd_goleak_site *s)
{
	if (!s->function) {
		strbuf_adds(out, "(no creator: goroutine 1, or created before the runtime records it)");
		return;
	}
	strbuf_add_escaped(out, s->function);
	if (s->file) {
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, s->file);
		strbuf_addf(out, ":%d", s->line);
	}
}

void format_goleak_text(struct strbuf *out, const struct sd_goleak *g, size_t limit)
{
	size_t n = g->nsamples;
	strbuf_addf(out, "PID %d (Go ", (int)g->pid);
	strbuf_add_escaped(out, g->version ? g->version : "?");
	strbuf_addf(out, "): goroutines by creation site, %zu sample%s over %.1f s\n", n,
		    n == 1 ? "" : "s", n ? g->last_time - g->first_time : 0.0);
	if (g->note) {
		strbuf_adds(out, "  note: ");
		strbuf_add_escaped(out, g->note);
		strbuf_adds(out, "\n");
	}
	if (!n || !g->nsites) {
		strbuf_adds(out, "  no goroutine was read\n");
		return;
	}
	size_t *order = goleak_order(g);
	strbuf_adds(out, "   first    last     min     max   growth  created by\n");
	size_t shown = limit && limit < g->nsites ? limit : g->nsites;
	for (size_t i = 0; i < shown; i++) {
		const struct sd_goleak_site *s = &g->sites[order[i]];
		int64_t d = (int64_t)s->counts[n - 1] - (int64_t)s->counts[0];
		strbuf_addf(out, "%8" PRIu64 "%8" PRIu64 "%8" PRIu64 "%8" PRIu64 "  %+7" PRId64 "  ",
			    s->counts[0], s->counts[n - 1], s->min, s->max, d);
		site_name(out, s);
		strbuf_adds(out, "\n");
	}
	if (shown < g->nsites)
		strbuf_addf(out, "  ... and %zu more sites\n", g->nsites - shown);
	size_t leaks = 0;
	for (size_t i = 0; i < g->nsites; i++) {
		const struct sd_goleak_site *s = &g->sites[order[i]];
		if (!goleak_site_grew(s, n))
			continue;
		if (!leaks++)
			strbuf_adds(out, "\n");
		strbuf_adds(out, "goroutines created by ");
		site_name(out, s);
		strbuf_addf(out, " grew from %" PRIu64 " to %" PRIu64 " and never fell (a leak?)\n",
			    s->counts[0], s->counts[n - 1]);
	}
	if (!leaks && n > 1)
		strbuf_adds(out, "\nNo creation site's count only grew.\n");
	free(order);
}
