// SPDX-License-Identifier: MIT
// What every command shares: lookup in the command table (table.c) by
// alias, name or unique prefix, option parsing from the declared options, help text,
// output helpers and the shared snapshot options.
#include "cmd.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "format-run.h"
#include "procfs.h"
#include "suggest.h"

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
			suggest_unknown_command(msg, msgsz, name);
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
			suggest_unknown_command(msg, msgsz, name);
	}
	strbuf_release(&sb);
	return NULL;
}

void cmd_write(struct cmd_ctx *ctx, const char *s, size_t n)
{
	if (fwrite(s, 1, n, ctx->out) != n && !ctx->out_errno)
		ctx->out_errno = errno ? errno : EIO;
}

void cmd_json_init(struct jsonw *w, struct strbuf *sb)
{
	strbuf_init(sb);
	jsonw_init(w, sb, CMD_JSON_INDENT);
}

void cmd_print_json(struct cmd_ctx *ctx, struct jsonw *w)
{
	if (jsonw_finish(w) < 0)
		cmd_error(ctx, "internal error: the JSON document below is malformed");
	strbuf_adds(w->out, "\n");
	cmd_write(ctx, w->out->buf, w->out->len);
	strbuf_release(w->out);
	jsonw_release(w);
}

void cmd_print(struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	errno = 0;
	if (vfprintf(ctx->out, fmt, ap) < 0 && !ctx->out_errno)
		ctx->out_errno = errno ? errno : EIO;
	va_end(ap);
}

void cmd_put_safe(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == 0x1b)
			fputs("\\e", f);
		else if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fprintf(f, "\\x%02x", *++p); /* a C1 control: CSI, OSC... */
		else
			fputc(*p, f);
	}
}

/* Messages carry names the target chose (comm, a tracer's comm, paths)
 * however they were built, errors included: every control character is
 * escaped on its way out, whatever escaped it before. */
static void put_message(FILE *f, const char *fmt, va_list ap)
{
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		return;
	cmd_put_safe(f, text);
	free(text);
}

void cmd_status(struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	fflush(ctx->out);
	va_start(ap, fmt);
	put_message(ctx->err, fmt, ap);
	va_end(ap);
}

