// SPDX-License-Identifier: MIT
// The command table and what every command shares: lookup by alias, name or
// unique prefix, option parsing from the declared options, help text,
// output helpers and the shared snapshot options.
#include "cmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../src/procfs.h"

extern const struct cmd_entry cmd_attach_entry;
extern const struct cmd_entry cmd_detach_entry;
extern const struct cmd_entry cmd_diff_entry;
extern const struct cmd_entry cmd_dump_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_load_entry;
extern const struct cmd_entry cmd_locks_entry;
extern const struct cmd_entry cmd_profile_entry;
extern const struct cmd_entry cmd_ps_entry;
extern const struct cmd_entry cmd_quit_entry;
extern const struct cmd_entry cmd_record_entry;
extern const struct cmd_entry cmd_report_entry;
extern const struct cmd_entry cmd_save_entry;
extern const struct cmd_entry cmd_set_entry;
extern const struct cmd_entry cmd_show_entry;
extern const struct cmd_entry cmd_source_entry;
extern const struct cmd_entry cmd_targets_entry;
extern const struct cmd_entry cmd_threads_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_use_entry;

/* Sorted by name. */
const struct cmd_entry *const cmd_table[] = {
	&cmd_attach_entry,
	&cmd_detach_entry,
	&cmd_diff_entry,
	&cmd_dump_entry,
	&cmd_help_entry,
	&cmd_load_entry,
	&cmd_locks_entry,
	&cmd_profile_entry,
	&cmd_ps_entry,
	&cmd_quit_entry,
	&cmd_record_entry,
	&cmd_report_entry,
	&cmd_save_entry,
	&cmd_set_entry,
	&cmd_show_entry,
	&cmd_source_entry,
	&cmd_targets_entry,
	&cmd_threads_entry,
	&cmd_top_entry,
	&cmd_use_entry,
};
const size_t cmd_table_len = sizeof(cmd_table) / sizeof(cmd_table[0]);

volatile sig_atomic_t cmd_interrupted;

const struct cmd_entry *cmd_find(const char *name, int exact_only, char *msg, size_t msgsz)
{
	if (msg && msgsz)
		msg[0] = '\0';
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name)))
			return e;
	}
	if (exact_only || !*name) {
		if (msg)
			snprintf(msg, msgsz, "unknown command: %s (try 'help')", name);
		return NULL;
	}
	const struct cmd_entry *found = NULL;
	struct strbuf sb;
	strbuf_init(&sb);
	int n = 0;
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!strncmp(e->name, name, strlen(name))) {
			strbuf_addf(&sb, "%s%s", n ? ", " : "", e->name);
			found = e;
			n++;
		}
	}
	if (n == 1) {
		strbuf_release(&sb);
		return found;
	}
	if (msg) {
		if (n > 1)
			snprintf(msg, msgsz, "ambiguous command: %s, could be: %s", name, sb.buf);
		else
			snprintf(msg, msgsz, "unknown command: %s (try 'help')", name);
	}
	strbuf_release(&sb);
	return NULL;
}

void cmd_write(struct cmd_ctx *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx->out);
}

void cmd_print(struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(ctx->out, fmt, ap);
	va_end(ap);
}

void cmd_error(struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	fflush(ctx->out);
	fputs("stackdump: ", ctx->err);
	va_start(ap, fmt);
	vfprintf(ctx->err, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->err);
}

static int opt_index(const struct cmd_entry *e, const char *name)
{
	for (int i = 0; e->options && e->options[i].name; i++)
		if (!strcmp(e->options[i].name, name))
			return i;
	return -1;
}

const char *cmd_opt(const struct cmd_ctx *ctx, const char *name)
{
	int i = ctx->entry ? opt_index(ctx->entry, name) : -1;
	return i >= 0 ? ctx->optval[i] : NULL;
}

int cmd_flag(const struct cmd_ctx *ctx, const char *name)
{
	return cmd_opt(ctx, name) != NULL;
}

