// SPDX-License-Identifier: MIT
// Unit tests of goroutines in saved snapshots (store/snapio-go.c): a Go
// snapshot's goroutines and wait objects survive save and load; damaged
// members are refused with their place named; every byte flipped gives an
// error or a snapshot, never a crash; a file without goroutines loads.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapio.h"

static const char *S(struct sd_snapshot *s, const char *v)
{
	return strpool_intern(s->pool, v);
}

/* Two goroutines on one mutex (one waits, the other holds it) and one in
 * a select on two channels. */
static struct sd_snapshot *sample(void)
{
	struct sd_snapshot *s = snapshot_new(0);
	s->pid = 4242;
	s->comm = S(s, "srv");
	s->time = 1700000000.5;
	struct sd_thread *th = snapshot_add_thread(s, 4242);
	th->name = S(s, "srv");
	s->go_read = 1;
	s->go_version = S(s, "go1.24.4");
	s->golocks_note = S(s, "a note");
	s->ngoobjects = 3;
	s->goobjects = calloc(3, sizeof(*s->goobjects));
	const char *kinds[] = {"sync.Mutex", "chan", "chan"};
	for (size_t i = 0; i < 3; i++) {
		struct sd_goobject *o = &s->goobjects[i];
		o->kind = kinds[i];
		o->address = 0xc000010000 + 0x100 * i;
		o->locked = i ? -1 : 1;
		o->counted = i ? 0 : 1;
		o->holder_frame = -1;
		o->waiters = calloc(1, sizeof(uint64_t));
		o->waiters[0] = i ? 9 : 7;
		o->nwaiters = 1;
		o->candidates = calloc(1, sizeof(uint64_t));
		o->candidate_frames = calloc(1, sizeof(int));
	}
	s->goobjects[0].symbol = S(s, "main.mu");
	s->goobjects[0].holder = 8;
	s->goobjects[0].holder_frame = 1;
	s->goobjects[0].candidates[0] = 8;
	s->goobjects[0].candidate_frames[0] = 1;
	s->goobjects[0].ncandidates = 1;
	s->ngoroutines = 3;
	s->goroutines = calloc(3, sizeof(*s->goroutines));
	for (size_t i = 0; i < 3; i++) {
		struct sd_goroutine *g = &s->goroutines[i];
		g->id = 7 + i;
		g->status = i == 1 ? SD_GO_RUNNING : SD_GO_WAITING;
		g->wait_seconds = i == 0 ? 120.5 : -1;
		g->wait_reason = i == 1 ? NULL : S(s, i ? "select" : "sync.Mutex.Lock");
		g->thread = i == 1 ? 4242 : 0;
		g->parent = 1;
		g->created_by.pc = 0x401000;
		g->created_by.function = S(s, "main.main");
		g->created_by.file = S(s, "/src/main.go");
		g->created_by.line = 40 + (int)i;
		g->nframes = 2;
		g->frames = calloc(2, sizeof(*g->frames));
		for (size_t k = 0; k < 2; k++) {
			g->frames[k].pc = 0x402000 + 0x10 * k + i;
			g->frames[k].function = S(s, k ? "main.work" : "runtime.gopark");
			g->frames[k].file = S(s, "/src/x.go");
			g->frames[k].line = 10 + (int)k;
			g->frames[k].module = S(s, "srv");
		}
		g->waits_on = calloc(2, sizeof(size_t));
		g->labels = calloc(2, sizeof(char *));
		g->labels_read = 1;
	}
	s->goroutines[0].waits_on[0] = 0;
	s->goroutines[0].nwaits_on = 1;
	s->goroutines[1].nholds = 1;
	s->goroutines[1].labels[0] = S(s, "job");
	s->goroutines[1].labels[1] = S(s, "a \"b\"");
	s->goroutines[1].nlabels = 1;
	s->goroutines[2].waits_on[0] = 1;
	s->goroutines[2].waits_on[1] = 2;
	s->goroutines[2].nwaits_on = 2;
	s->goroutines[2].labels_read = 0;
	return s;
}

static char *dump(const struct sd_snapshot *s, size_t *len)
{
	struct snapio_meta m;
	snapio_meta_init(&m);
	m.hostname = "h";
	m.kernel = "k";
	m.machine = "x86_64";
	return snapio_dumps(s, &m, 0, len);
}

