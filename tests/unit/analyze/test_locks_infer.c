// SPDX-License-Identifier: MIT
// Unit tests of holder inference on faked snapshots: which stack words and
// registers count as a reference (live slots from the stack pointer up,
// callee-saved registers; not dead slots below it, not what lies above
// the outermost frame, not the waiter's own, not a nearby address), which frame is named, and that several
// candidates give no owner edge while one gives an inferred cycle.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "locks.h"
#include "snapshot.h"

#define LA 0x55d0e1c3a040ull /* lock A */
#define LB 0x55d0e1c3a0c0ull /* lock B */
#define SP 0x7ffc00010000ull /* every thread's stack pointer */
#define STACK_LEN 512        /* bytes copied from SP - 64 */

static struct sd_snapshot *snap(size_t n)
{
	struct sd_snapshot *s = snapshot_new(1000);
	for (size_t i = 0; i < n; i++) {
		struct sd_thread *th = snapshot_add_thread(s, 100 + (pid_t)i);
		th->name = strpool_intern(s->pool, "t");
		th->state = 'S';
		th->have_regs = 1;
		th->regs.rsp = SP;
		/* The copy starts 64 bytes below the stack pointer: a red
		 * zone of dead slots that must not be scanned. */
		th->stack_base = SP - 64;
		th->stack_len = STACK_LEN;
		th->stack = calloc(1, STACK_LEN);
	}
	return s;
}

/* Frames at SP, SP+0x40, SP+0x80, SP+0xc0: frame k owns [SP+0x40k,
 * SP+0x40(k+1)). Frame 0 is libc's, the others the program's. */
static void frames(struct sd_snapshot *s, struct sd_thread *th)
{
	static const char *const fn[] = {"syscall", "hold_it", "worker", "start"};
	for (int k = 0; k < 4; k++) {
		struct sd_frame *f = snapshot_add_frame(th);
		f->pc = 0x1000 + (uint64_t)k;
		f->sp = SP + 0x40 * (uint64_t)k;
		f->function = strpool_intern(s->pool, fn[k]);
		f->module = strpool_intern(s->pool, k ? "prog" : "libc.so.6");
	}
}

static void put(struct sd_thread *th, uint64_t addr, uint64_t v)
{
	memcpy(th->stack + (addr - th->stack_base), &v, 8);
}

static void wait_on(struct sd_thread *th, enum sd_wait_kind k, uint64_t addr, pid_t owner)
{
	memset(&th->wait, 0, sizeof(th->wait));
	th->wait.kind = k;
	th->wait.address = addr;
	th->wait.owner = owner;
	th->wait.owner_known = owner > 0;
}

static void test_single_holder(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2);
	struct sd_thread *w = &s->threads[0], *h = &s->threads[1];
	frames(s, h);
	wait_on(w, SD_WAIT_RUST_MUTEX, LA, 0);
	put(h, SP + 0x48, LA); /* in frame 1, hold_it */
	locks_infer(s);
	assert_int_equal(w->wait.owner, 101);
	assert_true(w->wait.owner_known);
	assert_int_equal(w->wait.owner_evidence, SD_EVIDENCE_STACK);
	assert_int_equal(w->wait.owner_frame, 1);
	assert_string_equal(w->wait.note, "inferred: frame #1 hold_it holds a reference to it");
	assert_int_equal(h->nholds, 1);
	assert_int_equal(h->holds[0].address, LA);
	assert_int_equal(h->holds[0].frame, 1);
	assert_int_equal(h->holds[0].ncandidates, 1);
	assert_int_equal(w->nholds, 0);
	snapshot_free(s);
}

/* A thread whose unwind gave no frame has no range known to be live:
 * only its registers are searched. */
static void test_no_frames_no_slots(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3);
	struct sd_thread *w = &s->threads[0], *h = &s->threads[1], *r = &s->threads[2];
	wait_on(w, SD_WAIT_RUST_MUTEX, LA, 0);
	put(h, SP + 0x48, LA);
	r->regs.r13 = LA;
	locks_infer(s);
	assert_int_equal(h->nholds, 0);
	assert_int_equal(w->wait.owner, 102);
	assert_int_equal(w->wait.owner_frame, -1);
	assert_string_equal(w->wait.note,
			    "inferred: a register of the thread holds a reference to it");
	snapshot_free(s);
}

static void test_dead_slot_and_near_addresses(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2);
	struct sd_thread *w = &s->threads[0], *h = &s->threads[1];
	frames(s, h);
	wait_on(w, SD_WAIT_RUST_MUTEX, LA, 0);
	put(h, SP - 16, LA);       /* below the stack pointer: dead */
	put(h, SP + 0x50, LA - 16); /* an Arc's block around the lock */
	put(h, SP + 0x58, LA + 8);  /* a pointer to the data inside it */
	put(h, SP + 0xd0, LA);      /* above the outermost frame: TLS, not a frame */
	locks_infer(s);
	assert_false(w->wait.owner_known);
	assert_int_equal(h->nholds, 0);
	snapshot_free(s);
}