static void usage_line(struct strbuf *sb, const struct cmd_entry *e)
{
	strbuf_addf(sb, "usage: stackdump %s%s%s%s\n", e->name, e->options ? " [options]" : "",
		    e->args_usage ? " " : "", e->args_usage ? e->args_usage : "");
}

void cmd_help_command(struct strbuf *sb, const struct cmd_entry *e)
{
	usage_line(sb, e);
	strbuf_addf(sb, "\n%s\n", e->summary);
	if (e->description)
		strbuf_addf(sb, "\n%s\n", e->description);
	if (e->alias)
		strbuf_addf(sb, "\nAlias: %s\n", e->alias);
	if (e->options && e->options[0].name) {
		strbuf_adds(sb, "\nOptions:\n");
		for (int i = 0; e->options[i].name; i++) {
			const struct cmd_option *o = &e->options[i];
			char left[64];
			if (o->short_name)
				snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
					 o->arg ? " " : "", o->arg ? o->arg : "");
			else
				snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
					 o->arg ? o->arg : "");
			strbuf_addf(sb, "  %-28s %s\n", left, o->help);
		}
		strbuf_addf(sb, "  %-28s %s\n", "-h, --help", "show this help");
	}
}

void cmd_help_overview(struct strbuf *sb)
{
	strbuf_adds(sb, "Commands:\n");
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		char left[40];
		snprintf(left, sizeof(left), "%s%s%s", e->name, e->alias ? ", " : "",
			 e->alias ? e->alias : "");
		strbuf_addf(sb, "  %-14s %s\n", left, e->summary);
	}
}

int cmd_parse(struct cmd_ctx *ctx, const struct cmd_entry *e, int *argcp, char ***argvp)
{
	int argc = *argcp;
	char **argv = *argvp;
	char **pos = sd_xcalloc((size_t)argc + 1, sizeof(char *));
	int npos = 0, only_pos = 0;
	ctx->entry = e;
	memset(ctx->optval, 0, sizeof(ctx->optval));
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (only_pos || a[0] != '-' || !a[1] || (a[1] >= '0' && a[1] <= '9')) {
			pos[npos++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			struct strbuf sb;
			strbuf_init(&sb);
			cmd_help_command(&sb, e);
			cmd_write(ctx, sb.buf, sb.len);
			strbuf_release(&sb);
			free(pos);
			return 1;
		}
		int idx = -1;
		const char *val = NULL;
		if (a[1] == '-') {
			char name[64];
			const char *eq = strchr(a + 2, '=');
			size_t l = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
			if (l >= sizeof(name))
				l = sizeof(name) - 1;
			memcpy(name, a + 2, l);
			name[l] = '\0';
			idx = opt_index(e, name);
			if (idx < 0) {
				cmd_error(ctx, "%s: unknown option --%s (see 'stackdump %s --help')",
					  e->name, name, e->name);
				free(pos);
				return -1;
			}
			if (eq) {
				if (!e->options[idx].arg) {
					cmd_error(ctx, "%s: option --%s takes no value", e->name, name);
					free(pos);
					return -1;
				}
				val = eq + 1;
			}
		} else {
			for (int k = 0; e->options && e->options[k].name; k++)
				if (e->options[k].short_name == a[1])
					idx = k;
			if (idx < 0) {
				cmd_error(ctx, "%s: unknown option -%c (see 'stackdump %s --help')",
					  e->name, a[1], e->name);
				free(pos);
				return -1;
			}
			if (a[2]) {
				if (!e->options[idx].arg) {
					cmd_error(ctx, "%s: option -%c takes no value", e->name, a[1]);
					free(pos);
					return -1;
				}
				val = a + 2;
			}
		}
		const struct cmd_option *o = &e->options[idx];
		if (o->arg && !val) {
			if (i + 1 >= argc) {
				cmd_error(ctx, "%s: option --%s needs a value (%s)", e->name, o->name,
					  o->arg);
				free(pos);
				return -1;
			}
			val = argv[++i];
		}
		if (o->complete == CMPL_CHOICES && o->choices && val) {
			/* Check the value is one of the declared choices. */
			const char *c = o->choices;
			int ok = 0;
			size_t vl = strlen(val);
			while (*c) {
				size_t l = strcspn(c, " ");
				if (l == vl && !strncmp(c, val, l))
					ok = 1;
				c += l;
				while (*c == ' ')
					c++;
			}
			if (!ok) {
				cmd_error(ctx, "%s: invalid value for --%s: %s (one of: %s)", e->name,
					  o->name, val, o->choices);
				free(pos);
				return -1;
			}
		}
		ctx->optval[idx] = val ? val : "";
	}
	if (npos < e->min_args || (e->max_args >= 0 && npos > e->max_args)) {
		struct strbuf sb;
		strbuf_init(&sb);
		usage_line(&sb, e);
		if (npos < e->min_args)
			cmd_error(ctx, "%s: missing argument (%s)\n%s", e->name,
				  e->args_usage ? e->args_usage : "", sb.buf);
		else
			cmd_error(ctx, "%s: too many arguments\n%s", e->name, sb.buf);
		strbuf_release(&sb);
		free(pos);
		return -1;
	}
	/* argv[0] then the positional arguments, in an array of our own. */
	free(ctx->posv);
	ctx->posv = sd_xcalloc((size_t)npos + 2, sizeof(char *));
	ctx->posv[0] = argv[0];
	for (int i = 0; i < npos; i++)
		ctx->posv[i + 1] = pos[i];
	*argvp = ctx->posv;
	*argcp = npos + 1;
	free(pos);
	return 0;
}

