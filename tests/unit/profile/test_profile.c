// SPDX-License-Identifier: MIT
// Unit tests of profile aggregation and rendering without a live process:
// merging by function and by address, thread families, on/off-CPU and idle
// filters over hand-made snapshots, lock statistics, folded and JSON round
// trips, diff arithmetic, and the pprof encoding decoded back.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "profile.h"
#include "format-profile.h"
#include "topview.h"
#include "profile.pb-c.h"

static struct sd_pframe fr(const char *fn, uint64_t off)
{
	struct sd_pframe f;
	memset(&f, 0, sizeof(f));
	f.function = fn;
	f.module = "app";
	f.offset = off;
	f.pc = 0x400000 + off;
	f.symoff = off & 0xf;
	return f;
}

static void test_merge_by_function(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	struct sd_pframe a[] = {fr("leaf", 0x11), fr("mid", 0x21), fr("root", 0x31)};
	struct sd_pframe b[] = {fr("leaf", 0x15), fr("mid", 0x21), fr("root", 0x31)};
	ssize_t i1 = profile_add_stack(p, a, 3, 1, 1, 10, 11, "w-1", "running");
	ssize_t i2 = profile_add_stack(p, b, 3, 2, 0, 10, 12, "w-2", "futex");
	assert_int_equal(i1, i2);
	assert_int_equal(p->nstacks, 1);
	assert_int_equal(p->stacks[0].count, 3);
	assert_int_equal(p->stacks[0].on_cpu, 1);
	assert_int_equal(p->stacks[0].nthreads, 2);
	assert_int_equal(p->thread_samples, 3);
	assert_string_equal(p->stacks[0].states[0].what, "running");
	assert_int_equal(p->stacks[0].states[1].count, 2);
	profile_free(p);

	struct sd_profile_opts o;
	profile_opts_init(&o);
	o.by_address = 1;
	p = profile_new(&o);
	profile_add_stack(p, a, 3, 1, 1, 10, 11, "w-1", NULL);
	profile_add_stack(p, b, 3, 1, 1, 10, 11, "w-1", NULL);
	assert_int_equal(p->nstacks, 2);
	assert_string_equal(p->stacks[0].frames[0].name, "leaf+0x1");
	assert_string_equal(p->stacks[1].frames[0].name, "leaf+0x5");
	profile_free(p);
}

static void test_unknown_frames(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	struct sd_pframe f[2];
	memset(f, 0, sizeof(f));
	f[0].module = "libx.so";
	f[0].offset = 0x1234;
	f[1].pc = 0x99;
	profile_add_stack(p, f, 2, 1, 0, 1, 1, "t", NULL);
	assert_string_equal(p->stacks[0].frames[0].name, "[libx.so]");
	assert_string_equal(p->stacks[0].frames[1].name, "[unknown]");
	profile_free(p);
}

static void test_thread_family(void **state)
{
	(void)state;
	char buf[64];
	assert_string_equal(profile_thread_family("worker-12", buf, sizeof(buf)), "worker-*");
	assert_string_equal(profile_thread_family("pool-2-thread-31", buf, sizeof(buf)),
			    "pool-*-thread-*");
	assert_string_equal(profile_thread_family("main", buf, sizeof(buf)), "main");
	assert_string_equal(profile_thread_family("", buf, sizeof(buf)), "");
	assert_string_equal(profile_thread_family("abcdef", buf, 4), "abc");

	struct sd_profile_opts o;
	profile_opts_init(&o);
	o.group_threads = 1;
	struct sd_profile *p = profile_new(&o);
	struct sd_pframe a[] = {fr("work", 1)};
	for (int round = 0; round < 2; round++)
		for (int i = 1; i <= 3; i++) {
			snprintf(buf, sizeof(buf), "worker-%d", i);
			profile_add_stack(p, a, 1, 1, 1, 7, 100 + i, buf, NULL);
		}
	assert_int_equal(p->stacks[0].nthreads, 1);
	assert_string_equal(p->stacks[0].threads[0].name, "worker-*");
	assert_int_equal(p->stacks[0].threads[0].ntids, 3);
	assert_int_equal(p->stacks[0].threads[0].count, 6);
	profile_free(p);
}

