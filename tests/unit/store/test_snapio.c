// SPDX-License-Identifier: MIT
// Unit tests of the saved snapshot format: a snapshot survives save and
// load unchanged (gzip or not), and the loader refuses truncated,
// corrupted, wrong-version and foreign files with the file and the place
// named, without crashing on any prefix of a valid file.
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "format.h"
#include "snapio.h"

static char tmpdir[256];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sd-test-snapio.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* KEEP=1 in the environment keeps the directory for a look after a failure. */
static int teardown_dir(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return getenv("KEEP") ? 0 : (system(cmd) == 0 ? 0 : -1);
}

/* A snapshot with every field the format carries. */
static struct sd_snapshot *sample(void)
{
	struct sd_snapshot *s = snapshot_new(4242);
	struct strpool *p = s->pool;
	s->comm = strpool_intern(p, "ledger");
	s->exe = strpool_intern(p, "/usr/bin/ledger");
	s->time = 1700000000.25;
	s->state = 'S';
	s->pause_us = 812;
	s->capture_us = 900;
	s->unwind_us = 400;
	s->symbolize_us = 30000;
	s->stack_bytes = 65536;
	s->partial = 1;

	struct sd_thread *a = snapshot_add_thread(s, 4242);
	a->name = strpool_intern(p, "ledger");
	a->state = 'S';
	a->syscall_known = 1;
	a->syscall_nr = 34;
	a->wchan = strpool_intern(p, "__do_sys_pause");
	a->wait.kind = SD_WAIT_SYSCALL;
	a->vol_ctxsw = 7;
	a->nonvol_ctxsw = 2;
	a->utime = 11;
	a->stime = 3;
	struct sd_frame *f = snapshot_add_frame(a);
	f->pc = 0x7f0000001234;
	f->sp = 0x7ffc00000010;
	f->flags = SD_FRAME_EXACT | SD_FRAME_DEBUGINFO;
	f->function = strpool_intern(p, "__libc_pause");
	f->module = strpool_intern(p, "libc.so.6");
	f->build_id = strpool_intern(p, "93ac61ec5a8eb1396f9fbd350e3169a558528a40");
	f->offset = 0xd3df2;
	f->symoff = 0x12;
	f->file = strpool_intern(p, "pause.c");
	f->line = 29;
	f = snapshot_add_frame(a);
	f->pc = 0x5600000013d5;
	f->flags = SD_FRAME_INLINED | SD_FRAME_FP;
	f->function = NULL; /* unknown */
	f->module = strpool_intern(p, "ledger");
	f->offset = 0x13d5;

	struct sd_thread *b = snapshot_add_thread(s, 4243);
	/* A name that is not valid UTF-8, as a target may choose. */
	b->name = strpool_intern(p, "w\xff\x1b[31mx");
	b->state = 'S';
	b->syscall_known = 1;
	b->syscall_nr = 202;
	b->syscall_args[0] = 0x5600000040a0;
	b->syscall_args[1] = 0x80;
	b->syscall_args[2] = 2;
	b->wait.kind = SD_WAIT_MUTEX;
	b->wait.address = 0x5600000040a0;
	b->wait.symbol = strpool_intern(p, "g_ledger_lock");
	b->wait.owner = 4244;
	b->wait.owner_known = 1;
	b->wait.subkind = strpool_intern(p, "normal");
	b->lockmem = calloc(1, sizeof(*b->lockmem));
	b->nlockmem = 1;
	b->lockmem[0].addr = 0x5600000040a0;
	/* 8 bytes lock analysis read, then 8 it did not (a secret). */
	b->lockmem[0].len = 16;
	memcpy(b->lockmem[0].bytes, "\x02\0\0\0\x94\x10\0\0SECRET!!", 16);
	b->lockmem[0].used[0] = 0xff;
	f = snapshot_add_frame(b);
	f->pc = 0x7f0000005678;
	f->function = strpool_intern(p, "__lll_lock_wait");
	f->module = strpool_intern(p, "libc.so.6");

