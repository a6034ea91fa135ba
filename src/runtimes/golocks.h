// SPDX-License-Identifier: MIT
// What waiting goroutines wait on: the channels of their sudog list
// (g.waiting), the mutexes, WaitGroups and semaphores of the runtime's
// semaphore table (runtime.semtable), read by the layout the binary's
// DWARF describes; holders of mutexes inferred from references in the
// other goroutines' stacks (Go's sync.Mutex does not record its owner);
// and the cycles among goroutines those holders make.
#ifndef SD_GOLOCKS_H
#define SD_GOLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

struct dwt;
struct dwt_type;
struct rtmem;
struct sd_symbols;
struct golocks_layout;
struct golocks;

/* Learn the layout of wait objects from D (the executable's DWARF, load
 * bias BIAS), G being runtime.g. Never NULL: what cannot be found is left
 * out and named by golocks_layout_note(). Free with golocks_layout_free
 * (NULL does nothing). */
struct golocks_layout *golocks_learn(struct dwt *d, uint64_t bias, const struct dwt_type *g);
/* "runtime.semtable not found (...)": what is not read, or NULL. Lives
 * with L. */
const char *golocks_layout_note(const struct golocks_layout *l);
void golocks_layout_free(struct golocks_layout *l);

/* One snapshot's reading: the semaphore table is read now, through M
 * (borrowed until golocks_end), bounded and checked. Never NULL. */
struct golocks *golocks_begin(struct golocks_layout *l, struct rtmem *m);
/* The goroutine at GP, to be S's goroutine number IDX: G its unwound
 * goroutine, GB its runtime.g bytes (GLEN of them), STACK a copy of its
 * stack from BASE (LEN bytes, NULL: none). Its sudog list is read and its
 * stack searched for references to the objects waited on. */
void golocks_goroutine(struct golocks *w, size_t idx, uint64_t gp, const uint8_t *gb, size_t glen,
		       const struct sd_goroutine *g, const uint8_t *stack, uint64_t base,
		       size_t len);
/* Read ahead the sudog lists (g.waiting) of N goroutines, those at GPS[i]
 * whose runtime.g bytes are GB[i] (GLEN each; NULL: not waiting), in one
 * read for each list's first sudogs, one more for their next and so on
 * (a few rounds), for golocks_goroutine to take from; what it does not
 * find there it reads itself. The copies last until the next call. */
void golocks_prefetch(struct golocks *w, const uint64_t *gps, const uint8_t *const *gb,
		      size_t glen, size_t n);
/* Decide the objects of S's goroutines (s->goobjects, each goroutine's
 * waits_on), their holders where the evidence names one, data symbols
 * through SYM (may be NULL); frees W. */
void golocks_end(struct golocks *w, struct sd_symbols *sym, struct sd_snapshot *s);

#endif
