// SPDX-License-Identifier: MIT
// Unit tests of the record conditions (triggers.c) as functions of
// observations: parsing, firing once and re-arming, CPU over an interval,
// stuck threads confirmed by two snapshots, deadlocks looked at once per
// set of parked threads. Snapshots are built by hand; the live behaviour is
// tested by tests/cli/test_record_triggers.py.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "snapshot.h"
#include "triggers.h"

/* ---- helpers ---- */

static struct sd_tobs parked(pid_t tid, uint64_t uaddr)
{
	struct sd_tobs o = {.tid = tid, .state = 'S', .nr = SYS_futex, .arg0 = uaddr, .futex = 1};
	return o;
}

static struct sd_tobs running(pid_t tid, uint64_t vol)
{
	struct sd_tobs o = {.tid = tid, .state = 'R', .running = 1, .nr = -1, .vol = vol};
	return o;
}

static struct sd_observation obs_of(const struct sd_tobs *v, size_t n, uint64_t now_us)
{
	struct sd_observation o = {.threads = v, .nthreads = n, .now_us = now_us, .clk_tck = 100};
	return o;
}

/* What the probe hands out: snapshots of threads 10 and 11 with the stack
 * named by `stack` (a different name, a different stack), and mutex waits
 * forming a cycle when `cycle` is set. Counts its calls. */
struct prober {
	const char *stack;
	int cycle;
	int calls;
};

static struct sd_snapshot *make_snapshot(const struct prober *p)
{
	struct sd_snapshot *s = snapshot_new(1000);
	for (pid_t tid = 10; tid <= 11; tid++) {
		struct sd_thread *th = snapshot_add_thread(s, tid);
		th->name = strpool_intern(s->pool, tid == 10 ? "worker" : "other");
		th->state = 'S';
		struct sd_frame *f = snapshot_add_frame(th);
		f->function = strpool_intern(s->pool, p->stack);
		f = snapshot_add_frame(th);
		f->function = strpool_intern(s->pool, "main");
		if (p->cycle) {
			th->wait.kind = SD_WAIT_MUTEX;
			th->wait.address = tid == 10 ? 0xa0 : 0xb0;
			th->wait.owner = tid == 10 ? 11 : 10;
			th->wait.owner_known = 1;
		}
	}
	return s;
}

static struct sd_snapshot *probe(void *arg)
{
	struct prober *p = arg;
	p->calls++;
	return make_snapshot(p);
}

/* One check; returns whether it fired, REASON's text in WHY (if given). */
static int check(struct sd_triggers *t, const struct sd_observation *o, struct prober *p, char *why,
		 size_t whysz)
{
	struct strbuf reason;
	strbuf_init(&reason);
	struct sd_snapshot *snap = NULL;
	int fired = triggers_check(t, o, probe, p, &reason, &snap);
	if (why)
		snprintf(why, whysz, "%s", reason.buf);
	assert_true(fired || !snap); /* no snapshot left over when nothing fired */
	snapshot_free(snap);
	strbuf_release(&reason);
	return fired;
}

/* ---- parsing ---- */

static void test_parse(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "parked>=8, deadlock ,cpu>=90%,stuck>=10s", &err), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.trig[0].kind, SD_TRIG_PARKED);
	assert_true(t.trig[0].threshold == 8);
	assert_int_equal(t.trig[1].kind, SD_TRIG_DEADLOCK);
	assert_string_equal(t.trig[1].text, "deadlock");
	assert_int_equal(t.trig[2].kind, SD_TRIG_CPU);
	assert_true(t.trig[2].threshold == 90);
	assert_int_equal(t.trig[3].kind, SD_TRIG_STUCK);
	assert_int_equal(t.trig[3].dur_us, 10000000);
	assert_true(triggers_has(&t, SD_TRIG_STUCK));
	struct strbuf sb;
	strbuf_init(&sb);
	triggers_describe(&t, &sb);
	assert_string_equal(sb.buf, "parked>=8,deadlock,cpu>=90%,stuck>=10s");
	strbuf_release(&sb);
	triggers_release(&t);
	assert_int_equal(t.n, 0);
	/* NAME:VALUE, what an unquoted shell word can say, reads the same. */
	assert_int_equal(triggers_parse(&t, "parked:8,cpu:90%,stuck:2s", &err), 0);
	assert_int_equal(t.n, 3);
	assert_true(t.trig[0].threshold == 8);
	assert_true(t.trig[1].threshold == 90);
	assert_int_equal(t.trig[2].dur_us, 2000000);
	strbuf_init(&sb);
	triggers_describe(&t, &sb);
	assert_string_equal(sb.buf, "parked>=8,cpu>=90%,stuck>=2s");
	strbuf_release(&sb);
	triggers_release(&t);
}