	struct sd_thread *c = snapshot_add_thread(s, 4244);
	c->name = strpool_intern(p, "flusher");
	c->state = 'R';
	c->running = 1;
	c->syscall_known = 1;
	c->wait.kind = SD_WAIT_RUNNING;
	c->status = SD_THREAD_NOT_STOPPED;
	c->error = strpool_intern(p, "did not stop in time");

	s->modules = calloc(2, sizeof(*s->modules));
	s->nmodules = 2;
	s->modcap = 2;
	s->modules[0].name = strpool_intern(p, "ledger");
	s->modules[0].path = strpool_intern(p, "/usr/bin/ledger");
	s->modules[0].build_id = strpool_intern(p, "11a9d969c27f3e85613e337badb580bdbc4a7508");
	s->modules[0].start = 0x560000000000;
	s->modules[0].end = 0x560000005000;
	s->modules[0].bias = 0x560000000000;
	s->modules[1].name = strpool_intern(p, "libc.so.6");
	s->modules[1].path = strpool_intern(p, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	s->modules[1].start = 0x7f0000000000;
	s->modules[1].end = 0x7f00001d0000;
	return s;
}

static void write_bytes(const char *path, const void *p, size_t n);
static char *path_in(const char *name);

/* The dump JSON of S (format-json.c), as text (compact) and parsed. */
static char *dump_text(const struct sd_snapshot *s)
{
	struct strbuf sb;
	strbuf_init(&sb);
	struct jsonw w;
	jsonw_init(&w, &sb, 0);
	format_json_snapshot(&w, s);
	assert_int_equal(jsonw_finish(&w), 0);
	jsonw_release(&w);
	return strbuf_detach(&sb);
}

static json_t *parsed(char *txt)
{
	json_error_t je;
	json_t *o = json_loads(txt, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		fail_msg("not JSON (%s): %s", je.text, txt);
	free(txt);
	return o;
}

static char *dump(const struct sd_snapshot *s, size_t *len)
{
	struct snapio_meta m;
	snapio_meta_init(&m);
	m.reason = "unit test";
	m.seq = 3;
	m.ppid = 1;
	m.uid = 1000;
	m.cmdline = "ledger --fast";
	m.hostname = "testhost";
	m.kernel = "6.1.0";
	m.machine = "x86_64";
	return snapio_dumps(s, &m, 1, len);
}

static void test_roundtrip(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	struct snapio_meta m;
	struct sd_error err = {0};
	struct sd_snapshot *l = snapio_parse("mem", txt, len, &m, &err);
	assert_non_null(l);
	assert_int_equal(m.version, SNAPIO_VERSION);
	assert_string_equal(m.reason, "unit test");
	assert_int_equal(m.seq, 3);
	assert_int_equal(m.uid, 1000);
	assert_string_equal(m.hostname, "testhost");
	assert_string_equal(m.cmdline, "ledger --fast");
	assert_int_equal(l->pid, 4242);
	assert_string_equal(l->comm, "ledger");
	assert_true(l->time == 1700000000.25);
	assert_int_equal(l->pause_us, 812);
	assert_int_equal(l->symbolize_us, 30000);
	assert_int_equal(l->partial, 1);
	assert_int_equal(l->nthreads, 3);
	assert_int_equal(l->nmodules, 2);
	assert_string_equal(l->modules[0].build_id, "11a9d969c27f3e85613e337badb580bdbc4a7508");
	assert_int_equal(l->modules[0].bias, 0x560000000000);
	assert_null(l->modules[1].build_id);

	const struct sd_thread *a = &l->threads[0];
	assert_int_equal(a->syscall_nr, 34);
	assert_int_equal(a->vol_ctxsw, 7);
	assert_int_equal(a->nonvol_ctxsw, 2);
	assert_int_equal(a->wait.kind, SD_WAIT_SYSCALL);
	assert_int_equal(a->nframes, 2);
	assert_int_equal(a->frames[0].pc, 0x7f0000001234);
	assert_int_equal(a->frames[0].sp, 0x7ffc00000010);
	assert_int_equal(a->frames[0].flags, SD_FRAME_EXACT | SD_FRAME_DEBUGINFO);
	assert_int_equal(a->frames[0].symoff, 0x12);
	assert_int_equal(a->frames[0].line, 29);
	assert_string_equal(a->frames[0].file, "pause.c");
	assert_null(a->frames[1].function);
	assert_int_equal(a->frames[1].flags, SD_FRAME_INLINED | SD_FRAME_FP);

	const struct sd_thread *b = &l->threads[1];
	/* The invalid name survives, escaped. */
	assert_string_equal(b->name, "w\\xff\\e[31mx");
	assert_int_equal(b->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(b->wait.owner, 4244);
	assert_true(b->wait.owner_known);
	assert_string_equal(b->wait.symbol, "g_ledger_lock");
	assert_string_equal(b->wait.subkind, "normal");
	assert_int_equal(b->syscall_args[1], 0x80);
	assert_int_equal(b->nlockmem, 1);
	assert_int_equal(b->lockmem[0].len, 8);
	assert_memory_equal(b->lockmem[0].bytes, "\x02\0\0\0\x94\x10\0\0", 8);

	const struct sd_thread *c = &l->threads[2];
	assert_int_equal(c->status, SD_THREAD_NOT_STOPPED);
	assert_true(c->running);
	assert_int_equal(c->wait.kind, SD_WAIT_RUNNING);

	/* Saving what was loaded gives the same file. */
	size_t len2;
	char *txt2 = dump(l, &len2);
	if (len != len2 || memcmp(txt, txt2, len))
	{
		write_bytes(path_in("first.json"), txt, len);
		write_bytes(path_in("second.json"), txt2, len2);
		fail_msg("saved again differs: compare first.json and second.json in %s", tmpdir);
	}
	free(txt2);
	free(txt);
	snapshot_free(l);
	snapshot_free(s);
}

/* Every member the dump JSON (format-json.c) writes for a snapshot, thread
 * and frame is in the saved file with the same value: the saved format is
 * the dump plus more. When format-json gains a member, this fails until
 * snapio writes it too. */
static void expect_superset(json_t *dump, json_t *saved, const char *where)
{
	const char *key;
	json_t *val;
	json_object_foreach(dump, key, val)
	{
		json_t *mine = json_object_get(saved, key);
		if (!mine)
			fail_msg("%s: the saved file lacks \"%s\"", where, key);
		if (!strcmp(key, "threads") || !strcmp(key, "frames")) {
			assert_int_equal(json_array_size(val), json_array_size(mine));
			for (size_t i = 0; i < json_array_size(val); i++) {
				char w[128];
				snprintf(w, sizeof(w), "%s.%s[%zu]", where, key, i);
				expect_superset(json_array_get(val, i), json_array_get(mine, i), w);
			}
		} else if (json_is_object(val)) {
			expect_superset(val, mine, key);
		} else if (!json_equal(val, mine)) {
			char *a = json_dumps(val, JSON_ENCODE_ANY), *b = json_dumps(mine, JSON_ENCODE_ANY);
			fail_msg("%s.%s: dump has %s, saved file %s", where, key, a, b);
		}
	}
}

static void test_dump_schema_kept(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	json_t *dump = parsed(dump_text(s));
	json_t *saved = parsed(snapio_dumps(s, NULL, 0, NULL));
	expect_superset(dump, saved, "snapshot");
	/* Member order too, so that a saved thread reads like a dumped one. */
	json_t *dt = json_array_get(json_object_get(dump, "threads"), 0);
	json_t *st = json_array_get(json_object_get(saved, "threads"), 0);
	const char *key;
	json_t *val;
	void *it = json_object_iter(st);
	json_object_foreach(dt, key, val)
	{
		assert_non_null(it);
		assert_string_equal(json_object_iter_key(it), key);
		it = json_object_iter_next(st, it);
	}
	json_decref(dump);
	json_decref(saved);
	snapshot_free(s);
}

/* Strings the target chose that are not valid UTF-8 are escaped, never
 * dropped, in the dump JSON and in the saved file, wherever they are; the
 * strict loader reads them back as the text output shows them. */
static void test_target_strings_kept(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	struct strpool *p = s->pool;
	s->comm = strpool_intern(p, "led\xffger");
	s->exe = strpool_intern(p, "/usr/bin/led\xc0\xafger");
	struct sd_thread *b = &s->threads[1];
	b->wait.subkind = strpool_intern(p, "normal\xfe");
	b->wait.note = strpool_intern(p, "owner \xed\xa0\x80 gone");
	b->frames[0].function = strpool_intern(p, "lock_\x80wait");
	b->frames[0].file = strpool_intern(p, "lock\xf8.c");
	struct sd_thread *c = &s->threads[2];
	c->error = strpool_intern(p, "did not\xff stop");
	s->modules[1].path = strpool_intern(p, "/lib/libc\xff.so.6");

	json_t *doc = parsed(dump_text(s));
	json_t *jb = json_array_get(json_object_get(doc, "threads"), 1);
	json_t *wait = json_object_get(jb, "wait");
	assert_string_equal(json_string_value(json_object_get(doc, "comm")), "led\\xffger");
	assert_string_equal(json_string_value(json_object_get(wait, "type")), "normal\\xfe");
	assert_string_equal(json_string_value(json_object_get(wait, "note")),
			    "owner \\xed\\xa0\\x80 gone");
	json_t *f0 = json_array_get(json_object_get(jb, "frames"), 0);
	assert_string_equal(json_string_value(json_object_get(f0, "function")), "lock_\\x80wait");
	json_t *jc = json_array_get(json_object_get(doc, "threads"), 2);
	assert_string_equal(json_string_value(json_object_get(jc, "error")), "did not\\xff stop");
	json_decref(doc);

	size_t len;
	char *txt = dump(s, &len);
	struct sd_error err = {0};
	struct sd_snapshot *l = snapio_parse("mem", txt, len, NULL, &err);
	if (!l)
		fail_msg("the strict loader refused it: %s", err.msg);
	assert_string_equal(l->comm, "led\\xffger");
	assert_string_equal(l->exe, "/usr/bin/led\\xc0\\xafger");
	assert_string_equal(l->threads[1].wait.subkind, "normal\\xfe");
	assert_string_equal(l->threads[1].wait.note, "owner \\xed\\xa0\\x80 gone");
	assert_string_equal(l->threads[1].frames[0].function, "lock_\\x80wait");
	assert_string_equal(l->threads[1].frames[0].file, "lock\\xf8.c");
	assert_string_equal(l->threads[2].error, "did not\\xff stop");
	assert_string_equal(l->modules[1].path, "/lib/libc\\xff.so.6");
	snapshot_free(l);
	free(txt);
	snapshot_free(s);
}

/* The error for TEXT must name the file and contain WHERE. */
static void expect_error(const char *text, const char *where)
{
	struct sd_error err = {0};
	struct sd_snapshot *s = snapio_parse("f.json", text, strlen(text), NULL, &err);
	if (s) {
		snapshot_free(s);
		fail_msg("accepted: %s", text);
	}
	if (strncmp(err.msg, "f.json: ", 8) || !strstr(err.msg, where))
		fail_msg("error for %s is '%s', expected '%s'", text, err.msg, where);
}

static void test_rejects(void **state)
{
	(void)state;
	expect_error("", "empty file");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,",
		     "line 1 column");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":[]",
		     "truncated");
	expect_error("[1,2]", "expected a snapshot object");
	expect_error("{\"a\":1}", "not a stackdump snapshot");
	expect_error("{\"format\":\"elf\",\"version\":1}", "\"elf\" is not a stackdump snapshot");
	expect_error("{\"format\":\"stackdump-recording\",\"version\":1}", "manifest");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":2,\"pid\":1,\"threads\":[]}",
		     "version: format version 2 is newer than this stackdump reads (1)");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":0,\"pid\":1,\"threads\":[]}",
		     "version: invalid format version 0");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":\"1\",\"pid\":1}",
		     "version: expected an integer");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1}",
		     "threads: missing");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":-3,\"threads\":[]}",
		     "pid: -3 is out of range");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":[{}]}",
		     "threads[0].tid: missing");
	/* Found by fuzzing: a required member that is null. */
	expect_error("{\"pid\": null, \"threads\": [{\"tid\": 1}]}", "pid: must not be null");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":null,\"pid\":1,"
		     "\"threads\":[]}",
		     "version: must not be null");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":null}",
		     "threads: must not be null");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"frames\":[{\"addr\":\"0x1\"},{\"addr\":\"12\"}]}]}",
		     "threads[0].frames[1].addr: invalid hex number \"12\"");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"frames\":[{\"addr\":\"0x1ffffffffffffffff\"}]}]}",
		     "invalid hex number");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"wait\":{\"kind\":\"mutex\",\"owner\":\"x\"}}]}",
		     "threads[0].wait.owner: expected an integer, found a string");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"syscall_args\":[\"0x1\"]}]}",
		     "threads[0].syscall_args: expected 6 arguments");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"lockmem\":[{\"addr\":\"0x10\",\"bytes\":\"zz\"}]}]}",
		     "threads[0].lockmem[0].bytes: invalid hex digits");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"modules\":{},"
		     "\"threads\":[]}",
		     "modules: expected an array, found an object");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"pid\":2,"
		     "\"threads\":[]}",
		     "duplicate");
	expect_error("{\"format\":\"stackdump-snapshot\",\"version\":1,\"pid\":1,\"threads\":"
		     "[{\"tid\":2,\"name\":\"a\\u0000b\"}]}",
		     "line 1");
}

