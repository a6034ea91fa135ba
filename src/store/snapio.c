// SPDX-License-Identifier: MIT
// Saved snapshots, written: the documented JSON format (format-json's dump
// schema plus what a reader on another machine needs), streamed through
// the JSON writer into a buffer. Loading is snapio-load.c, files fileio.c,
// the recording directory recording.c.
#include "snapio.h"
#include "snapio-tokio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "format.h"
#include "jsonw.h"
#include "locks.h"
#include "snapio-go.h"
#include "version.h"

void snapio_meta_init(struct snapio_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->uid = -1;
}

void snapio_meta_from_proc(struct snapio_meta *m, pid_t pid, struct sd_snapshot *s)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ssize_t n = sd_read_file(path, &text, 1 << 16);
	if (n >= 0) {
		const char *p = strstr(text, "\nPPid:");
		if (p)
			m->ppid = (pid_t)strtol(p + 6, NULL, 10);
		p = strstr(text, "\nUid:");
		if (p)
			m->uid = strtol(p + 5, NULL, 10);
		free(text);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = sd_read_file(path, &text, 1 << 16);
	if (n >= 0) {
		/* Arguments are NUL-separated; join them with spaces, when
		 * asked: by default only the program is kept, as arguments
		 * can hold passwords and keys. (A process that is exiting has
		 * none: the text is empty.) */
		for (ssize_t i = 0; m->full_cmdline && i < n - 1; i++)
			if (!text[i])
				text[i] = ' ';
		if (n > 0)
			m->cmdline = strpool_intern(s->pool, text);
		free(text);
	}
}

/* ---- writing ----------------------------------------------------------
 * The dump's members (format-json.c), written by the same code, then what
 * a reader on another machine needs: each frame and wait gets members at
 * its end (format_json_more), each thread after its dump members. */

static void saved_frame(struct jsonw *w, const struct sd_frame *f)
{
	jsonw_khex(w, "sp", f->sp);
	if (f->symoff)
		jsonw_ku64(w, "symoff", f->symoff);
	if (f->flags & SD_FRAME_EXACT)
		jsonw_kbool(w, "exact", 1);
	if (f->flags & SD_FRAME_FP)
		jsonw_kbool(w, "fp", 1);
	if (f->flags & SD_FRAME_DEBUGINFO)
		jsonw_kbool(w, "debuginfo", 1);
}

static void saved_wait(struct jsonw *w, const struct sd_thread *th)
{
	jsonw_kbool(w, "owner_known", th->wait.owner_known);
	if (th->wait.owner > 0)
		jsonw_kint(w, "owner_tid", th->wait.owner);
}

static const struct format_json_more saved_more = {
	.frame = saved_frame,
	.wait = saved_wait,
};

int snapio_args_kept(long nr)
{
	return nr == SYS_futex || nr == SYS_restart_syscall
#ifdef SYS_futex_waitv
	       || nr == SYS_futex_waitv
#endif
	    ;
}