void cmd_ctx_release(struct cmd_ctx *ctx)
{
	free(ctx->posv);
	ctx->posv = NULL;
}

int cmd_run(struct cmd_ctx *ctx, const struct cmd_entry *e, int argc, char **argv)
{
	if ((e->flags & CMD_SHELL_ONLY) && !ctx->in_shell) {
		cmd_error(ctx, "%s: only available in the interactive shell", e->name);
		return EXIT_USAGE;
	}
	/* A command may run others (source, -c): keep the outer command's
	 * parse intact around ours. */
	char **saved_posv = ctx->posv;
	const struct cmd_entry *saved_entry = ctx->entry;
	const char *saved_optval[CMD_MAX_OPTS];
	memcpy(saved_optval, ctx->optval, sizeof(saved_optval));
	ctx->posv = NULL;
	int r = cmd_parse(ctx, e, &argc, &argv);
	int rc;
	if (r < 0)
		rc = EXIT_USAGE;
	else if (r > 0)
		rc = EXIT_OK;
	else
		rc = e->exec(ctx, argc - 1, argv + 1);
	free(ctx->posv);
	ctx->posv = saved_posv;
	ctx->entry = saved_entry;
	memcpy(ctx->optval, saved_optval, sizeof(saved_optval));
	return rc;
}

pid_t cmd_resolve_pid(struct cmd_ctx *ctx, const char *arg)
{
	long p = sd_parse_pid(arg);
	if (p > 0)
		return (pid_t)p;
	if (!arg || !*arg || (arg[0] >= '0' && arg[0] <= '9') || arg[0] == '-') {
		cmd_error(ctx, "invalid process id: '%s' (expected a positive number or a process "
			       "name)",
			  arg ? arg : "");
		return -1;
	}
	pid_t *pids;
	size_t n = procfs_pids_by_name(arg, &pids);
	if (n == 0) {
		cmd_error(ctx, "no process named '%s'", arg);
		free(pids);
		return -1;
	}
	if (n > 1) {
		struct strbuf sb;
		strbuf_init(&sb);
		for (size_t i = 0; i < n && i < 10; i++)
			strbuf_addf(&sb, "%s%d", i ? ", " : "", (int)pids[i]);
		cmd_error(ctx, "%zu processes named '%s' (%s%s): give a PID", n, arg, sb.buf,
			  n > 10 ? ", ..." : "");
		strbuf_release(&sb);
		free(pids);
		return -1;
	}
	pid_t r = pids[0];
	free(pids);
	return r;
}