/* Every prefix of a valid file is refused (or, for the whole file,
 * accepted), never a crash or a leak (run under ASan in CI). */
static void test_truncated_prefixes(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	for (size_t n = 0; n < len - 1; n++) {
		struct sd_error err = {0};
		struct sd_snapshot *l = snapio_parse("cut.json", txt, n, NULL, &err);
		if (l)
			fail_msg("a prefix of %zu of %zu bytes was accepted", n, len);
		assert_true(!strncmp(err.msg, "cut.json: ", 10));
	}
	free(txt);
	snapshot_free(s);
}

/* Flip every byte in turn: either an error or a valid snapshot. */
static void test_corrupted_bytes(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	size_t len;
	char *txt = dump(s, &len);
	size_t refused = 0;
	for (size_t i = 0; i < len; i++) {
		char saved = txt[i];
		txt[i] = (char)(saved ^ 0x5a);
		struct sd_error err = {0};
		struct sd_snapshot *l = snapio_parse("bad.json", txt, len, NULL, &err);
		if (l) {
			snapshot_free(l);
		} else {
			refused++;
			assert_true(!strncmp(err.msg, "bad.json: ", 10));
		}
		txt[i] = saved;
	}
	/* Most damage is noticed (flipping a letter inside a string is not). */
	assert_true(refused > len / 2);
	free(txt);
	snapshot_free(s);
}

