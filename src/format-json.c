// SPDX-License-Identifier: MIT
// JSON rendering of snapshots with jansson: the dump schema of the README.
#include <inttypes.h>
#include <stdio.h>

#include "format.h"
#include "locks.h"
#include "procfs.h"

json_t *format_json_str(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	/* Not UTF-8 (a name the target chose): escape the bad bytes rather
	 * than lose the member. */
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_add_escaped(&sb, s);
	j = json_string(sb.buf);
	strbuf_release(&sb);
	return j ? j : json_null();
}

json_t *format_json_hex(uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

json_t *format_json_frame(const struct sd_frame *f)
{
	json_t *o = json_object();
	json_object_set_new(o, "addr", format_json_hex(f->pc));
	json_object_set_new(o, "module", format_json_str(f->module));
	json_object_set_new(o, "build_id", format_json_str(f->build_id));
	json_object_set_new(o, "offset", format_json_hex(f->offset));
	json_object_set_new(o, "function", format_json_str(f->function));
	json_object_set_new(o, "file", format_json_str(f->file));
	json_object_set_new(o, "line", f->line ? json_integer(f->line) : json_null());
	json_object_set_new(o, "inlined", json_boolean(f->flags & SD_FRAME_INLINED));
	if (f->flags & SD_FRAME_SIGNAL)
		json_object_set_new(o, "signal_frame", json_true());
	return o;
}

json_t *format_json_wait(const struct sd_snapshot *s, const struct sd_thread *th)
{
	(void)s;
	const struct sd_wait *w = &th->wait;
	if (w->kind < SD_WAIT_MUTEX || w->kind > SD_WAIT_FUTEX)
		return json_null();
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(sd_wait_kind_name(w->kind)));
	json_object_set_new(o, "address", w->address ? format_json_hex(w->address) : json_null());
	json_object_set_new(o, "symbol", format_json_str(w->symbol));
	json_object_set_new(o, "owner",
			    w->owner_known && w->owner > 0 ? json_integer(w->owner) : json_null());
	if (w->subkind)
		json_object_set_new(o, "type", json_string(w->subkind));
	if (w->note)
		json_object_set_new(o, "note", json_string(w->note));
	if (w->owner_known && w->owner > 0 && w->owner_evidence != SD_EVIDENCE_NONE) {
		json_object_set_new(o, "owner_evidence",
				    json_string(sd_evidence_name(w->owner_evidence)));
		if (w->owner_frame >= 0)
			json_object_set_new(o, "owner_frame", json_integer(w->owner_frame));
	}
	return o;
}

json_t *format_json_holds(const struct sd_thread *th)
{
	json_t *a = json_array();
	for (size_t i = 0; i < th->nholds; i++) {
		const struct sd_hold *h = &th->holds[i];
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(locks_kind_name(h->kind)));
		json_object_set_new(o, "address", format_json_hex(h->address));
		json_object_set_new(o, "symbol", format_json_str(h->symbol));
		json_object_set_new(o, "mode", format_json_str(h->mode));
		json_object_set_new(o, "frame", h->frame >= 0 ? json_integer(h->frame) : json_null());
		json_object_set_new(o, "owner_evidence",
				    format_json_str(sd_evidence_name(h->evidence)));
		json_object_set_new(o, "candidates", json_integer((json_int_t)h->ncandidates));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *format_json_thread(const struct sd_snapshot *s, const struct sd_thread *th)
{
	json_t *o = json_object();
	char st[2] = {th->state ? th->state : '?', 0};
	json_object_set_new(o, "tid", json_integer(th->tid));
	json_object_set_new(o, "name", format_json_str(th->name ? th->name : ""));
	json_object_set_new(o, "state", json_string(st));
	const char *scn = th->syscall_nr >= 0 ? procfs_syscall_name(th->syscall_nr) : NULL;
	if (th->syscall_nr >= 0 && !th->running) {
		char buf[32];
		if (!scn) {
			snprintf(buf, sizeof(buf), "syscall_%ld", th->syscall_nr);
			scn = buf;
		}
		json_object_set_new(o, "syscall", json_string(scn));
	} else {
		json_object_set_new(o, "syscall", json_null());
	}
	json_object_set_new(o, "wchan", format_json_str(th->wchan));
	json_object_set_new(o, "wait", format_json_wait(s, th));
	json_object_set_new(o, "status",
			    json_string(th->status == SD_THREAD_OK		? "ok"
					: th->status == SD_THREAD_EXITED	? "exited"
					: th->status == SD_THREAD_NOT_STOPPED ? "not_stopped"
										: "error"));
	if (th->error)
		json_object_set_new(o, "error", json_string(th->error));
	json_object_set_new(o, "pause_us", json_integer((json_int_t)th->pause_us));
	json_object_set_new(o, "voluntary_ctxt_switches", json_integer((json_int_t)th->vol_ctxsw));
	json_t *frames = json_array();
	for (size_t i = 0; i < th->nframes; i++)
		json_array_append_new(frames, format_json_frame(&th->frames[i]));
	json_object_set_new(o, "frames", frames);
	json_object_set_new(o, "unwind_stop", format_json_str(th->unwind_stop));
	json_object_set_new(o, "capture", json_string(snapshot_capture_kind_name(th->kind)));
	json_object_set_new(o, "holds", format_json_holds(th));
	return o;
}

json_t *format_json_snapshot(const struct sd_snapshot *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "comm", format_json_str(s->comm));
	json_object_set_new(o, "exe", format_json_str(s->exe));
	json_object_set_new(o, "time", json_real(s->time));
	json_object_set_new(o, "pause_us", json_integer((json_int_t)s->pause_us));
	json_object_set_new(o, "per_thread", json_boolean(s->per_thread));
	json_object_set_new(o, "partial", json_boolean(s->partial));
	char st[2] = {s->state ? s->state : '?', 0};
	json_object_set_new(o, "state", json_string(st));
	json_t *tm = json_object();
	json_object_set_new(tm, "capture_us", json_integer((json_int_t)s->capture_us));
	json_object_set_new(tm, "unwind_us", json_integer((json_int_t)s->unwind_us));
	json_object_set_new(tm, "symbolize_us", json_integer((json_int_t)s->symbolize_us));
	json_object_set_new(tm, "infer_us", json_integer((json_int_t)s->infer_us));
	json_object_set_new(tm, "stack_bytes", json_integer((json_int_t)s->stack_bytes));
	json_object_set_new(tm, "frozen", json_integer((json_int_t)s->nfrozen));
	json_object_set_new(tm, "asleep", json_integer((json_int_t)s->nasleep));
	json_object_set_new(tm, "reused", json_integer((json_int_t)s->nreused));
	json_object_set_new(tm, "retried", json_integer((json_int_t)s->nretried));
	json_object_set_new(tm, "regstops", json_integer((json_int_t)s->nregstops));
	if (s->capture_note)
		json_object_set_new(tm, "capture_note", json_string(s->capture_note));
	json_object_set_new(o, "timings", tm);
	json_t *threads = json_array();
	for (size_t i = 0; i < s->nthreads; i++)
		json_array_append_new(threads, format_json_thread(s, &s->threads[i]));
	json_object_set_new(o, "threads", threads);
	return o;
}
