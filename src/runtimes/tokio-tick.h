// SPDX-License-Identifier: MIT
// The tick of a Tokio multi_thread worker that is polling a task: the
// counter its Core advances once per task it takes from its queues, read
// from the target's memory by the layout its DWARF gives. Two snapshots
// that find a worker polling the same task with the same tick saw one
// poll (a long poll).
#ifndef SD_TOKIO_TICK_H
#define SD_TOKIO_TICK_H

#include <stdint.h>

#include "rtmem.h"
#include "tokio-layout.h"

struct dwt;
struct dwt_type;
struct tktick;

/* Learn the layout from D (and L, for enums): CTX_T is the type of
 * tokio::runtime::context::Context. Never NULL; what it cannot learn
 * makes every read -1. Free with tktick_free. */
struct tktick *tktick_new(struct dwt *d, struct tkl *l, const struct dwt_type *ctx_t);
/* NULL does nothing. */
void tktick_free(struct tktick *t);

/* The tick of the worker core the thread whose thread pointer is TP (its
 * CONTEXT's Context at CTX, 0 not known) holds now, through MEM: -1 when
 * it holds none (parked, stealing, no worker) or it cannot be read. */
int64_t tktick_read(struct tktick *t, struct rtmem *mem, uint64_t tp, uint64_t ctx);
/* The index of the multi_thread worker the thread (as for tktick_read)
 * is, from its scheduler context's Worker: -1 when it is none, or its
 * context cannot be read. */
int64_t tktick_index(struct tktick *t, struct rtmem *mem, uint64_t tp, uint64_t ctx);

#endif