int cmd_snap_opts(struct cmd_ctx *ctx, struct sd_snap_opts *o, pid_t **tids)
{
	snap_opts_init(o);
	*tids = NULL;
	/* A diagnostic: "freeze" stops every thread (the all-frozen mode),
	 * "ctxsw" proves sleepers with context switch counts, as on a kernel
	 * without schedstat. */
	const char *mode = getenv("STACKDUMP_CAPTURE");
	if (mode && !strcmp(mode, "freeze"))
		o->capture = SD_CAPMODE_FREEZE;
	else if (mode && !strcmp(mode, "ctxsw"))
		o->capture = SD_CAPMODE_CTXSW;
	const struct cmd_settings *st = ctx->session ? &ctx->session->settings : NULL;
	if (st) {
		o->no_inline = st->no_inline;
		o->no_source = st->no_source;
		if (st->max_frames != ~0u)
			o->max_frames = st->max_frames;
	}
	const char *v;
	if ((v = cmd_opt(ctx, "max-frames"))) {
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (errno || *end || n < 0 || n > 10000000) {
			cmd_error(ctx, "invalid --max-frames: %s (expected a number >= 0)", v);
			return -1;
		}
		o->max_frames = (unsigned)n;
	}
	if (cmd_flag(ctx, "no-inline"))
		o->no_inline = 1;
	if (cmd_flag(ctx, "no-source"))
		o->no_source = 1;
	if (cmd_flag(ctx, "per-thread"))
		o->per_thread = 1;
	if ((v = cmd_opt(ctx, "stack-bytes"))) {
		uint64_t b;
		if (sd_parse_size(v, &b) < 0 || b < 4096 || b > (1ull << 30)) {
			cmd_error(ctx, "invalid --stack-bytes: %s (e.g. 256K, 4M; 4K to 1G)", v);
			return -1;
		}
		o->max_stack = (size_t)b;
	}
	if ((v = cmd_opt(ctx, "timeout"))) {
		uint64_t us;
		if (sd_parse_duration(v, &us) < 0 || us < 1000 || us > 600000000ull) {
			cmd_error(ctx, "invalid --timeout: %s (e.g. 500ms, 2s)", v);
			return -1;
		}
		o->timeout_ms = (unsigned)(us / 1000);
	}
	if ((v = cmd_opt(ctx, "name")))
		o->name_glob = v;
	if ((v = cmd_opt(ctx, "tid"))) {
		size_t n = 0, cap = 0;
		pid_t *arr = NULL;
		char *copy = sd_xstrdup(v), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			long t = sd_parse_pid(tok);
			if (t <= 0) {
				cmd_error(ctx, "invalid --tid: '%s' (expected TID[,TID...])", tok);
				free(copy);
				free(arr);
				return -1;
			}
			sd_grow(&arr, &cap, n + 1, sizeof(*arr));
			arr[n++] = (pid_t)t;
		}
		free(copy);
		if (!n) {
			cmd_error(ctx, "invalid --tid: '%s'", v);
			return -1;
		}
		o->tids = arr;
		o->ntids = n;
		*tids = arr;
	}
	return 0;
}

struct sd_target *cmd_current_target(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	if (!s || !s->ntargets) {
		cmd_error(ctx, "no target: attach to a process first (attach PID|NAME)");
		return NULL;
	}
	return s->targets[s->current];
}

int cmd_snapshot_status(const struct sd_snapshot *s)
{
	return s->partial ? EXIT_PARTIAL : EXIT_OK;
}

void cmd_session_init(struct cmd_session *s)
{
	memset(s, 0, sizeof(*s));
	s->settings.max_frames = ~0u;
	s->settings.color = -1;
}

void cmd_session_release(struct cmd_session *s)
{
	for (size_t i = 0; i < s->ntargets; i++)
		target_free(s->targets[i]);
	free(s->targets);
	snapshot_free(s->loaded);
	snapshot_free(s->last);
	free(s->loaded_path);
	memset(s, 0, sizeof(*s));
}