void cmd_error(struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	fflush(ctx->out);
	fputs("stackdump: ", ctx->err);
	va_start(ap, fmt);
	put_message(ctx->err, fmt, ap);
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

const char *cmd_output_format(struct cmd_ctx *ctx, int format_opt, int output_opt, int say)
{
	const char *path = cmd_str(ctx, output_opt), *given = ctx->opt[format_opt].str;
	/* A shell's `set format` is no -f: the file's name comes first. */
	if (given && ctx->session && given == ctx->session->settings.format)
		given = NULL;
	const char *named = format_for_path(path);
	const char *choices = ctx->entry->options[format_opt].choices;
	if (named && !cmd_list_has(choices, named, strlen(named)))
		named = NULL;
	if (given && named && strcmp(given, named) != 0 &&
	    !(!strcmp(named, "top") && !strcmp(given, "tree"))) {
		cmd_error(ctx, "%s: -f %s does not match the output file %s (a %s file by its name): "
			       "give -f %s, or a name that fits (or none)",
			  ctx->entry->name, given, path, named, named);
		return NULL;
	}
	if (given || named)
		return given ? given : named;
	const char *def = cmd_str(ctx, format_opt);
	if (path && say)
		fprintf(ctx->err,
			"stackdump: %s: no format known by that name (.pprof, .pb, .pb.gz, .svg, "
			".json, .folded, .txt); writing %s (-f chooses)\n",
			path, def);
	return def;
}

int cmd_has(const struct cmd_ctx *ctx, int opt)
{
	return ctx->opt[opt].str != NULL;
}

const char *cmd_str(const struct cmd_ctx *ctx, int opt)
{
	if (ctx->opt[opt].str)
		return ctx->opt[opt].str;
	return ctx->entry ? ctx->entry->options[opt].def : NULL;
}

uint64_t cmd_num(const struct cmd_ctx *ctx, int opt)
{
	return ctx->opt[opt].num;
}

double cmd_real(const struct cmd_ctx *ctx, int opt)
{
	return ctx->opt[opt].real;
}

int cmd_is(const struct cmd_ctx *ctx, int opt, const char *word)
{
	const char *v = cmd_str(ctx, opt);
	return v && !strcmp(v, word);
}

const struct cmd_option cmd_global_options[] = {
	[CMD_GLOBAL_HELP] = OPT_FLAG("help", 'h',
				     "show the help ('stackdump COMMAND --help' for a command)"),
	[CMD_GLOBAL_VERSION] = OPT_FLAG("version", 'V', "show the version"),
	[CMD_GLOBAL_COMMANDS] = OPT_STRING(NULL, 'c', "CMDS",
					   "run shell commands (separated by ';') and exit",
					   CMPL_NONE),
	[CMD_GLOBAL_COMPLETION] = OPT_CHOICE("completion", 0, "SHELL",
					     "print the completion script for bash, zsh or fish",
					     "bash zsh fish", NULL),
	{0},
};

void cmd_help_globals(struct strbuf *sb)
{
	for (const struct cmd_option *o = cmd_global_options; o->help; o++) {
		char left[40];
		if (o->name && o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else if (o->name)
			snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "-%c%s%s", o->short_name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		strbuf_addf(sb, "  %-18s %s\n", left, o->help);
	}
}

int cmd_list_has(const char *list, const char *word, size_t wl)
{
	while (list && *list) {
		size_t l = strcspn(list, " ");
		if (l == wl && !strncmp(list, word, l))
			return 1;
		list += l;
		while (*list == ' ')
			list++;
	}
	return 0;
}

/* "2s", "100ms", "100us": a bound in the unit it reads best in. */
static void fmt_duration(char *buf, size_t n, double us)
{
	if (us >= 3600e6 && !fmod(us, 3600e6))
		snprintf(buf, n, "%gh", us / 3600e6);
	else if (us >= 1e6 && !fmod(us, 1e6))
		snprintf(buf, n, "%gs", us / 1e6);
	else if (us >= 1e3 && !fmod(us, 1e3))
		snprintf(buf, n, "%gms", us / 1e3);
	else
		snprintf(buf, n, "%gus", us);
}

static void fmt_size(char *buf, size_t n, double b)
{
	static const char units[] = "KMG";
	int u = -1;
	while (u < 2 && b >= 1024 && !fmod(b, 1024)) {
		b /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%g", b);
	else
		snprintf(buf, n, "%g%c", b, units[u]);
}

/* What a valid value of O looks like, for the error message. */
static void opt_hint(struct strbuf *sb, const struct cmd_option *o)
{
	if (o->hint) {
		strbuf_adds(sb, o->hint);
		return;
	}
	char lo[32], hi[32];
	int bounded = o->min != 0 || o->max != 0;
	switch (o->type) {
	case CMD_OPT_COUNT:
	case CMD_OPT_REAL:
		snprintf(lo, sizeof(lo), "%.15g", o->min);
		snprintf(hi, sizeof(hi), "%.15g", o->max);
		strbuf_adds(sb, o->type == CMD_OPT_COUNT ? "a whole number" : "a number");
		break;
	case CMD_OPT_DURATION:
		fmt_duration(lo, sizeof(lo), o->min);
		fmt_duration(hi, sizeof(hi), o->max);
		strbuf_adds(sb, "e.g. 500ms, 2s");
		break;
	case CMD_OPT_SIZE:
		fmt_size(lo, sizeof(lo), o->min);
		fmt_size(hi, sizeof(hi), o->max);
		strbuf_adds(sb, "e.g. 256K, 4M");
		break;
	default:
		return;
	}
	if (!bounded)
		return;
	if (o->max == 0)
		strbuf_addf(sb, "%sat least %s", o->type == CMD_OPT_COUNT || o->type == CMD_OPT_REAL
						     ? ", "
						     : "; ",
			    lo);
	else
		strbuf_addf(sb, "%s%s to %s",
			    o->type == CMD_OPT_COUNT || o->type == CMD_OPT_REAL ? " from " : "; ", lo,
			    hi);
}

/* Parse V as a value of O into OUT. Returns 0, or -1 when V is not a
 * valid value (the caller reports it). */
static int opt_value(const struct cmd_option *o, const char *v, struct cmd_optval *out)
{
	uint64_t n = 0;
	double d = 0;
	switch (o->type) {
	case CMD_OPT_FLAG:
	case CMD_OPT_STRING:
		return 0;
	case CMD_OPT_CHOICE:
		return cmd_list_has(o->choices, v, strlen(v)) ? 0 : -1;
	case CMD_OPT_COUNT: {
		char *end;
		if (!*v || *v == '-' || *v == '+')
			return -1;
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || *end)
			return -1;
		n = x;
		d = (double)x;
		break;
	}
	case CMD_OPT_DURATION:
		if (sd_parse_duration(v, &n) < 0)
			return -1;
		d = (double)n;
		break;
	case CMD_OPT_SIZE:
		if (sd_parse_size(v, &n) < 0)
			return -1;
		d = (double)n;
		break;
	case CMD_OPT_REAL: {
		char *end;
		errno = 0;
		d = strtod(v, &end);
		if (errno || end == v || *end || d != d)
			return -1;
		break;
	}
	}
	if ((o->min != 0 || o->max != 0) && (d < o->min || (o->max != 0 && d > o->max)))
		return -1;
	out->num = n;
	out->real = d;
	return 0;
}

/* Fill the options E's command line left out: from the shell's settings
 * where one stands in, else the declared default. */
static void opt_fill(struct cmd_ctx *ctx, const struct cmd_entry *e)
{
	const struct cmd_settings *st = ctx->session ? &ctx->session->settings : NULL;
	for (int i = 0; e->options && e->options[i].name; i++) {
		const struct cmd_option *o = &e->options[i];
		struct cmd_optval *v = &ctx->opt[i];
		if (v->str)
			continue;
		if (st) {
			switch (o->setting) {
			case CMD_SET_FORMAT:
				if (st->format && cmd_list_has(o->choices, st->format, strlen(st->format)))
					v->str = st->format;
				break;
			case CMD_SET_MAX_FRAMES:
				if (st->max_frames != ~0u) {
					v->str = "";
					v->num = st->max_frames;
					v->real = st->max_frames;
				}
				break;
			case CMD_SET_NO_INLINE:
				if (st->no_inline)
					v->str = "";
				break;
			case CMD_SET_NO_SOURCE:
				if (st->no_source)
					v->str = "";
				break;
			case CMD_SET_NONE:
				break;
			}
			if (v->str)
				continue;
		}
		/* A default that does not parse is a bug in the table: the
		 * consistency test catches it (cmd_table_check). */
		if (o->def)
			(void)opt_value(o, o->def, v);
	}
}

int cmd_table_check(char *msg, size_t msgsz)
{
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		int n = 0;
		for (; e->options && e->options[n].name; n++) {
			const struct cmd_option *o = &e->options[n];
			struct cmd_optval v = {0};
			if (o->def && opt_value(o, o->def, &v) < 0) {
				snprintf(msg, msgsz, "%s --%s: default '%s' is not a valid value",
					 e->name, o->name, o->def);
				return -1;
			}
			if ((o->type == CMD_OPT_FLAG) != !o->arg) {
				snprintf(msg, msgsz, "%s --%s: a flag has no metavariable, others one",
					 e->name, o->name);
				return -1;
			}
			if (o->type == CMD_OPT_CHOICE && !o->choices) {
				snprintf(msg, msgsz, "%s --%s: a choice without choices", e->name,
					 o->name);
				return -1;
			}
		}
		if (n > CMD_MAX_OPTS) {
			snprintf(msg, msgsz, "%s: more than %d options", e->name, CMD_MAX_OPTS);
			return -1;
		}
		/* A hole in a designated array ends the table early. */
		if (e->options && n == 0) {
			snprintf(msg, msgsz, "%s: empty option array", e->name);
			return -1;
		}
	}
	return 0;
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

void cmd_help_shell(struct strbuf *sb)
{
	strbuf_adds(sb,
		    "usage: stackdump [shell [PID|NAME]]\n"
		    "       stackdump -c 'CMD; CMD' [PID|NAME]\n"
		    "       stackdump < SCRIPT\n\n"
		    "The interactive shell: attach to processes and look at them with the commands\n"
		    "below, as often as needed; targets run freely between commands. With PID or\n"
		    "NAME it attaches first. Commands may be shortened to a unique prefix; 'help\n"
		    "COMMAND' shows one. Several commands on a line are separated by ';'; '!CMD'\n"
		    "runs CMD with /bin/sh; '#' starts a comment. Tab completes commands, options,\n"
		    "PIDs, process names and TIDs; history is kept in\n"
		    "$XDG_STATE_HOME/stackdump/history. Ctrl-C ends the command running (every\n"
		    "thread is detached), Ctrl-D or 'quit' leaves. Settings ('set', 'show'):\n"
		    "inline, source, max-frames, format, color, group. Lines read from a pipe or\n"
		    "-c run as a script, without prompt or history; the exit status is that of\n"
		    "the last command. Status lines (attached, detached, saved) go to stderr;\n"
		    "stdout carries only the output of the commands.\n\n");
	cmd_help_overview(sb);
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
	memset(ctx->opt, 0, sizeof(ctx->opt));
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
				const char *s = suggest_option(e, name);
				cmd_error(ctx, "%s: unknown option --%s (%s%s%ssee '%s%s%s')", e->name, name,
					  s ? "did you mean --" : "", s ? s : "", s ? "? " : "",
					  ctx->in_shell ? "help " : "stackdump ", e->name,
					  ctx->in_shell ? "" : " --help");
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
				cmd_error(ctx, "%s: unknown option -%c (see '%s%s%s')", e->name, a[1],
					  ctx->in_shell ? "help " : "stackdump ", e->name,
					  ctx->in_shell ? "" : " --help");
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
		if (val && opt_value(o, val, &ctx->opt[idx]) < 0) {
			if (o->type == CMD_OPT_CHOICE) {
				cmd_error(ctx, "%s: invalid value for --%s: %s (one of: %s)", e->name,
					  o->name, val, o->choices);
			} else {
				struct strbuf hint;
				strbuf_init(&hint);
				opt_hint(&hint, o);
				cmd_error(ctx, "invalid --%s: %s (%s)", o->name, val, hint.buf);
				strbuf_release(&hint);
			}
			free(pos);
			return -1;
		}
		ctx->opt[idx].str = val ? val : "";
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
	opt_fill(ctx, e);
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

/* Add PID to CTX->target's processes, opened with CMD_TARGET_ATTACH.
 * Returns 0, or -1 after an error message. */
static int target_add(struct cmd_ctx *ctx, const struct cmd_entry *e, pid_t pid)
{
	struct cmd_target *tg = &ctx->target;
	struct cmd_proc pr = {.pid = pid};
	if (e->flags & CMD_TARGET_ATTACH) {
		struct sd_error err = {0};
		pr.t = target_new(pid, &err);
		if (!pr.t) {
			cmd_error(ctx, "%s", err.msg);
			return -1;
		}
	}
	tg->procs = sd_xrealloc(tg->procs, (tg->nprocs + 1) * sizeof(*tg->procs));
	tg->procs[tg->nprocs++] = pr;
	tg->owned = 1;
	return 0;
}

/* Does ARG name a core file rather than a process (a path: it holds a
 * '/'), for command E? */
static int core_arg(const struct cmd_entry *e, const char *arg)
{
	return arg && strchr(arg, '/') && (e->flags & CMD_TARGET_CORE);
}

/* Add the core file PATH to CTX->target as a process. Returns 0, or -1
 * after an error message. */
static int core_add(struct cmd_ctx *ctx, const struct cmd_entry *e, const char *path)
{
	const char *sysroot = NULL;
	for (int i = 0; e->options && e->options[i].name; i++)
		if (!strcmp(e->options[i].name, "sysroot"))
			sysroot = cmd_str(ctx, i);
	struct sd_error err = {0};
	struct sd_target *t = target_open_core(path, sysroot, &err);
	if (!t) {
		cmd_error(ctx, "%s", err.msg);
		return -1;
	}
	struct cmd_target *tg = &ctx->target;
	tg->procs = sd_xrealloc(tg->procs, (tg->nprocs + 1) * sizeof(*tg->procs));
	tg->procs[tg->nprocs++] = (struct cmd_proc){.pid = t->pid, .t = t};
	tg->owned = 1;
	return 0;
}

/* Append PID to *PIDS (*N of them) unless ONCE and it is there. */
static void add_pid(pid_t **pids, size_t *n, size_t *cap, pid_t pid, int once)
{
	for (size_t i = 0; once && i < *n; i++)
		if ((*pids)[i] == pid)
			return;
	sd_grow(pids, cap, *n + 1, sizeof(**pids));
	(*pids)[(*n)++] = pid;
}

/* The processes of a CMD_TARGET_MANY command: ARGV (PIDs or unique names)
 * and every one named PID_OF (may be NULL), into CTX->target. Returns 0
 * or an exit code after printing an error. */
static int resolve_many(struct cmd_ctx *ctx, const struct cmd_entry *e, int argc, char **argv,
			const char *pid_of)
{
	struct cmd_target *tg = &ctx->target;
	int set = (e->flags & CMD_TARGET_SET) != 0;
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	int rc = EXIT_FAIL;
	for (int i = 0; i < argc; i++) {
		if (core_arg(e, argv[i])) {
			if (core_add(ctx, e, argv[i]) < 0)
				tg->failed++;
			continue;
		}
		pid_t pid = cmd_resolve_pid(ctx, argv[i]);
		if (pid > 0)
			add_pid(&pids, &n, &cap, pid, set);
		else if (set)
			goto out;
		else
			tg->failed++;
	}
	if (pid_of) {
		pid_t *found;
		size_t nf = procfs_pids_by_name(pid_of, &found);
		for (size_t i = 0; i < nf; i++)
			add_pid(&pids, &n, &cap, found[i], set);
		free(found);
		if (!nf) {
			cmd_error(ctx, "no process named '%s'", pid_of);
			if (set)
				goto out;
			tg->failed++;
		}
	}
	/* One that cannot be opened is left out: the others are taken. */
	for (size_t i = 0; i < n; i++)
		if (target_add(ctx, e, pids[i]) < 0)
			tg->failed++;
	if (tg->nprocs)
		rc = 0;
out:
	free(pids);
	return rc;
}

/* The option of E that names the target processes (OPT_PID_OF), or -1. */
static int pid_of_option(const struct cmd_entry *e)
{
	for (int i = 0; e->options && e->options[i].name; i++)
		if (e->options[i].pid_of)
			return i;
	return -1;
}

/* Resolve the target of a CMD_NEEDS_TARGET command into CTX->target: the
 * PID|NAME in ARGV[0] (ARGC positional arguments; with CMD_TARGET_MANY
 * each one) or the --pid-of option, or in the shell the loaded snapshot or
 * the current target. Returns 0 or an exit code after printing an error. */
static int resolve_target(struct cmd_ctx *ctx, const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd_target *tg = &ctx->target;
	struct cmd_session *s = ctx->session;
	int loaded = ctx->in_shell && s && s->loaded && (e->flags & CMD_TARGET_LOADED);
	int current = ctx->in_shell && s && s->ntargets;
	if ((e->flags & CMD_TARGET_SHELL_ARGS) && (loaded || current))
		argc = 0;
	int po = pid_of_option(e);
	const char *pid_of = po >= 0 ? cmd_str(ctx, po) : NULL;
	if (argc >= 1 || pid_of) {
		if (e->flags & CMD_TARGET_MANY)
			return resolve_many(ctx, e, argc, argv, pid_of);
		if (argc >= 1 && pid_of) {
			cmd_error(ctx, "%s: give a PID or --%s NAME, not both", e->name,
				  e->options[po].name);
			return EXIT_USAGE;
		}
		if (argc >= 1 && core_arg(e, argv[0])) {
			if (core_add(ctx, e, argv[0]) < 0)
				return EXIT_FAIL;
		} else {
			pid_t pid = cmd_resolve_pid(ctx, argc >= 1 ? argv[0] : pid_of);
			if (pid <= 0 || target_add(ctx, e, pid) < 0)
				return EXIT_FAIL;
		}
	} else if (loaded) {
		tg->loaded = s->loaded;
		return 0;
	} else if (current) {
		struct sd_target *t = s->targets[s->current];
		tg->procs = sd_xcalloc(1, sizeof(*tg->procs));
		tg->procs[0] = (struct cmd_proc){.pid = t->pid, .t = t};
		tg->nprocs = 1;
		tg->from_shell = 1;
	} else if (!ctx->in_shell || e->target_missing) {
		if (e->target_missing)
			cmd_error(ctx, "%s: %s", e->name, e->target_missing);
		else
			cmd_error(ctx,
				  "%s: missing argument (PID|NAME)\nusage: stackdump %s [options] "
				  "PID|NAME",
				  e->name, e->name);
		return EXIT_USAGE;
	} else {
		cmd_current_target(ctx); /* says that there is none */
		return EXIT_FAIL;
	}
	tg->pid = tg->procs[0].pid;
	tg->t = tg->procs[0].t;
	return 0;
}

/* Free what resolve_target left in TG. */
static void target_release(struct cmd_target *tg)
{
	for (size_t i = 0; tg->owned && i < tg->nprocs; i++)
		target_free(tg->procs[i].t);
	free(tg->procs);
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
	struct cmd_optval saved_opt[CMD_MAX_OPTS];
	struct cmd_target saved_target = ctx->target;
	memcpy(saved_opt, ctx->opt, sizeof(saved_opt));
	memset(&ctx->target, 0, sizeof(ctx->target));
	ctx->posv = NULL;
	int r = cmd_parse(ctx, e, &argc, &argv);
	int rc;
	if (r < 0)
		rc = EXIT_USAGE;
	else if (r > 0)
		rc = EXIT_OK;
	else if (e->check && e->check(ctx) < 0)
		rc = EXIT_USAGE;
	else if ((e->flags & CMD_NEEDS_TARGET) && (rc = resolve_target(ctx, e, argc - 1, argv + 1)))
		;
	else
		rc = e->exec(ctx, argc - 1, argv + 1);
	target_release(&ctx->target);
	free(ctx->posv);
	ctx->posv = saved_posv;
	ctx->entry = saved_entry;
	ctx->target = saved_target;
	memcpy(ctx->opt, saved_opt, sizeof(saved_opt));
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
	 * without schedstat, "schedstat" proves samples' sleepers with
	 * schedstat, as on a host that refuses perf events, "clock" with
	 * the task clock, as where the switch records' ring is refused. */
	const char *mode = getenv("STACKDUMP_CAPTURE");
	if (mode && !strcmp(mode, "freeze"))
		o->capture = SD_CAPMODE_FREEZE;
	else if (mode && !strcmp(mode, "ctxsw"))
		o->capture = SD_CAPMODE_CTXSW;
	else if (mode && !strcmp(mode, "schedstat"))
		o->capture = SD_CAPMODE_SCHEDSTAT;
	else if (mode && !strcmp(mode, "clock"))
		o->capture = SD_CAPMODE_CLOCK;
	if (cmd_has(ctx, SNAP_OPT_MAX_FRAMES))
		o->max_frames = (unsigned)cmd_num(ctx, SNAP_OPT_MAX_FRAMES);
	o->no_inline = cmd_has(ctx, SNAP_OPT_NO_INLINE);
	o->no_source = cmd_has(ctx, SNAP_OPT_NO_SOURCE);
	o->per_thread = cmd_has(ctx, SNAP_OPT_PER_THREAD);
	if (cmd_has(ctx, SNAP_OPT_STACK_BYTES))
		o->max_stack = (size_t)cmd_num(ctx, SNAP_OPT_STACK_BYTES);
	if (cmd_has(ctx, SNAP_OPT_STACK_TOTAL))
		o->max_stack_total = (size_t)cmd_num(ctx, SNAP_OPT_STACK_TOTAL);
	if (cmd_has(ctx, SNAP_OPT_TIMEOUT))
		o->timeout_ms = (unsigned)(cmd_num(ctx, SNAP_OPT_TIMEOUT) / 1000);
	o->name_glob = cmd_str(ctx, SNAP_OPT_NAME);
	const char *v = cmd_str(ctx, SNAP_OPT_TID);
	if (v) {
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

int cmd_snap_check(struct cmd_ctx *ctx)
{
	struct sd_snap_opts o;
	pid_t *tids;
	int r = cmd_snap_opts(ctx, &o, &tids);
	free(tids);
	return r;
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

void cmd_format_names(struct strbuf *sb)
{
	size_t start = sb->len;
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_option *o = cmd_table[i]->options;
		for (; o && o->name; o++) {
			if (strcmp(o->name, "format") || !o->choices)
				continue;
			const char *c = o->choices;
			while (*c) {
				size_t l = strcspn(c, " ");
				if (l && !cmd_list_has(sb->buf + start, c, l)) {
					if (sb->len > start)
						strbuf_adds(sb, " ");
					strbuf_add(sb, c, l);
				}
				c += l;
				while (*c == ' ')
					c++;
			}
		}
	}
}