static void put_thread(struct jsonw *w, const struct sd_snapshot *s, const struct sd_thread *th)
{
	jsonw_object_begin(w);
	format_json_thread_members(w, s, th, &saved_more);
	/* What the dump leaves out. */
	jsonw_kint(w, "syscall_nr", th->syscall_nr);
	/* The arguments only of the calls whose arguments the views read
	 * (a futex wait: its word and operation); a write(2)'s buffer
	 * address and length, or any other call's, are not kept. */
	if (snapio_args_kept(th->syscall_nr)) {
		jsonw_karray(w, "syscall_args");
		for (int i = 0; i < 6; i++)
			jsonw_hex(w, th->syscall_args[i]);
		jsonw_array_end(w);
	}
	jsonw_kbool(w, "syscall_known", th->syscall_known);
	jsonw_kbool(w, "running", th->running);
	jsonw_ku64(w, "nonvoluntary_ctxt_switches", th->nonvol_ctxsw);
	jsonw_ku64(w, "utime", th->utime);
	jsonw_ku64(w, "stime", th->stime);
	jsonw_kstr(w, "wait_kind", sd_wait_kind_name(th->wait.kind));
	if (th->stack_truncated)
		jsonw_kbool(w, "stack_truncated", 1);
	/* Of the memory copied around lock words, only the bytes lock
	 * analysis read (the words it classified: lock, owner, kind, counts),
	 * as runs; never the raw window around them, which holds whatever the
	 * program keeps next to its mutex. */
	int any = 0;
	for (size_t i = 0; i < th->nlockmem; i++) {
		const struct sd_lockmem *m = &th->lockmem[i];
		size_t n = m->len < sizeof(m->bytes) ? m->len : sizeof(m->bytes);
		for (size_t k = 0; k < n;) {
			if (!(m->used[k / 64] >> (k % 64) & 1)) {
				k++;
				continue;
			}
			size_t e = k;
			char hex[2 * sizeof(m->bytes)];
			while (e < n && (m->used[e / 64] >> (e % 64) & 1)) {
				hex[2 * (e - k)] = "0123456789abcdef"[m->bytes[e] >> 4];
				hex[2 * (e - k) + 1] = "0123456789abcdef"[m->bytes[e] & 15];
				e++;
			}
			if (!any)
				jsonw_karray(w, "lockwords");
			any = 1;
			jsonw_object_begin(w);
			jsonw_khex(w, "addr", m->addr + k);
			jsonw_kstrn(w, "bytes", hex, 2 * (e - k));
			jsonw_object_end(w);
			k = e;
		}
	}
	if (any)
		jsonw_array_end(w);
	jsonw_object_end(w);
}

static void put_lock(struct jsonw *w, const struct sd_lock *l, int idle)
{
	jsonw_object_begin(w);
	jsonw_khex(w, "address", l->address);
	jsonw_kstr(w, "symbol", l->symbol);
	jsonw_kstr(w, "kind", locks_kind_name(l->kind));
	if (l->subkind)
		jsonw_kstr(w, "type", l->subkind);
	if (l->owner_known && l->owner > 0)
		jsonw_kint(w, "owner", l->owner);
	else
		jsonw_knull(w, "owner");
	if (l->note)
		jsonw_kstr(w, "note", l->note);
	jsonw_karray(w, "waiters");
	for (size_t i = 0; i < l->nwaiters; i++)
		jsonw_int(w, l->waiters[i]);
	jsonw_array_end(w);
	if (idle)
		jsonw_kbool(w, "idle", 1);
	jsonw_object_end(w);
}

/* The lock view (locks with waiters and holders, idle waits, deadlock
 * cycles) as lock analysis built it from the threads' waits. It is derived
 * data, for readers of the file: the loader rebuilds it from the threads. */
