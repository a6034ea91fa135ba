// SPDX-License-Identifier: MIT
// set NAME VALUE: the shell's settings (inline, source, max-frames, format,
// color, group), which commands use when their own option is not given. The
// settings table lives here; show prints it.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shell.h"

const struct shell_setting shell_settings[] = {
	{"inline", "on off", "show inline frames (dump --no-inline turns them off once)"},
	{"source", "on off", "show file:line of frames (dump --no-source)"},
	{"max-frames", "default", "frames per thread at most, 0 for no limit (dump --max-frames)"},
	{"format", NULL, "output format when a command's --format is not given"},
	{"color", "on off auto", "ANSI colours; auto: on a terminal unless NO_COLOR is set"},
	{"group", "on off auto", "merge threads with identical stacks in dump (dump --group); "
				 "auto: at a terminal for more than 64 threads"},
	{0},
};

/* Storage for the format name the session points to. */
static char format_buf[32];

int shell_color_wanted(const struct cmd_session *s)
{
	if (s && s->settings.color >= 0)
		return s->settings.color;
	const char *nc = getenv("NO_COLOR");
	return isatty(STDOUT_FILENO) && !(nc && *nc);
}

static int parse_bool(const char *v)
{
	if (!strcmp(v, "on") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		return 0;
	return -1;
}

int shell_setting_set(struct cmd_ctx *ctx, const char *name, const char *value)
{
	struct cmd_settings *st = &ctx->session->settings;
	if (!strcmp(name, "inline") || !strcmp(name, "source")) {
		int b = parse_bool(value);
		if (b < 0) {
			cmd_error(ctx, "set %s: expected on or off, not '%s'", name, value);
			return EXIT_USAGE;
		}
		if (name[0] == 'i')
			st->no_inline = !b;
		else
			st->no_source = !b;
		return EXIT_OK;
	}
	if (!strcmp(name, "max-frames")) {
		if (!strcmp(value, "default")) {
			st->max_frames = ~0u;
			return EXIT_OK;
		}
		char *end;
		long n = strtol(value, &end, 10);
		if (!*value || *end || n < 0 || n > 10000000) {
			cmd_error(ctx, "set max-frames: expected a number >= 0 or 'default', not '%s'",
				  value);
			return EXIT_USAGE;
		}
		st->max_frames = (unsigned)n;
		return EXIT_OK;
	}
	if (!strcmp(name, "format")) {
		struct strbuf names;
		strbuf_init(&names);
		cmd_format_names(&names);
		int ok = !strcmp(value, "default") ||
			 (strlen(value) < sizeof(format_buf) &&
			  cmd_list_has(names.buf, value, strlen(value)));
		if (!ok) {
			cmd_error(ctx, "set format: unknown format '%s' (one of: %s, default)", value,
				  names.buf);
			strbuf_release(&names);
			return EXIT_USAGE;
		}
		strbuf_release(&names);
		if (!strcmp(value, "default")) {
			st->format = NULL;
		} else {
			snprintf(format_buf, sizeof(format_buf), "%s", value);
			st->format = format_buf;
		}
		return EXIT_OK;
	}
	if (!strcmp(name, "color") || !strcmp(name, "colour")) {
		int b = !strcmp(value, "auto") ? -1 : parse_bool(value);
		if (b < 0 && strcmp(value, "auto")) {
			cmd_error(ctx, "set color: expected on, off or auto, not '%s'", value);
			return EXIT_USAGE;
		}
		st->color = b;
		ctx->color = shell_color_wanted(ctx->session);
		return EXIT_OK;
	}
	if (!strcmp(name, "group")) {
		int b = !strcmp(value, "auto") ? -1 : parse_bool(value);
		if (b < 0 && strcmp(value, "auto")) {
			cmd_error(ctx, "set group: expected on, off or auto, not '%s'", value);
			return EXIT_USAGE;
		}
		st->group = b;
		return EXIT_OK;
	}
	cmd_error(ctx, "set: unknown setting '%s' (see 'show')", name);
	return EXIT_USAGE;
}

static void show_one(struct strbuf *sb, const struct cmd_settings *st, const struct shell_setting *s)
{
	char val[64];
	if (!strcmp(s->name, "inline"))
		snprintf(val, sizeof(val), "%s", st->no_inline ? "off" : "on");
	else if (!strcmp(s->name, "source"))
		snprintf(val, sizeof(val), "%s", st->no_source ? "off" : "on");
	else if (!strcmp(s->name, "max-frames")) {
		if (st->max_frames == ~0u) {
			struct sd_snap_opts o;
			snap_opts_init(&o);
			snprintf(val, sizeof(val), "%u (default)", o.max_frames);
		} else {
			snprintf(val, sizeof(val), "%u", st->max_frames);
		}
	} else if (!strcmp(s->name, "format"))
		snprintf(val, sizeof(val), "%s", st->format ? st->format : "text (default)");
	else if (!strcmp(s->name, "group"))
		snprintf(val, sizeof(val), "%s",
			 st->group < 0 ? "auto" : st->group ? "on" : "off");
	else
		snprintf(val, sizeof(val), "%s",
			 st->color < 0 ? "auto" : st->color ? "on" : "off");
	strbuf_addf(sb, "%-11s %-15s %s\n", s->name, val, s->help);
}

int shell_setting_show(struct cmd_ctx *ctx, const char *name)
{
	struct strbuf sb;
	strbuf_init(&sb);
	int found = 0;
	for (const struct shell_setting *s = shell_settings; s->name; s++) {
		if (name && strcmp(name, s->name) && !(!strcmp(name, "colour") && !strcmp(s->name, "color")))
			continue;
		show_one(&sb, &ctx->session->settings, s);
		found = 1;
	}
	if (!found) {
		cmd_error(ctx, "show: unknown setting '%s' (one of: inline, source, max-frames, format, "
			       "color, group)",
			  name);
		strbuf_release(&sb);
		return EXIT_USAGE;
	}
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return EXIT_OK;
}

static int set_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (argc == 0)
		return shell_setting_show(ctx, NULL);
	if (argc == 1) {
		cmd_error(ctx, "set %s: needs a value (see 'help set')", argv[0]);
		return EXIT_USAGE;
	}
	return shell_setting_set(ctx, argv[0], argv[1]);
}

const struct cmd_entry cmd_set_entry = {
	.name = "set",
	.args_usage = "[NAME VALUE]",
	.summary = "change a setting of the shell (inline, source, max-frames, format, color, group)",
	.description = "  set inline on|off        show inline frames\n"
		       "  set source on|off        show file:line\n"
		       "  set max-frames N|default frames per thread at most (0: no limit)\n"
		       "  set format NAME|default  output format when --format is not given\n"
		       "  set color on|off|auto    ANSI colours (auto: on a terminal, no NO_COLOR)\n"
		       "  set group on|off|auto    dump merges threads with identical stacks\n"
		       "                           (auto: at a terminal, for more than 64 threads)\n"
		       "A command's own option wins over the setting. 'set' alone shows them all.",
	.options = NULL,
	.min_args = 0,
	.max_args = 2,
	.arg_complete = CMPL_SETTING,
	.flags = CMD_SHELL_ONLY,
	.exec = set_exec,
};
