// SPDX-License-Identifier: MIT
// Rust's layouts as rustc describes them in DWARF, for the Tokio task
// reader: enums (a variant part, its discriminant and variants), the
// qualified names of types, a generic function's template parameters, and
// an async fn's state machine (the `__state` discriminant, the SuspendN
// variants with their decl_file/decl_line, `__awaitee`) decoded into an
// await chain from a copy of the future's bytes.
#ifndef SD_TOKIO_LAYOUT_H
#define SD_TOKIO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "dwtype.h"
#include "rtmem.h"
#include "snapshot.h"

/* Names learnt per session: a cache of qualified type names (owned). */
struct tkl;
struct tkl *tkl_new(struct dwt *d);
/* NULL does nothing. */
void tkl_free(struct tkl *l);

/* The qualified name of the type at DIE ("fx::run::{async_fn_env#0}",
 * namespaces and enclosing types joined by "::"); lives with L. */
const char *tkl_qualname(struct tkl *l, uint64_t die);

/* The active variant of the Rust enum type T whose bytes are B (LEN of
 * them, the enum's start): its name ("Some", "Suspend0"), *OFF its offset
 * from the enum's start, *VT its type, *FILE and *LINE (may be NULL) its
 * declaration. -ENOENT when T is no enum or no variant matches, -EINVAL
 * when the discriminant lies past LEN. *NAME lives with the session. */
int tkl_variant(struct tkl *l, const struct dwt_type *t, const uint8_t *b, size_t len,
		const char **name, uint64_t *off, struct dwt_type *vt, const char **file, int *line);

/* Is T an async fn's or block's state machine (a variant part whose
 * discriminant is __state)? */
int tkl_is_generator(struct tkl *l, const struct dwt_type *t);

/* The template type parameter PARAM ("T") of the function whose code
 * starts at file address PC (its concrete DIE, or the declaration it
 * specifies). -ENOENT when none. */
int tkl_fn_param(struct tkl *l, uint64_t pc, const char *param, struct dwt_type *out);

/* The generic type PREFIX<T, S> ("tokio::runtime::task::core::Core<"),
 * its parameters' qualified names as rustc spells them. */
int tkl_generic2(struct tkl *l, const char *prefix, const struct dwt_type *t,
		 const struct dwt_type *s, struct dwt_type *out);

/* What the chain decoder asks of its caller: the id of the task whose
 * header is at HEADER (a JoinHandle's target), 0 when not known. */
struct tkl_chain_ctx {
	struct rtmem *mem;
	struct strpool *pool;
	uint64_t (*task_id)(void *arg, uint64_t header);
	void *arg;
	uint64_t now_ns; /* CLOCK_MONOTONIC when the future was read */
};

/* Decode the future of type T copied at B (LEN bytes, from address ADDR)
 * into TASK: its await chain (at most MAX levels, outermost first; heap
 * array, the caller's), the tokio::sync guards and permits its suspended
 * levels hold (heap, the caller's), the lock its leaf waits for
 * (wait_addr), and a note when the chain stops early. */
void tkl_chain(struct tkl *l, const struct tkl_chain_ctx *c, const struct dwt_type *t,
	       uint64_t addr, const uint8_t *b, size_t len, size_t max, struct sd_tokio_task *task);

/* The name of a future of type T as a person reads it: an async fn
 * "fx::run", a block "fx::main::{async_block#0}", else its type. */
const char *tkl_future_name(struct tkl *l, const struct dwt_type *t);

#endif
