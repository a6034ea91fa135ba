// SPDX-License-Identifier: MIT
// A Tokio runtime's threads and queues beside its tasks: where its
// owned-task lists start, the depth of each multi_thread worker's local
// run queue, and what the threads of its blocking pool run (the
// spawn_blocking job, named from its task's type as tasks are, or idle).
// All by name from the DWARF; every read checked against the mappings.
#ifndef SD_TOKIO_WORKERS_H
#define SD_TOKIO_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#include "dwtype.h"
#include "rtmem.h"
#include "snapshot.h"
#include "tokio-layout.h"

/* Where the heads of the owned-task lists of the handle at ID of type HT
 * are: one list (Tokio 1.24: shared.owned.inner, a mutex around the
 * list) or a sharded one (later: shared.owned.list.lists, a boxed slice
 * of mutexes around lists). Returns their count, *HEADS heap, and
 * *TAIL_DELTA the offset of each list's tail from its head; 0 with ERR. */
size_t tkw_list_heads(struct dwt *d, struct rtmem *mem, uint64_t id, const struct dwt_type *ht,
		      uint64_t **heads, int64_t *tail_delta, struct sd_error *err);

/* The tasks in each local run queue (its tail less its head) of the
 * multi_thread runtime whose handle of type HT is at ID, one per worker
 * index (shared.remotes[i].steal): *OUT heap. Returns their count, 0 when
 * they cannot be read. */
size_t tkw_local_queues(struct dwt *d, struct rtmem *mem, uint64_t id, const struct dwt_type *ht,
			int64_t **out);

/* Move from RT's workers to RT->blocking the threads of S that are its
 * blocking pool's own (a frame in its Inner::run) and run no worker of
 * it: each with the spawn_blocking job it runs, the type T of the task
 * poll function on its stack (BlockingTask<F>: F), or idle, waiting in
 * Inner::run for a job. BIAS: the executable's load bias. */
void tkw_blocking(struct tkl *l, uint64_t bias, const struct sd_snapshot *s,
		  struct sd_tokio_rt *rt);

#endif