static void put_locks(struct jsonw *w, const struct sd_snapshot *s)
{
	struct sd_lockgraph *g = locks_graph(s);
	jsonw_karray(w, "locks");
	for (size_t i = 0; i < g->nlocks; i++)
		put_lock(w, &g->locks[i], 0);
	for (size_t i = 0; i < g->nidle; i++)
		put_lock(w, &g->idle[i], 1);
	jsonw_array_end(w);
	jsonw_karray(w, "deadlocks");
	for (size_t i = 0; i < g->ndeadlocks; i++) {
		const struct sd_deadlock *d = &g->deadlocks[i];
		jsonw_array_begin(w);
		for (size_t k = 0; k < d->n; k++) {
			const struct sd_lock_edge *e = &d->edges[k];
			jsonw_object_begin(w);
			jsonw_kint(w, "tid", e->tid);
			jsonw_kstr(w, "waits_for", locks_kind_name(e->kind));
			jsonw_khex(w, "address", e->address);
			jsonw_kstr(w, "symbol", e->symbol);
			jsonw_kint(w, "held_by", e->owner);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
	}
	jsonw_array_end(w);
	locks_graph_free(g);
}

/* The whole document, threads last. */
static void put_snapshot(struct jsonw *w, const struct sd_snapshot *s,
			 const struct snapio_meta *meta)
{
	struct snapio_meta none;
	if (!meta) {
		snapio_meta_init(&none);
		meta = &none;
	}
	jsonw_object_begin(w);
	/* format and version first, so `head -c 100 FILE` tells what it is. */
	jsonw_kstr(w, "format", SNAPIO_FORMAT);
	jsonw_kint(w, "version", SNAPIO_VERSION);
	jsonw_kstr(w, "tool", "stackdump " STACKDUMP_VERSION);
	jsonw_kstr(w, "reason", meta->reason);
	if (meta->engine)
		jsonw_kstr(w, "engine", meta->engine);
	if (meta->seq)
		jsonw_ku64(w, "seq", meta->seq);
	format_json_snapshot_members(w, s);

	struct utsname u;
	int have_u = uname(&u) == 0;
	char host[256] = "";
	if (!meta->hostname && gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	jsonw_kobject(w, "host");
	jsonw_kstr(w, "hostname", meta->hostname ? meta->hostname
				  : host[0]	 ? host
						 : NULL);
	jsonw_kstr(w, "kernel", meta->kernel ? meta->kernel
				: have_u     ? u.release
					     : NULL);
	jsonw_kstr(w, "machine", meta->machine ? meta->machine
				 : have_u	? u.machine
						: NULL);
	jsonw_object_end(w);

	jsonw_kobject(w, "process");
	jsonw_kint(w, "pid", s->pid);
	if (meta->ppid > 0)
		jsonw_kint(w, "ppid", meta->ppid);
	else
		jsonw_knull(w, "ppid");
	if (meta->uid >= 0)
		jsonw_kint(w, "uid", meta->uid);
	else
		jsonw_knull(w, "uid");
	jsonw_kstr(w, "cmdline", meta->cmdline);
	jsonw_ku64(w, "nthreads", s->nthreads);
	jsonw_object_end(w);

	jsonw_karray(w, "modules");
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct sd_module *m = &s->modules[i];
		jsonw_object_begin(w);
		jsonw_kstr(w, "name", m->name);
		jsonw_kstr(w, "path", m->path);
		jsonw_kstr(w, "build_id", m->build_id);
		jsonw_khex(w, "start", m->start);
		jsonw_khex(w, "end", m->end);
		jsonw_khex(w, "bias", m->bias);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	put_locks(w, s);
	/* The findings the dump gives (derived, as "locks" is: a loader
	 * finds them again from the threads). */
	struct sd_lockgraph *g = locks_graph(s);
	format_json_findings(w, s, g);
	locks_graph_free(g);
	/* A Tokio program's runtimes and tasks (snapio-tokio.c). */
	snapio_put_tokio(w, s);
	snapio_go_put(w, s);

	jsonw_karray(w, "threads");
	for (size_t i = 0; i < s->nthreads; i++)
		put_thread(w, s, &s->threads[i]);
	jsonw_array_end(w);
	jsonw_object_end(w);
}

/* Write S into SB, emptied first, with INDENT (0: compact) and a final
 * newline, as text files end. SB's memory is kept, so a recorder that
 * passes the same buffer every time does not map and fault in megabytes
 * per snapshot. */
static void dump_into(struct strbuf *sb, const struct sd_snapshot *s,
		      const struct snapio_meta *meta, int indent)
{
	sb->len = 0;
	/* Room for the usual frame, so the buffer rarely moves. */
	size_t per = 4096;
	for (size_t i = 0; i < s->nthreads; i++)
		per += 256 + 320 * s->threads[i].nframes;
	strbuf_grow(sb, per);
	sb->buf[0] = '\0';
	struct jsonw w;
	jsonw_init(&w, sb, indent);
	put_snapshot(&w, s, meta);
	jsonw_release(&w);
	strbuf_add(sb, "\n", 1);
}

void snapio_dump_buf(struct strbuf *sb, const struct sd_snapshot *s,
		     const struct snapio_meta *meta)
{
	dump_into(sb, s, meta, 0);
}

char *snapio_dumps(const struct sd_snapshot *s, const struct snapio_meta *meta, int indent,
		   size_t *len)
{
	struct strbuf sb;
	strbuf_init(&sb);
	dump_into(&sb, s, meta, indent ? 1 : 0);
	if (len)
		*len = sb.len;
	return strbuf_detach(&sb);
}

int snapio_save(const char *path, const struct sd_snapshot *s, const struct snapio_meta *meta,
		int compress, int indent, uint64_t *written, struct sd_error *err)
{
	size_t len;
	char *txt = snapio_dumps(s, meta, indent, &len);
	int r = snapio_write_atomic(path, txt, len, compress, 0600, written, err);
	free(txt);
	return r;
}