static void test_waiter_reference_is_not_a_hold(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2);
	struct sd_thread *w = &s->threads[0];
	frames(s, w);
	wait_on(w, SD_WAIT_RUST_MUTEX, LA, 0);
	put(w, SP + 0x48, LA);
	w->regs.rbx = LA;
	locks_infer(s);
	assert_false(w->wait.owner_known);
	assert_int_equal(w->nholds, 0);
	snapshot_free(s);
}

static void test_register_and_runtime_frames(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3);
	struct sd_thread *w = &s->threads[0], *h1 = &s->threads[1], *h2 = &s->threads[2];
	frames(s, h1);
	frames(s, h2);
	wait_on(w, SD_WAIT_RUST_MUTEX, LA, 0);
	wait_on(h2, SD_WAIT_RUST_MUTEX, LB, 0);
	/* h1: in a callee-saved register. The innermost frame of the
	 * program is named, not libc's syscall. */
	h1->regs.r12 = LB;
	/* h2: a slot in libc's frame (a register it saved for its caller),
	 * and a copy in frame 2: the outermost of the program's frames. */
	put(h2, SP + 0x08, LA);
	put(h2, SP + 0x88, LA);
	locks_infer(s);
	assert_int_equal(w->wait.owner, 102);
	assert_int_equal(w->wait.owner_frame, 2);
	assert_int_equal(h2->wait.owner, 101);
	assert_int_equal(h2->wait.owner_frame, 1);
	snapshot_free(s);
}

static void test_several_candidates_no_edge(void **state)
{
	(void)state;
	/* 100 waits for A and holds B (the 101 and 102 copies of A's
	 * address are the decoys of a naive guess); 101 waits for B. */
	struct sd_snapshot *s = snap(3);
	struct sd_thread *t0 = &s->threads[0], *t1 = &s->threads[1], *t2 = &s->threads[2];
	frames(s, t0);
	frames(s, t1);
	frames(s, t2);
	wait_on(t0, SD_WAIT_RUST_MUTEX, LA, 0);
	wait_on(t1, SD_WAIT_RUST_MUTEX, LB, 0);
	put(t0, SP + 0x48, LB);
	put(t1, SP + 0x48, LA);
	put(t2, SP + 0x48, LA);
	locks_infer(s);
	assert_int_equal(t1->wait.owner, 100);
	assert_false(t0->wait.owner_known);
	assert_int_equal(t1->nholds, 1);
	assert_int_equal(t1->holds[0].ncandidates, 2);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 0);
	for (size_t i = 0; i < g->nlocks; i++)
		if (g->locks[i].address == LA)
			assert_int_equal(g->locks[i].ncandidates, 2);
	locks_graph_free(g);

	/* Without the decoy, the same stacks are a deadlock of two
	 * inferred edges. */
	memset(t2->stack, 0, STACK_LEN);
	locks_infer(s);
	g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 1);
	assert_int_equal(g->deadlocks[0].n, 2);
	assert_int_equal(g->deadlocks[0].edges[0].owner_evidence, SD_EVIDENCE_STACK);
	assert_int_equal(g->deadlocks[0].edges[1].owner_evidence, SD_EVIDENCE_STACK);
	locks_graph_free(g);
	snapshot_free(s);
}

static void test_recorded_owner_gets_its_frame(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3);
	struct sd_thread *w = &s->threads[0], *h = &s->threads[1], *other = &s->threads[2];
	frames(s, h);
	wait_on(w, SD_WAIT_MUTEX, LA, 101);
	put(h, SP + 0x90, LA);
	put(other, SP + 0x10, LA); /* not the owner: ignored */
	locks_infer(s);
	assert_int_equal(w->wait.owner, 101);
	assert_int_equal(w->wait.owner_evidence, SD_EVIDENCE_MEMORY);
	assert_int_equal(w->wait.owner_frame, 2);
	assert_int_equal(h->nholds, 1);
	assert_int_equal(h->holds[0].evidence, SD_EVIDENCE_MEMORY);
	assert_int_equal(other->nholds, 0);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_holder),
		cmocka_unit_test(test_dead_slot_and_near_addresses),
		cmocka_unit_test(test_no_frames_no_slots),
		cmocka_unit_test(test_waiter_reference_is_not_a_hold),
		cmocka_unit_test(test_register_and_runtime_frames),
		cmocka_unit_test(test_several_candidates_no_edge),
		cmocka_unit_test(test_recorded_owner_gets_its_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