static char *path_in(const char *name)
{
	static char buf[512];
	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static int count_temp(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c '\\.tmp\\.' >/dev/null", tmpdir);
	return system(cmd) == 0;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *buf = malloc(1 << 20);
	*n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static void test_files_and_gzip(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	struct sd_error err = {0};
	uint64_t bytes = 0, zbytes = 0;
	assert_int_equal(snapio_save(path_in("a.json"), s, NULL, 0, 1, &bytes, &err), 0);
	assert_int_equal(snapio_save(path_in("a.json.gz"), s, NULL, 1, 0, &zbytes, &err), 0);
	assert_true(zbytes > 0 && zbytes < bytes);
	assert_false(count_temp());
	struct stat st;
	assert_int_equal(stat(path_in("a.json"), &st), 0);
	assert_int_equal((uint64_t)st.st_size, bytes);
	assert_int_equal(st.st_mode & 0777, 0600);

	struct sd_snapshot *l = snapio_load(path_in("a.json.gz"), NULL, &err);
	assert_non_null(l);
	assert_int_equal(l->nthreads, 3);
	snapshot_free(l);

	size_t n;
	char *gz = slurp(path_in("a.json.gz"), &n);
	/* Truncated gzip: cut anywhere after the header. */
	for (size_t cut = 10; cut < n; cut += 7) {
		write_bytes(path_in("cut.json.gz"), gz, cut);
		l = snapio_load(path_in("cut.json.gz"), NULL, &err);
		if (l)
			fail_msg("gzip cut at %zu of %zu accepted", cut, n);
		assert_non_null(strstr(err.msg, "cut.json.gz: "));
	}
	write_bytes(path_in("cut.json.gz"), gz, n / 2);
	assert_null(snapio_load(path_in("cut.json.gz"), NULL, &err));
	assert_non_null(strstr(err.msg, "truncated"));
	/* Corrupted: a damaged byte in the compressed data or its CRC. */
	gz[n - 6] ^= 0xff;
	write_bytes(path_in("bad.json.gz"), gz, n);
	assert_null(snapio_load(path_in("bad.json.gz"), NULL, &err));
	assert_non_null(strstr(err.msg, "bad.json.gz: corrupted"));
	gz[n - 6] ^= 0xff;
	/* Garbage after the stream. */
	memcpy(gz + n, "junk", 4);
	write_bytes(path_in("tail.json.gz"), gz, n + 4);
	assert_null(snapio_load(path_in("tail.json.gz"), NULL, &err));
	assert_non_null(strstr(err.msg, "garbage after"));
	free(gz);

	/* Unwritable place: an error naming the path, nothing left behind. */
	assert_true(snapio_save("/nonexistent-dir/x.json", s, NULL, 0, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/x.json"));
	assert_null(snapio_load(path_in("missing.json"), NULL, &err));
	assert_non_null(strstr(err.msg, "missing.json"));
	assert_null(snapio_load(tmpdir, NULL, &err));
	assert_non_null(strstr(err.msg, "is a directory"));
	snapshot_free(s);
}

/* `dump --format json` output loads as version 0. */
/* A FIFO or a symbolic link found at the name (anyone may have planted
 * it) is refused and left as it is: nothing written through the FIFO,
 * the link's target untouched (safefile.h). */
static void test_atomic_write_keeps_special_files(void **state)
{
	(void)state;
	struct sd_error err = {0};
	const char *fifo = path_in("fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	uint64_t written = 0;
	assert_true(snapio_write_atomic(fifo, "hello", 5, 0, 0600, &written, &err) < 0);
	assert_non_null(strstr(err.msg, "FIFO"));
	assert_int_equal(written, 0);
	char buf[16] = {0};
	assert_true(read(rfd, buf, sizeof(buf)) <= 0);
	close(rfd);
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_false(count_temp());

	char target[512];
	snprintf(target, sizeof(target), "%s", path_in("target.txt"));
	write_bytes(target, "old", 3);
	const char *link = path_in("link.txt");
	assert_int_equal(symlink(target, link), 0);
	assert_true(snapio_write_atomic(link, "new!", 4, 0, 0600, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "symbolic link"));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	size_t n;
	char *got = slurp(target, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(got, "old", 3);
	free(got);

	/* A directory is refused by name. */
	assert_true(snapio_write_atomic(tmpdir, "x", 1, 0, 0600, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "is a directory"));
}

static void test_dump_json_loads(void **state)
{
	(void)state;
	struct sd_snapshot *s = sample();
	char *txt = dump_text(s);
	struct snapio_meta m;
	struct sd_error err = {0};
	struct sd_snapshot *l = snapio_parse("dump.json", txt, strlen(txt), &m, &err);
	assert_non_null(l);
	assert_int_equal(m.version, 0);
	assert_int_equal(l->nthreads, 3);
	assert_int_equal(l->threads[0].syscall_nr, 34); /* from "pause" */
	assert_int_equal(l->threads[1].wait.kind, SD_WAIT_MUTEX);
	snapshot_free(l);
	free(txt);
	snapshot_free(s);
}

static void test_names_and_manifest(void **state)
{
	(void)state;
	char name[64];
	snapio_file_name(name, sizeof(name), 1700000000.25, 0);
	assert_string_equal(name, "snap-20231114T221320.250Z.json");
	snapio_file_name(name, sizeof(name), 1700000000.25, 1);
	assert_string_equal(name, "snap-20231114T221320.250Z.json.gz");
	assert_true(snapio_is_snapshot_name("snap-20231114T221320.250Z.json"));
	assert_true(snapio_is_snapshot_name("snap-x.json.gz"));
	assert_false(snapio_is_snapshot_name("manifest.json"));
	assert_false(snapio_is_snapshot_name(".snap-x.json.tmp.12"));

	/* A temporary file of a dead writer is removed, a live one's kept. */
	char dead[64], live[64];
	snprintf(dead, sizeof(dead), ".snap-a.json.tmp.%d", 999999999);
	snprintf(live, sizeof(live), ".snap-b.json.tmp.%d", (int)getppid());
	write_bytes(path_in(dead), "x", 1);
	write_bytes(path_in(live), "x", 1);
	assert_int_equal(snapio_clean_temp(tmpdir), 1);
	assert_int_equal(access(path_in(live), F_OK), 0);
	unlink(path_in(live));

	struct snapio_manifest m;
	snapio_manifest_init(&m);
	m.started = 1700000000.5;
	m.target.pid = 42;
	snapio_manifest_set(&m.target.comm, "ledger");
	m.options.set = 1;
	snapio_manifest_set(&m.options.when, "parked>=3");
	m.options.burst = 2;
	struct snapio_manifest_snap e = {.file = "a.json", .seq = 1, .time = 1700000001.25,
					 .pid = 42, .threads = 3, .bytes = 999, .reason = "every 1s"};
	snapio_manifest_add_snap(&m, &e);
	e.file = "gone.json";
	e.seq = 2;
	snapio_manifest_add_snap(&m, &e);
	e.file = "dropped.json";
	snapio_manifest_add_snap(&m, &e);
	snapio_manifest_pop_snap(&m);
	snapio_manifest_event(&m, 1700000000.5, "started", NULL);
	snapio_manifest_event(&m, 1700000002.0, "target-exited", "pid 42");
	snapio_manifest_set(&m.state, "stopped");
	snapio_manifest_set(&m.stop_reason, "target exited");
	struct sd_error err = {0};
	assert_int_equal(snapio_manifest_write(tmpdir, &m, NULL, &err), 0);
	/* One member per line, one snapshot or event per line. */
	size_t len;
	char *txt = slurp(path_in(SNAPIO_MANIFEST_NAME), &len);
	txt[len] = '\0';
	assert_non_null(strstr(txt, "\n \"snapshots\": [\n  {\"file\":\"a.json\",\"seq\":1,"));
	assert_non_null(strstr(txt, "\n \"target\": {\"pid\":42,\"comm\":\"ledger\",\"exe\":null,"));
	assert_non_null(strstr(txt, "\n  {\"time\":1700000002.0,\"event\":\"target-exited\","));
	assert_non_null(strstr(txt, "\n \"stop_reason\": \"target exited\"\n}\n"));
	free(txt);
	struct snapio_manifest back;
	assert_int_equal(snapio_manifest_load(tmpdir, &back, &err), 0);
	assert_int_equal(back.nsnaps, 2);
	assert_string_equal(back.snaps[1].file, "gone.json");
	assert_int_equal(back.snaps[1].seq, 2);
	assert_true(back.snaps[0].time == 1700000001.25);
	assert_string_equal(back.snaps[0].reason, "every 1s");
	assert_int_equal(back.nevents, 2);
	assert_null(back.events[0].detail);
	assert_string_equal(back.events[1].detail, "pid 42");
	assert_string_equal(back.options.when, "parked>=3");
	assert_int_equal(back.options.burst, 2);
	assert_string_equal(back.stop_reason, "target exited");
	assert_true(back.started == 1700000000.5);
	/* Written again, the same file. */
	char *first = slurp(path_in(SNAPIO_MANIFEST_NAME), &len);
	back.updated = m.updated;
	assert_int_equal(snapio_manifest_write(tmpdir, &back, NULL, &err), 0);
	size_t len2;
	char *second = slurp(path_in(SNAPIO_MANIFEST_NAME), &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(first, second, len);
	free(first);
	free(second);
	snapio_manifest_release(&back);

	char **names;
	size_t n, missing;
	assert_int_equal(snapio_list_dir(tmpdir, &names, &n, &missing, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(missing, 1);
	assert_string_equal(names[0], path_in("a.json"));
	snapio_names_free(names, n);

	/* Dropping the oldest keeps its name among the last dropped. */
	snapio_manifest_drop_first(&m, 999);
	assert_int_equal(m.nsnaps, 1);
	assert_int_equal(m.dropped, 1);
	assert_int_equal(m.dropped_bytes, 999);
	assert_string_equal(m.dropped_last[0], "a.json");
	/* Events are capped: the first ten and the latest stay. */
	for (int i = 0; i < 1200; i++) {
		char d[16];
		snprintf(d, sizeof(d), "%d", i);
		snapio_manifest_event(&m, 1700000003.0 + i, "followed", d);
	}
	assert_int_equal(m.nevents, 1000);
	assert_string_equal(m.events[0].event, "started");
	assert_string_equal(m.events[9].detail, "7");
	assert_string_equal(m.events[999].detail, "1199");

	/* A manifest that points outside the directory is refused. */
	snapio_manifest_set(&m.snaps[0].file, "../etc/passwd");
	assert_int_equal(snapio_manifest_write(tmpdir, &m, NULL, &err), 0);
	assert_true(snapio_manifest_load(tmpdir, &back, &err) < 0);
	assert_non_null(strstr(err.msg, "snapshots[0].file"));
	m.version = 9;
	assert_int_equal(snapio_manifest_write(tmpdir, &m, NULL, &err), 0);
	assert_true(snapio_manifest_load(tmpdir, &back, &err) < 0);
	assert_non_null(strstr(err.msg, "newer"));
	snapio_manifest_release(&m);
	unlink(path_in(SNAPIO_MANIFEST_NAME));
	assert_int_equal(snapio_manifest_load(tmpdir, &back, &err), -ENOENT);
	unlink(path_in(SNAPIO_MANIFEST_NAME));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_dump_schema_kept),
		cmocka_unit_test(test_target_strings_kept),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_corrupted_bytes),
		cmocka_unit_test(test_files_and_gzip),
		cmocka_unit_test(test_atomic_write_keeps_special_files),
		cmocka_unit_test(test_dump_json_loads),
		cmocka_unit_test(test_names_and_manifest),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