/* A hand-made snapshot: symbolized frames, states and waits. */
static struct sd_thread *add_thread(struct sd_snapshot *s, pid_t tid, const char *name,
				    char state, enum sd_wait_kind kind, long nr,
				    const char *const *fns)
{
	struct sd_thread *th = snapshot_add_thread(s, tid);
	th->name = strpool_intern(s->pool, name);
	th->state = state;
	th->syscall_nr = nr;
	th->wait.kind = kind;
	for (int i = 0; fns[i]; i++) {
		struct sd_frame *f = snapshot_add_frame(th);
		f->function = strpool_intern(s->pool, fns[i]);
		f->module = strpool_intern(s->pool, "app");
		f->pc = 0x1000 + (uint64_t)i;
	}
	return th;
}

static void test_snapshot_filters(void **state)
{
	(void)state;
	static const char *const spin[] = {"spin", "main", NULL};
	static const char *const epoll[] = {"epoll_wait", "loop", NULL};
	static const char *const cond[] = {"__futex_abstimed_wait_common", "___pthread_cond_wait",
					   "take_job", NULL};
	static const char *const lock[] = {"__lll_lock_wait", "pthread_mutex_lock", "update", NULL};
	static const char *const sleep_restart[] = {"__GI___clock_nanosleep", "nap", NULL};
	static const char *const kicked[] = {"__libc_pause", "main", NULL};
	for (int mode = 0; mode < 4; mode++) {
		struct sd_profile_opts o;
		profile_opts_init(&o);
		o.no_idle = mode == 1;
		o.cpu = mode == 2 ? SD_CPU_ON : mode == 3 ? SD_CPU_OFF : SD_CPU_ALL;
		struct sd_profile *p = profile_new(&o);
		for (int k = 0; k < 2; k++) {
			struct sd_snapshot *s = snapshot_new(42);
			s->comm = strpool_intern(s->pool, "app");
			add_thread(s, 1, "spinner", 'R', SD_WAIT_RUNNING, -1, spin);
			add_thread(s, 2, "loop", 'S', SD_WAIT_SYSCALL, 232, epoll);
			add_thread(s, 3, "pool-1", 'S', SD_WAIT_FUTEX, 202, cond);
			add_thread(s, 4, "writer", 'S', SD_WAIT_MUTEX, 202, lock);
			add_thread(s, 5, "napper", 'S', SD_WAIT_SYSCALL, 219, sleep_restart);
			/* Runnable at the entry of pause(): re-entering the wait
			 * our last freeze interrupted, so off CPU and idle. */
			add_thread(s, 6, "main", 'R', SD_WAIT_RUNNING, -1, kicked);
			ssize_t g[6];
			profile_add_snapshot(p, NULL, s, g);
			for (int i = 0; i < 6; i++)
				assert_true(g[i] >= 0);
			snapshot_free(s);
			p->samples++;
		}
		switch (mode) {
		case 0:
			assert_int_equal(p->thread_samples, 12);
			assert_int_equal(p->on_cpu, 2);
			break;
		case 1: /* idle: epoll, condvar (by frames), restarted sleep, pause */
			assert_int_equal(p->thread_samples, 4);
			assert_int_equal(p->idle, 8);
			break;
		case 2:
			assert_int_equal(p->thread_samples, 2);
			assert_int_equal(p->filtered, 10);
			break;
		case 3:
			assert_int_equal(p->thread_samples, 10);
			assert_int_equal(p->on_cpu, 0);
			break;
		}
		if (mode == 0) {
			/* The kicked thread is labelled by its wait, not "running". */
			profile_sort(p);
			int seen = 0;
			for (size_t i = 0; i < p->nstacks; i++)
				if (!strcmp(p->stacks[i].frames[0].name, "__libc_pause")) {
					assert_string_equal(p->stacks[i].states[0].what, "pause");
					assert_int_equal(p->stacks[i].on_cpu, 0);
					seen = 1;
				}
			assert_true(seen);
		}
		profile_free(p);
	}
}

