// SPDX-License-Identifier: MIT
// Goroutines folded into a profile (profile_add_goroutines in profile.h):
// each sample counts each goroutine's stack once, so a stack's count over
// a run is the off-CPU (or on-CPU) time goroutines spent in it.
#include <stdlib.h>

#include "profile.h"

void profile_add_goroutines(struct sd_profile *p, struct sd_snapshot *s)
{
	struct sd_pproc *pr = profile_proc_get(p, s);
	pr->samples++;
	profile_proc_modules(p, pr, s);
	if (!p->start_time)
		p->start_time = s->time;
	p->capture_us += s->capture_us + s->go_us;
	p->unwind_us += s->unwind_us;
	p->pause_us += s->pause_us;
	if (s->pause_us > p->max_pause_us)
		p->max_pause_us = s->pause_us;
	struct sd_pframe *f = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < s->ngoroutines; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		if (!g->nframes) {
			p->lost++;
			continue;
		}
		int on = g->status == SD_GO_RUNNING;
		if ((p->opts.cpu == SD_CPU_ON && !on) || (p->opts.cpu == SD_CPU_OFF && on)) {
			p->filtered++;
			continue;
		}
		sd_grow(&f, &cap, g->nframes, sizeof(*f));
		for (size_t k = 0; k < g->nframes; k++) {
			const struct sd_frame *sf = &g->frames[k];
			f[k] = (struct sd_pframe){.function = sf->function,
						  .module = sf->module,
						  .build_id = sf->build_id,
						  .file = sf->file,
						  .pc = sf->pc,
						  .offset = sf->offset,
						  .symoff = sf->symoff,
						  .line = sf->line,
						  .flags = sf->flags};
		}
		const char *state = g->wait_reason ? g->wait_reason : sd_go_status_name(g->status);
		profile_add_stack(p, f, g->nframes, 1, (uint64_t)on, s->pid, 0, "goroutines",
				  state);
	}
	free(f);
}
