// SPDX-License-Identifier: MIT
// The diff of two profiles (profile.h): B's stacks and A's, by frame names,
// A scaled to B's total.
#include <stdlib.h>

#include "profile.h"

static struct sd_pframe *name_frames(const struct sd_pstack *st)
{
	struct sd_pframe *f = sd_xcalloc(st->nframes ? st->nframes : 1, sizeof(*f));
	for (size_t i = 0; i < st->nframes; i++) {
		f[i].function = st->frames[i].name;
		f[i].module = st->frames[i].module;
	}
	return f;
}

struct sd_profile *profile_diff(struct sd_profile *a, struct sd_profile *b)
{
	struct sd_profile_opts o;
	profile_opts_init(&o);
	struct sd_profile *d = profile_new(&o);
	for (size_t i = 0; i < b->nstacks; i++) {
		const struct sd_pstack *st = &b->stacks[i];
		struct sd_pframe *f = name_frames(st);
		profile_add_stack(d, f, st->nframes, st->count, st->on_cpu, st->pid, 0, "", NULL);
		free(f);
	}
	uint64_t ta = profile_total(a), tb = profile_total(b);
	double scale = ta ? (double)tb / (double)ta : 1.0;
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct sd_pstack *st = &a->stacks[i];
		struct sd_pframe *f = name_frames(st);
		ssize_t idx = profile_add_stack(d, f, st->nframes, 0, 0, st->pid, 0, "", NULL);
		d->stacks[idx].value_a += (double)st->count * scale;
		free(f);
	}
	d->thread_samples = tb;
	d->on_cpu = b->on_cpu;
	d->total_a = ta;
	d->samples = b->samples;
	return d;
}