static void test_locks(void **state)
{
	(void)state;
	static const char *const hold[] = {"write_ledger", "flush", NULL};
	static const char *const wait[] = {"__lll_lock_wait", "update", NULL};
	struct sd_profile_opts o;
	profile_opts_init(&o);
	o.locks = 1;
	struct sd_profile *p = profile_new(&o);
	for (int k = 0; k < 4; k++) {
		struct sd_snapshot *s = snapshot_new(42);
		add_thread(s, 10, "holder", 'S', SD_WAIT_SYSCALL, 35, hold);
		int nw = k < 2 ? 3 : 1; /* 3, 3, 1, 1 waiters */
		for (int i = 0; i < nw; i++) {
			struct sd_thread *th =
			    add_thread(s, 20 + i, "waiter", 'S', SD_WAIT_MUTEX, 202, wait);
			th->wait.address = 0x5000;
			th->wait.owner = k == 3 ? 0 : 10;
			th->wait.owner_known = k != 3;
		}
		profile_add_snapshot(p, NULL, s, NULL);
		snapshot_free(s);
	}
	assert_int_equal(p->nlocks, 1);
	const struct sd_plock *l = &p->locks[0];
	assert_int_equal(l->contended, 4);
	assert_int_equal(l->waiters, 8);
	assert_int_equal(l->max_waiters, 3);
	assert_int_equal(l->nholders, 2);
	assert_int_equal(l->holders[0].count, 3);
	assert_string_equal(l->holders[0].name, "holder");
	assert_string_equal(p->stacks[l->holders[0].stack].frames[0].name, "write_ledger");
	assert_int_equal(l->holders[1].stack, -1);
	struct strbuf sb;
	strbuf_init(&sb);
	format_profile_locks(&sb, p, NULL);
	assert_non_null(strstr(sb.buf, "mutex 0x5000: waiters avg 2.00, max 3 per sample; "
					"contended in 4 of 4 samples (100%)"));
	assert_non_null(strstr(sb.buf, "holder: write_ledger < flush"));
	strbuf_release(&sb);
	profile_free(p);
}

static void test_folded_round_trip(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	struct sd_pframe a[] = {fr("c;d", 1), fr("b b", 2), fr("a", 3)};
	struct sd_pframe b[] = {fr("x\n", 1), fr("a", 3)};
	profile_add_stack(p, a, 3, 5, 0, 1, 1, "t", NULL);
	profile_add_stack(p, b, 2, 7, 0, 1, 1, "t", NULL);
	struct strbuf sb;
	strbuf_init(&sb);
	format_profile_folded(&sb, p);
	assert_string_equal(sb.buf, "a;x\\n 7\na;b b;c:d 5\n");
	struct sd_error err = {0};
	struct sd_profile *q = profile_parse(sb.buf, sb.len, "mem", &err);
	assert_non_null(q);
	assert_int_equal(q->nstacks, 2);
	assert_int_equal(profile_total(q), 12);
	profile_sort(q);
	assert_string_equal(q->stacks[0].frames[0].name, "x\\n");
	assert_string_equal(q->stacks[1].frames[0].name, "c:d");
	assert_string_equal(q->stacks[1].frames[1].name, "b b");
	assert_string_equal(q->stacks[1].frames[2].name, "a");
	profile_free(q);
	strbuf_release(&sb);

	/* JSON round trip keeps threads and on-CPU counts. */
	struct jsonw w;
	jsonw_init(&w, &sb, 0);
	format_profile_json(&w, p, NULL);
	assert_int_equal(jsonw_finish(&w), 0);
	jsonw_release(&w);
	q = profile_parse(sb.buf, sb.len, "mem", &err);
	assert_non_null(q);
	assert_int_equal(profile_total(q), 12);
	assert_int_equal(q->nstacks, 2);
	strbuf_release(&sb);
	profile_free(q);
	profile_free(p);

	static const char *const bad[] = {"a;b\n", "a;b x\n", " 5\n", "a;b -3\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_null(profile_parse(bad[i], strlen(bad[i]), "bad", &err));
		assert_non_null(strstr(err.msg, "line 1 is not a folded stack"));
	}
	assert_null(profile_parse("{]", 2, "j", &err));
	assert_non_null(strstr(err.msg, "invalid JSON"));
	/* Comments and blank lines are fine. */
	q = profile_parse("# c\n\na;b 3\r\n", 11, "ok", &err);
	assert_non_null(q);
	assert_int_equal(profile_total(q), 3);
	profile_free(q);
}