static void test_roundtrip(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	struct sd_error err = {0};
	struct sd_snapshot *l = snapio_parse("go.json", txt, len, NULL, &err);
	if (!l)
		fail_msg("%s", err.msg);
	assert_int_equal(l->go_read, 1);
	assert_string_equal(l->go_version, "go1.24.4");
	assert_true(strstr(l->golocks_note, "a note") != NULL);
	assert_int_equal(l->ngoroutines, 3);
	assert_int_equal(l->ngoobjects, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct sd_goroutine *a = &s->goroutines[i], *b = &l->goroutines[i];
		assert_int_equal(a->id, b->id);
		assert_int_equal(a->status, b->status);
		assert_true(a->wait_reason ? !strcmp(a->wait_reason, b->wait_reason)
					   : !b->wait_reason);
		assert_true(a->wait_seconds == b->wait_seconds);
		assert_int_equal(a->thread, b->thread);
		assert_int_equal(a->parent, b->parent);
		assert_string_equal(b->created_by.function, "main.main");
		assert_int_equal(b->created_by.line, a->created_by.line);
		assert_int_equal(a->nframes, b->nframes);
		for (size_t k = 0; k < a->nframes; k++) {
			assert_int_equal(a->frames[k].pc, b->frames[k].pc);
			assert_string_equal(a->frames[k].function, b->frames[k].function);
			assert_int_equal(a->frames[k].line, b->frames[k].line);
		}
		assert_int_equal(a->nwaits_on, b->nwaits_on);
		for (size_t k = 0; k < a->nwaits_on; k++)
			assert_int_equal(a->waits_on[k], b->waits_on[k]);
		assert_int_equal(a->labels_read, b->labels_read);
		assert_int_equal(a->nlabels, b->nlabels);
		assert_int_equal(a->nholds, b->nholds);
	}
	assert_string_equal(l->goroutines[1].labels[1], "a \"b\"");
	const struct sd_goobject *o = &l->goobjects[0];
	assert_string_equal(o->kind, "sync.Mutex");
	assert_string_equal(o->symbol, "main.mu");
	assert_int_equal(o->locked, 1);
	assert_int_equal(o->holder, 8);
	assert_int_equal(o->holder_frame, 1);
	assert_int_equal(o->ncandidates, 1);
	assert_int_equal(o->nwaiters, 1);
	assert_int_equal(o->waiters[0], 7);
	assert_int_equal(l->goobjects[1].locked, -1);
	/* Saved again, the same text. */
	size_t len2;
	char *txt2 = dump(l, &len2);
	char *a = strstr(txt, "\"go\":"), *b = strstr(txt2, "\"go\":");
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(txt2);
	snapshot_free(l);
	free(txt);
	snapshot_free(s);
}

/* TXT with the first FROM replaced by TO, parsed: the error, or "" when it
 * loaded. */
static void expect(const char *txt, const char *from, const char *to, const char *msg)
{
	const char *p = strstr(txt, from);
	assert_non_null(p);
	size_t n = strlen(txt) + strlen(to) + 1;
	char *bad = malloc(n);
	snprintf(bad, n, "%.*s%s%s", (int)(p - txt), txt, to, p + strlen(from));
	struct sd_error err = {0};
	struct sd_snapshot *l = snapio_parse("bad.json", bad, strlen(bad), NULL, &err);
	if (!*msg) {
		if (!l)
			fail_msg("refused: %s", err.msg);
		snapshot_free(l);
	} else {
		assert_null(l);
		if (!strstr(err.msg, msg))
			fail_msg("\"%s\" does not say \"%s\"", err.msg, msg);
	}
	free(bad);
}

static void test_rejects(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	expect(txt, "\"status\":\"waiting\"", "\"status\":\"asleep\"",
	       "bad.json: goroutines[0].status: \"asleep\" is no goroutine status");
	expect(txt, "\"id\":7", "\"id\":-7", "goroutines[0].id: -7 is out of range");
	expect(txt, "\"wait_seconds\":120.5", "\"wait_seconds\":-1",
	       "goroutines[0].wait_seconds: expected a number of seconds");
	expect(txt, "\"labels\":{\"job\"", "\"labels\":{\"n\":1,\"job\"",
	       "goroutines[1].labels: the value of \"n\" is an integer");
	expect(txt, "\"go_objects\":[{\"kind\":\"sync.Mutex\"", "\"go_objects\":[{\"kind\":3",
	       "go_objects[0].kind: expected a string");
	expect(txt, "\"address\":\"0xc000010000\"", "\"address\":\"0xzz\"",
	       "invalid hex number \"0xzz\"");
	expect(txt, "\"go\":{", "\"go\":[],\"x\":{", "go: expected an object, found an array");
	/* A wait on an object the file does not list. */
	expect(txt, "\"waiting_on\":[{\"kind\":\"sync.Mutex\",\"address\":\"0xc000010000\"",
	       "\"waiting_on\":[{\"kind\":\"sync.Mutex\",\"address\":\"0xc000099000\"",
	       "goroutines[0].waiting_on[0]: sync.Mutex 0xc000099000 is not among go_objects");
	/* No go_objects (a dump's JSON): rebuilt from waiting_on. */
	expect(txt, "\"go_objects\":", "\"go_objects_x\":", "");
	free(txt);
	snapshot_free(s);
}

/* Flip every byte of the goroutines' part in turn: an error or a
 * snapshot, never a crash. */
static void test_corrupted_bytes(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	size_t from = (size_t)(strstr(txt, "\"go\":") - txt);
	char *bad = malloc(len);
	for (size_t i = from; i < len - 1; i++) {
		memcpy(bad, txt, len);
		for (unsigned v = 0; v < 4; v++) {
			bad[i] = "x\"{0"[v];
			struct sd_error err = {0};
			struct sd_snapshot *l = snapio_parse("c.json", bad, len, NULL, &err);
			if (l)
				snapshot_free(l);
			else
				assert_true(!strncmp(err.msg, "c.json: ", 8));
		}
	}
	free(bad);
	free(txt);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_rejects),
	    cmocka_unit_test(test_corrupted_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
