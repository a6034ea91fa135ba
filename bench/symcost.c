// SPDX-License-Identifier: MIT
// The CPU cost of symbolizing a list of addresses of a live process with
// stackdump's engine, from a cold session (the first lookups build what
// the engine builds per module), then again warm. Built against the engine
// library of the stackdump to measure (bench/symbolize.sh links it with
// two of them, before and after).
//
// Usage: symcost PID < ADDRS   (runtime addresses in hex, one per line;
//                                each looked up as a return address)
// Prints the CPU and wall time of the first lookup in each module (the
// per-module setup), then of the other addresses (per distinct address),
// then of all of them again (cached).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snapshot.h"
#include "symbols.h"
#include "target.h"

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One thread whose frames are ADDRS, symbolized; returns how many frames
 * got a function name. */
static size_t run(struct sd_target *t, const uint64_t *addrs, size_t n)
{
	struct sd_snapshot *s = snapshot_new(t->pid);
	struct sd_thread *th = snapshot_add_thread(s, t->pid);
	for (size_t i = 0; i < n; i++) {
		struct sd_frame *f = snapshot_add_frame(th);
		f->pc = addrs[i];
	}
	symbols_thread(t->sym, s, th, 0, 0);
	size_t named = 0;
	for (size_t i = 0; i < th->nframes; i++)
		named += th->frames[i].function != NULL;
	snapshot_free(s);
	return named;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: symcost PID < ADDRS\n");
		return 64;
	}
	struct sd_error err = {0};
	struct sd_target *t = target_new((pid_t)atoi(argv[1]), &err);
	if (!t || target_refresh(t, &err) < 0) {
		fprintf(stderr, "symcost: %s\n", err.msg);
		return 2;
	}
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 2;
		}
		addrs[n++] = strtoull(line, NULL, 16);
	}
	symbols_sync(t->sym);
	/* First one address per module: what a session does once per module
	 * (open, index, read debug info). Then every other address: the cost
	 * per distinct address, which is what a profile pays per new stack. */
	uint64_t *first = calloc(n ? n : 1, sizeof(*first)), *rest = calloc(n ? n : 1, sizeof(*rest));
	size_t nfirst = 0, nrest = 0;
	for (size_t i = 0; i < n; i++) {
		struct sd_tmod *m = target_module_at(t, addrs[i] - 1);
		int seen = 0;
		for (size_t k = 0; k < nfirst && !seen; k++)
			seen = target_module_at(t, first[k] - 1) == m;
		if (seen)
			rest[nrest++] = addrs[i];
		else
			first[nfirst++] = addrs[i];
	}
	double c0 = cpu_ms(), w0 = wall_ms();
	size_t named = run(t, first, nfirst);
	double c1 = cpu_ms(), w1 = wall_ms();
	named += run(t, rest, nrest);
	double c2 = cpu_ms(), w2 = wall_ms();
	run(t, addrs, n);
	double c3 = cpu_ms();
	printf("modules %zu setup_cpu_ms %.1f setup_wall_ms %.1f addresses %zu cpu_ms %.2f "
	       "wall_ms %.1f per_address_us %.1f warm_per_address_us %.2f named %zu\n",
	       nfirst, c1 - c0, w1 - w0, nrest, c2 - c1, w2 - w1,
	       nrest ? (c2 - c1) * 1e3 / (double)nrest : 0.0,
	       n ? (c3 - c2) * 1e3 / (double)n : 0.0, named);
	free(first);
	free(rest);
	free(addrs);
	target_free(t);
	return 0;
}