static void test_diff(void **state)
{
	(void)state;
	struct sd_error err = {0};
	const char *ta = "r;a 300\nr;b 100\n", *tb = "r;a 400\nr;b 300\nr;c 100\n";
	struct sd_profile *a = profile_parse(ta, strlen(ta), "a", &err);
	struct sd_profile *b = profile_parse(tb, strlen(tb), "b", &err);
	struct sd_profile *d = profile_diff(a, b);
	assert_int_equal(d->total_a, 400);
	assert_int_equal(profile_total(d), 800);
	int seen = 0;
	for (size_t i = 0; i < d->nstacks; i++) {
		const struct sd_pstack *st = &d->stacks[i];
		const char *leaf = st->frames[0].name;
		if (!strcmp(leaf, "a")) {
			assert_int_equal(st->count, 400);
			assert_true(st->value_a > 599.9 && st->value_a < 600.1);
			seen++;
		} else if (!strcmp(leaf, "c")) {
			assert_int_equal(st->count, 100);
			assert_true(st->value_a == 0);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	struct sd_flame *f = profile_flame(d);
	assert_int_equal(f->value, 800);
	assert_true(f->delta > -0.01 && f->delta < 0.01);
	profile_flame_free(f);
	profile_free(d);
	profile_free(a);
	profile_free(b);
}

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *outlen)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = cap - z.avail_out;
	inflateEnd(&z);
	return out;
}

static void test_pprof(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	p->interval_us = 50000;
	struct sd_pframe a[] = {fr("inl", 0x10), fr("outer", 0x10), fr("root", 0x30)};
	a[0].flags = SD_FRAME_INLINED;
	a[0].line = 7;
	a[1].line = 20;
	struct sd_pframe b[] = {fr("other", 0x40), fr("root", 0x30)};
	profile_add_stack(p, a, 3, 4, 3, 9, 90, "w-1", NULL);
	profile_add_stack(p, a, 3, 2, 0, 9, 91, "w-2", NULL);
	profile_add_stack(p, b, 2, 5, 5, 9, 90, "w-1", NULL);
	uint8_t *gz;
	size_t gzlen;
	struct sd_error err = {0};
	assert_int_equal(format_profile_pprof(p, &gz, &gzlen, &err), 0);
	assert_true(gzlen > 2 && gz[0] == 0x1f && gz[1] == 0x8b);
	size_t rawlen;
	uint8_t *raw = gunzip(gz, gzlen, &rawlen);
	Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	assert_non_null(pb);
	assert_string_equal(pb->string_table[0], "");
	assert_int_equal(pb->n_sample_type, 2);
	assert_string_equal(pb->string_table[pb->sample_type[0]->type], "samples");
	assert_string_equal(pb->string_table[pb->sample_type[1]->unit], "nanoseconds");
	assert_int_equal(pb->period, 50000000);
	int64_t total = 0, wall = 0;
	for (size_t i = 0; i < pb->n_sample; i++) {
		total += pb->sample[i]->value[0];
		wall += pb->sample[i]->value[1];
	}
	assert_int_equal(total, 11);
	assert_int_equal(wall, 11 * 50000000LL);
	/* w-1 on-cpu 3, w-1 off-cpu 1, w-2 off-cpu 2, w-1 on-cpu 5: 4 samples. */
	assert_int_equal(pb->n_sample, 4);
	/* The inline chain is one location of two lines, innermost first. */
	int found = 0;
	for (size_t i = 0; i < pb->n_location; i++) {
		Perftools__Profiles__Location *l = pb->location[i];
		if (l->n_line != 2)
			continue;
		found = 1;
		assert_int_equal(l->line[0]->line, 7);
		assert_int_equal(l->line[1]->line, 20);
		for (size_t k = 0; k < pb->n_function; k++) {
			if (pb->function[k]->id == l->line[0]->function_id)
				assert_string_equal(pb->string_table[pb->function[k]->name], "inl");
			if (pb->function[k]->id == l->line[1]->function_id)
				assert_string_equal(pb->string_table[pb->function[k]->name], "outer");
		}
	}
	assert_true(found);
	assert_int_equal(pb->n_location, 3);
	assert_int_equal(pb->n_function, 4);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);
	free(gz);
	profile_free(p);
}