static void test_parse_errors(void **state)
{
	(void)state;
	const char *bad[] = {"parked>8", "parked>=0",  "load>=3",  "cpu>=",
			     "cpu>=-5",	 "stuck>=1ms", "stuck>=x", "parked>=1x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sd_triggers t = {0};
		struct sd_error err = {0};
		assert_int_equal(triggers_parse(&t, bad[i], &err), -EINVAL);
		assert_non_null(strstr(err.msg, "invalid --when condition"));
		assert_non_null(strstr(err.msg, bad[i]));
		triggers_release(&t);
	}
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	/* What is left of an unquoted parked>=8 after the shell's redirection. */
	assert_int_equal(triggers_parse(&t, "parked", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no value"));
	assert_non_null(strstr(err.msg, "parked:VALUE"));
	triggers_release(&t);
	assert_int_equal(triggers_parse(&t, ",", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "needs a condition"));
	triggers_release(&t);
	assert_int_equal(triggers_parse(&t,
					"deadlock,deadlock,deadlock,deadlock,deadlock,"
					"deadlock,deadlock,deadlock,deadlock",
					&err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "too many"));
	triggers_release(&t);
}

/* ---- parked: fires once while it holds, again after it stopped ---- */

static void test_parked_fires_once_and_rearms(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "parked>=2", &err), 0);
	struct prober p = {.stack = "f"};
	struct sd_tobs two[] = {parked(10, 0xa0), parked(11, 0xa0), running(12, 0)};
	struct sd_tobs one[] = {parked(10, 0xa0), running(11, 0), running(12, 0)};
	char why[256];
	struct sd_observation o = obs_of(two, 3, 1000);
	assert_int_equal(check(&t, &o, &p, why, sizeof(why)), 1);
	assert_string_equal(why, "parked>=2: 2 threads parked in futex waits");
	o.now_us += 1000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* still true: not again */
	o = obs_of(one, 3, 3000000);
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	o = obs_of(two, 3, 4000000);
	assert_int_equal(check(&t, &o, &p, NULL, 0), 1); /* re-armed */
	assert_int_equal(p.calls, 0);			 /* counting needs no snapshot */
	triggers_release(&t);
}

/* ---- cpu: percent of one core over the interval between checks ---- */

static void test_cpu(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "cpu>=50", &err), 0);
	struct prober p = {.stack = "f"};
	char why[256];
	struct sd_observation o = obs_of(NULL, 0, 1000000);
	o.have_cpu = 1;
	o.cpu_ticks = 1000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* the first check is a baseline */
	o.now_us = 2000000;
	o.cpu_ticks = 1040; /* 40 ticks of 100 Hz in 1 s: 40% */
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	o.now_us = 3000000;
	o.cpu_ticks = 1190; /* 150%: two cores busy */
	assert_int_equal(check(&t, &o, &p, why, sizeof(why)), 1);
	assert_string_equal(why, "cpu>=50: process at 150% of one core");
	/* No CPU reading (the process went away): nothing fires, nothing
	 * remembered. */
	o.now_us = 4000000;
	o.have_cpu = 0;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	triggers_reset(&t);
	o.have_cpu = 1;
	o.cpu_ticks = 5000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* a new baseline after reset */
	triggers_release(&t);
}

/* ---- stuck: same place, then the same stack at half and full duration ---- */

