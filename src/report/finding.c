// SPDX-License-Identifier: MIT
// One finding, as the finders make it (findings.c, findings-go.c): appended
// to a set, and the span of snapshots it was seen in (findings.h).
#include <string.h>

#include "findings.h"

struct sd_finding *findings_add(struct sd_finding **v, size_t *n, size_t *cap,
				enum sd_finding_kind kind)
{
	sd_grow(v, cap, *n + 1, sizeof(**v));
	struct sd_finding *x = &(*v)[(*n)++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	return x;
}

void findings_set_span(struct sd_finding *x, const struct sd_snapshot *const *s, size_t first,
		       size_t last, size_t seen)
{
	x->first = first;
	x->last = last;
	x->seen = seen;
	x->t0 = s[first]->time;
	x->t1 = s[last]->time;
}