static void test_svg_and_text(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	struct sd_pframe a[] = {fr("<leaf&>", 1), fr("root", 2)};
	profile_add_stack(p, a, 2, 3, 3, 1, 2, "t\x1b[31m", NULL);
	struct strbuf sb;
	strbuf_init(&sb);
	struct sd_prender ro = {.limit = 20};
	format_profile_svg(&sb, p, &ro);
	assert_non_null(strstr(sb.buf, "<title>&lt;leaf&amp;&gt; (3 samples, 100.00%"));
	assert_null(strstr(sb.buf, "<leaf"));
	strbuf_release(&sb);
	strbuf_init(&sb);
	format_profile_top(&sb, p, &ro);
	/* A thread name from the target cannot drive the terminal. */
	assert_null(strchr(sb.buf, '\x1b'));
	assert_non_null(strstr(sb.buf, "t\\e[31m (2)"));
	strbuf_release(&sb);
	profile_free(p);
}

/* After profile_sort moved the stacks, a stack seen again is found at its
 * new index (the stacks index was rebuilt), and a new one is added. */
static void test_index_after_sort(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	char names[40][16];
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "fn%d", i);
		struct sd_pframe f[] = {fr(names[i], 1), fr("root", 2)};
		profile_add_stack(p, f, 2, (uint64_t)i + 1, 0, 1, 2, "t", NULL);
	}
	profile_sort(p);
	assert_int_equal(p->nstacks, 40);
	assert_string_equal(p->stacks[0].frames[0].name, "fn39");
	for (int i = 0; i < 40; i++) {
		struct sd_pframe f[] = {fr(names[i], 1), fr("root", 2)};
		ssize_t k = profile_add_stack(p, f, 2, 1, 0, 1, 2, "t", NULL);
		assert_int_equal(k, 39 - i);
		assert_string_equal(p->stacks[k].frames[0].name, names[i]);
		assert_int_equal(p->stacks[k].count, (uint64_t)i + 2);
	}
	struct sd_pframe g[] = {fr("other", 1), fr("root", 2)};
	assert_int_equal(profile_add_stack(p, g, 2, 1, 0, 1, 2, "t", NULL), 40);
	assert_int_equal(p->nstacks, 41);
	profile_free(p);
}

/* top's functions: every function of deep stacks, own and total samples,
 * recursion counted once per stack. */
static void test_top_functions(void **state)
{
	(void)state;
	struct sd_profile *p = profile_new(NULL);
	enum { DEPTH = 60 };
	char names[2][DEPTH][16];
	struct sd_pframe f[DEPTH];
	for (int s = 0; s < 2; s++) {
		for (int i = 0; i < DEPTH - 1; i++) {
			snprintf(names[s][i], sizeof(names[s][i]), "s%d_f%d", s, i);
			f[i] = fr(names[s][i], (uint64_t)i);
		}
		f[DEPTH - 1] = fr("main", 0);
		profile_add_stack(p, f, DEPTH, s ? 5 : 3, 0, 1, 2, "t", NULL);
	}
	/* A recursive stack: rec, rec, main. */
	struct sd_pframe r[] = {fr("rec", 1), fr("rec", 2), fr("main", 0)};
	profile_add_stack(p, r, 3, 2, 0, 1, 2, "t", NULL);
	size_t n;
	struct top_func *v = top_functions(p, NULL, 0, &n);
	assert_int_equal(n, 2 * (DEPTH - 1) + 2);
	uint64_t own = 0;
	for (size_t i = 0; i < n; i++) {
		own += v[i].own;
		if (!strcmp(v[i].name, "main")) {
			assert_int_equal(v[i].own, 0);
			assert_int_equal(v[i].total, 10);
		} else if (!strcmp(v[i].name, "rec")) {
			assert_int_equal(v[i].own, 2);
			assert_int_equal(v[i].total, 2);
		} else {
			assert_int_equal(v[i].total, v[i].name[1] == '1' ? 5 : 3);
		}
	}
	assert_int_equal(own, 10);
	/* Most own samples first. */
	assert_string_equal(v[0].name, "s1_f0");
	assert_int_equal(v[0].own, 5);
	free(v);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge_by_function),
	    cmocka_unit_test(test_unknown_frames),
	    cmocka_unit_test(test_thread_family),
	    cmocka_unit_test(test_snapshot_filters),
	    cmocka_unit_test(test_locks),
	    cmocka_unit_test(test_folded_round_trip),
	    cmocka_unit_test(test_diff),
	    cmocka_unit_test(test_pprof),
	    cmocka_unit_test(test_svg_and_text),
	    cmocka_unit_test(test_index_after_sort),
	    cmocka_unit_test(test_top_functions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