static void test_stuck_confirmed_by_two_snapshots(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "stuck>=2s", &err), 0);
	struct prober p = {.stack = "spin"};
	struct sd_tobs v[] = {running(10, 7)};
	char why[256];
	struct sd_observation o = obs_of(v, 1, 0);
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(t.nstuck, 1);
	assert_int_equal(p.calls, 0); /* too young for a snapshot */
	o.now_us = 1000000;	      /* half the duration: the reference stack */
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(p.calls, 1);
	o.now_us = 1500000; /* nothing due */
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(p.calls, 1);
	o.now_us = 2000000; /* the full duration, the same stack */
	assert_int_equal(check(&t, &o, &p, why, sizeof(why)), 1);
	assert_int_equal(p.calls, 2);
	assert_string_equal(why, "stuck>=2s: thread 10 \"worker\" had the same stack and no "
				 "voluntary context switch for 2.0s (running)");
	o.now_us = 5000000; /* fired: quiet until the thread changes */
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(p.calls, 2);
	triggers_release(&t);
}

static void test_stuck_not_when_the_stack_moves_or_it_switches(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "stuck>=2s", &err), 0);
	struct prober p = {.stack = "a"};
	struct sd_tobs v[] = {running(10, 7)};
	struct sd_observation o = obs_of(v, 1, 0);
	check(&t, &o, &p, NULL, 0);
	o.now_us = 1000000;
	check(&t, &o, &p, NULL, 0);
	p.stack = "b"; /* another stack at the full duration: the clock restarts */
	o.now_us = 2000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(t.stuck[0].since_us, 2000000);
	/* A voluntary context switch restarts the clock too. */
	v[0].vol = 8;
	o.now_us = 3500000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(t.stuck[0].since_us, 3500000);
	/* ...but not the switches our own snapshot caused. */
	struct sd_tobs after[] = {running(10, 9)};
	triggers_rebaseline(&t, after, 1);
	v[0].vol = 9;
	o.now_us = 3600000;
	check(&t, &o, &p, NULL, 0);
	assert_int_equal(t.stuck[0].since_us, 3500000);
	/* A thread that sleeps outside a futex is no candidate. */
	struct sd_tobs asleep[] = {{.tid = 10, .state = 'S', .nr = 7}};
	o = obs_of(asleep, 1, 4000000);
	check(&t, &o, &p, NULL, 0);
	assert_int_equal(t.nstuck, 0);
	triggers_release(&t);
}

/* ---- deadlock: a stable set of parked threads, looked at once ---- */

static void test_deadlock_probed_once_per_parked_set(void **state)
{
	(void)state;
	struct sd_triggers t = {0};
	struct sd_error err = {0};
	assert_int_equal(triggers_parse(&t, "deadlock", &err), 0);
	struct prober p = {.stack = "lock", .cycle = 0};
	struct sd_tobs v[] = {parked(10, 0xb0), parked(11, 0xa0)};
	struct sd_observation o = obs_of(v, 2, 0);
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* first sight: not yet stable */
	assert_int_equal(p.calls, 0);
	o.now_us = 1000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* stable: one look, no cycle */
	assert_int_equal(p.calls, 1);
	o.now_us = 2000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0); /* the same set: no second look */
	assert_int_equal(p.calls, 1);
	triggers_release(&t);

	/* The same, with a cycle: fires once, and stays quiet while it lasts. */
	assert_int_equal(triggers_parse(&t, "deadlock", &err), 0);
	p.cycle = 1;
	p.calls = 0;
	char why[256];
	o.now_us = 0;
	check(&t, &o, &p, NULL, 0);
	o.now_us = 1000000;
	assert_int_equal(check(&t, &o, &p, why, sizeof(why)), 1);
	assert_string_equal(why, "deadlock: 2 threads in a cycle: 10 \"worker\" -> 11 \"other\" "
				 "-> 10");
	o.now_us = 2000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(p.calls, 1);
	/* Nobody parked: never a look. */
	o = obs_of(NULL, 0, 3000000);
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	o.now_us = 4000000;
	assert_int_equal(check(&t, &o, &p, NULL, 0), 0);
	assert_int_equal(p.calls, 1);
	triggers_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_parked_fires_once_and_rearms),
	    cmocka_unit_test(test_cpu),
	    cmocka_unit_test(test_stuck_confirmed_by_two_snapshots),
	    cmocka_unit_test(test_stuck_not_when_the_stack_moves_or_it_switches),
	    cmocka_unit_test(test_deadlock_probed_once_per_parked_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
