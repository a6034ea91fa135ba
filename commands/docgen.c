// SPDX-License-Identifier: MIT
// What is generated from the command table: the bash, zsh and fish
// completion scripts, the man page stackdump(1), and the table as JSON for
// the tests that keep the README and completions in step with it.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "shell.h"
#include "repl.h"
#include "version.h"

static const char *const kind_names[] = {
	[CMPL_NONE] = "none",	    [CMPL_PID] = "pid",	      [CMPL_TID] = "tid",
	[CMPL_FILE] = "file",	    [CMPL_DIR] = "dir",	      [CMPL_FORMAT] = "format",
	[CMPL_COMMAND] = "command", [CMPL_SETTING] = "setting", [CMPL_LOCK] = "lock",
	[CMPL_CHOICES] = "choices",
};

static const char *kind_name(enum cmd_complete k)
{
	return (size_t)k < sizeof(kind_names) / sizeof(kind_names[0]) && kind_names[k]
		   ? kind_names[k]
		   : "none";
}

/* Commands offered on the command line (shell-only ones are not). */
static int on_cli(const struct cmd_entry *e)
{
	return !(e->flags & CMD_SHELL_ONLY);
}

/* The choices an option completes to, or NULL. */
static void option_choices(struct strbuf *sb, const struct cmd_option *o)
{
	if (o->choices)
		strbuf_adds(sb, o->choices);
	else if (o->complete == CMPL_FORMAT)
		cmd_format_names(sb);
}

/* ------------------------------------------------------------------ */
/* JSON */

static void choices_json(struct jsonw *w, const struct cmd_option *o)
{
	struct strbuf sb;
	strbuf_init(&sb);
	option_choices(&sb, o);
	jsonw_array_begin(w);
	char *save = NULL, *copy = sd_xstrdup(sb.buf);
	for (char *word = strtok_r(copy, " ", &save); word; word = strtok_r(NULL, " ", &save))
		jsonw_str(w, word);
	jsonw_array_end(w);
	free(copy);
	strbuf_release(&sb);
}

/* "short": the option's letter, or null. */
static void short_json(struct jsonw *w, const struct cmd_option *o)
{
	if (o->short_name)
		jsonw_kstrn(w, "short", &o->short_name, 1);
	else
		jsonw_knull(w, "short");
}

int repl_list_commands(struct cmd_ctx *ctx)
{
	char bad[256];
	if (cmd_table_check(bad, sizeof(bad)) < 0) {
		cmd_error(ctx, "--list-commands: the command table is inconsistent: %s", bad);
		return EXIT_FAIL;
	}
	struct strbuf sb;
	struct jsonw w;
	cmd_json_init(&w, &sb);
	jsonw_object_begin(&w);
	jsonw_karray(&w, "global_options");
	for (const struct cmd_option *o = cmd_global_options; o->help; o++) {
		jsonw_object_begin(&w);
		jsonw_kstr(&w, "name", o->name);
		short_json(&w, o);
		jsonw_kstr(&w, "arg", o->arg);
		jsonw_kstr(&w, "help", o->help);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_karray(&w, "commands");
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		jsonw_object_begin(&w);
		jsonw_kstr(&w, "name", e->name);
		jsonw_kstr(&w, "alias", e->alias);
		jsonw_kstr(&w, "usage", e->args_usage);
		jsonw_kstr(&w, "summary", e->summary);
		jsonw_kbool(&w, "shell_only", e->flags & CMD_SHELL_ONLY);
		jsonw_kbool(&w, "cli_only", e->flags & CMD_CLI_ONLY);
		jsonw_kbool(&w, "needs_target", e->flags & CMD_NEEDS_TARGET);
		jsonw_kint(&w, "min_args", e->min_args);
		jsonw_kint(&w, "max_args", e->max_args);
		jsonw_kstr(&w, "args", kind_name(e->arg_complete));
		jsonw_karray(&w, "options");
		for (const struct cmd_option *o = e->options; o && o->name; o++) {
			jsonw_object_begin(&w);
			jsonw_kstr(&w, "name", o->name);
			short_json(&w, o);
			jsonw_kstr(&w, "arg", o->arg);
			jsonw_kstr(&w, "help", o->help);
			jsonw_kstr(&w, "complete", kind_name(o->complete));
			jsonw_key(&w, "choices");
			choices_json(&w, o);
			jsonw_object_end(&w);
		}
		jsonw_array_end(&w);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_karray(&w, "settings");
	for (const struct shell_setting *s = shell_settings; s->name; s++)
		jsonw_str(&w, s->name);
	jsonw_array_end(&w);
	jsonw_object_end(&w);
	cmd_print_json(ctx, &w);
	return EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* bash */

/* "-f|--format" for the case patterns of options taking an argument. */
static void bash_opt_pattern(struct strbuf *sb, const struct cmd_option *o)
{
	if (o->short_name)
		strbuf_addf(sb, "-%c|", o->short_name);
	strbuf_addf(sb, "--%s", o->name);
}

/* The shell code completing a value of kind K (CHOICES for the list). */
static void bash_complete_kind(struct strbuf *sb, enum cmd_complete k, const char *choices,
			       const char *indent)
{
	switch (k) {
	case CMPL_PID: strbuf_addf(sb, "%s_stackdump_pids \"$cur\"\n", indent); break;
	case CMPL_FILE:
		strbuf_addf(sb, "%scompopt -o filenames 2>/dev/null\n", indent);
		strbuf_addf(sb, "%sCOMPREPLY=($(compgen -f -- \"$cur\"))\n", indent);
		break;
	case CMPL_DIR:
		strbuf_addf(sb, "%scompopt -o filenames 2>/dev/null\n", indent);
		strbuf_addf(sb, "%sCOMPREPLY=($(compgen -d -- \"$cur\"))\n", indent);
		break;
	case CMPL_COMMAND: strbuf_addf(sb, "%s_stackdump_commands all\n", indent); break;
	case CMPL_FORMAT:
	case CMPL_CHOICES:
		if (choices && *choices)
			strbuf_addf(sb, "%sCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n", indent,
				    choices);
		else
			strbuf_addf(sb, "%s:\n", indent);
		break;
	default: strbuf_addf(sb, "%s:\n", indent); break;
	}
}

/* Is the value of option O typed freely (nothing to complete)? */
static int bash_free_value(const struct cmd_option *o)
{
	struct strbuf ch;
	strbuf_init(&ch);
	option_choices(&ch, o);
	int free_text = o->complete != CMPL_PID && o->complete != CMPL_FILE &&
			o->complete != CMPL_DIR && o->complete != CMPL_COMMAND && !ch.len;
	strbuf_release(&ch);
	return free_text;
}

/* `case $prev in` arms for the options of E that take a value: those with
 * something to complete, then one arm for all the others. */
static void bash_value_cases(struct strbuf *sb, const struct cmd_entry *e)
{
	int nfree = 0;
	for (const struct cmd_option *o = e ? e->options : NULL; o && o->name; o++) {
		if (!o->arg)
			continue;
		if (bash_free_value(o)) {
			nfree++;
			continue;
		}
		struct strbuf ch;
		strbuf_init(&ch);
		option_choices(&ch, o);
		strbuf_adds(sb, "\t\t");
		bash_opt_pattern(sb, o);
		strbuf_adds(sb, ")\n");
		bash_complete_kind(sb, o->complete, ch.buf, "\t\t\t");
		strbuf_adds(sb, "\t\t\treturn ;;\n");
		strbuf_release(&ch);
	}
	if (!nfree)
		return;
	strbuf_adds(sb, "\t\t");
	int first = 1;
	for (const struct cmd_option *o = e->options; o && o->name; o++) {
		if (!o->arg || !bash_free_value(o))
			continue;
		if (!first)
			strbuf_adds(sb, "|");
		bash_opt_pattern(sb, o);
		first = 0;
	}
	strbuf_adds(sb, ")\n\t\t\treturn ;;\n");
}

/* The body completing options and arguments of E. */
static void bash_command_body(struct strbuf *sb, const struct cmd_entry *e)
{
	int any_arg = 0;
	for (const struct cmd_option *o = e->options; o && o->name; o++)
		any_arg |= o->arg != NULL;
	if (any_arg) {
		strbuf_adds(sb, "\t\tcase $prev in\n");
		bash_value_cases(sb, e);
		strbuf_adds(sb, "\t\tesac\n");
	}
	strbuf_adds(sb, "\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W \"");
	for (const struct cmd_option *o = e->options; o && o->name; o++)
		strbuf_addf(sb, "--%s ", o->name);
	strbuf_adds(sb, "--help\" -- \"$cur\"))\n");
	if (e->max_args != 0 && e->arg_complete != CMPL_NONE) {
		strbuf_adds(sb, "\t\telse\n");
		bash_complete_kind(sb, e->arg_complete, NULL, "\t\t\t");
	}
	strbuf_adds(sb, "\t\tfi\n");
}

static const struct cmd_entry *dump_entry(void)
{
	char msg[8];
	return cmd_find("dump", 1, msg, sizeof(msg));
}

static void gen_bash(struct strbuf *sb)
{
	const struct cmd_entry *dump = dump_entry();
	strbuf_adds(sb, "# bash completion for stackdump(1).\n"
			"# Generated from the command table by `stackdump --completion bash`: do not\n"
			"# edit. Install as $(pkg-config --variable=completionsdir bash-completion)/"
			"stackdump\n"
			"# or source it from ~/.bashrc.\n\n");
	strbuf_adds(sb, "_stackdump_pids()\n{\n"
			"\tlocal cur=$1 p IFS=$'\\n'\n"
			"\tif [[ $cur == [0-9]* ]]; then\n"
			"\t\tlocal pids=()\n"
			"\t\tfor p in /proc/[0-9]*; do pids+=(\"${p#/proc/}\"); done\n"
			"\t\tCOMPREPLY+=($(compgen -W \"${pids[*]}\" -- \"$cur\"))\n"
			"\telse\n"
			"\t\tCOMPREPLY+=($(compgen -W \"$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)\" "
			"-- \"$cur\"))\n"
			"\tfi\n}\n\n");
	strbuf_adds(sb, "_stackdump_commands()\n{\n\tif [[ $1 == all ]]; then\n"
			"\t\tCOMPREPLY+=($(compgen -W \"");
	for (size_t i = 0; i < cmd_table_len; i++)
		strbuf_addf(sb, "%s%s", i ? " " : "", cmd_table[i]->name);
	strbuf_adds(sb, "\" -- \"$cur\"))\n\telse\n\t\tCOMPREPLY+=($(compgen -W \"");
	int first = 1;
	for (size_t i = 0; i < cmd_table_len; i++) {
		if (!on_cli(cmd_table[i]))
			continue;
		strbuf_addf(sb, "%s%s", first ? "" : " ", cmd_table[i]->name);
		first = 0;
	}
	strbuf_adds(sb, " shell\" -- \"$cur\"))\n\tfi\n}\n\n");

	strbuf_adds(sb, "_stackdump()\n{\n"
			"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= i cmd=\n"
			"\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
			"\t# \"--format=json\" comes as three words: --format = json\n"
			"\tif [[ $cur == = ]]; then\n\t\tcur=\n"
			"\telif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then\n"
			"\t\tprev=${COMP_WORDS[COMP_CWORD-2]}\n\tfi\n"
			"\tCOMPREPLY=()\n"
			"\t# The command is the first word that is neither an option nor an\n"
			"\t# option's value.\n"
			"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
			"\t\tcase ${COMP_WORDS[i]} in\n"
			"\t\t-c|--completion");
	for (const struct cmd_option *o = dump ? dump->options : NULL; o && o->name; o++)
		if (o->arg) {
			strbuf_adds(sb, "|");
			bash_opt_pattern(sb, o);
		}
	strbuf_adds(sb, ")\n\t\t\t[[ ${COMP_WORDS[i+1]} == = ]] && ((i++))\n\t\t\t((i++)) ;;\n"
			"\t\t-*) ;;\n"
			"\t\t*) cmd=${COMP_WORDS[i]}; break ;;\n"
			"\t\tesac\n\tdone\n\n"
			"\tcase $cmd in\n");
	/* Top level: commands, PIDs, the global options and those of dump
	 * (`stackdump [options] PID` is a dump). */
	strbuf_adds(sb, "\t'')\n\t\tcase $prev in\n");
	for (const struct cmd_option *g = cmd_global_options; g->help; g++) {
		if (!g->arg)
			continue;
		strbuf_adds(sb, "\t\t");
		if (g->short_name)
			strbuf_addf(sb, "-%c%s", g->short_name, g->name ? "|" : "");
		if (g->name)
			strbuf_addf(sb, "--%s", g->name);
		strbuf_adds(sb, ")\n");
		if (g->choices)
			strbuf_addf(sb, "\t\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n", g->choices);
		strbuf_adds(sb, "\t\t\treturn ;;\n");
	}
	bash_value_cases(sb, dump);
	strbuf_adds(sb, "\t\tesac\n\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W \"");
	for (const struct cmd_option *g = cmd_global_options; g->help; g++) {
		if (g->short_name)
			strbuf_addf(sb, "-%c ", g->short_name);
		if (g->name)
			strbuf_addf(sb, "--%s ", g->name);
	}
	for (const struct cmd_option *o = dump ? dump->options : NULL; o && o->name; o++)
		strbuf_addf(sb, "--%s ", o->name);
	if (sb->buf[sb->len - 1] == ' ')
		sb->buf[--sb->len] = '\0';
	strbuf_adds(sb, "\" -- \"$cur\"))\n\t\telse\n\t\t\t_stackdump_commands\n"
			"\t\t\t_stackdump_pids \"$cur\"\n\t\tfi\n\t\t;;\n");
	strbuf_adds(sb, "\tshell)\n\t\t_stackdump_pids \"$cur\"\n\t\t;;\n");
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!on_cli(e) || e == dump)
			continue;
		strbuf_addf(sb, "\t%s%s%s)\n", e->name, e->alias ? "|" : "", e->alias ? e->alias : "");
		bash_command_body(sb, e);
		strbuf_adds(sb, "\t\t;;\n");
	}
	/* dump, and `stackdump PID...` which is one. */
	if (dump) {
		strbuf_addf(sb, "\t*)\n");
		bash_command_body(sb, dump);
		strbuf_adds(sb, "\t\t;;\n");
	}
	strbuf_adds(sb, "\tesac\n}\n\ncomplete -F _stackdump stackdump\n");
}

/* ------------------------------------------------------------------ */
/* zsh */

/* Text inside '...' of a zsh spec: quotes closed and reopened, and the
 * characters _arguments treats specially escaped. */
static void zsh_text(struct strbuf *sb, const char *s, int in_brackets)
{
	for (; *s; s++) {
		if (*s == '\'')
			strbuf_adds(sb, "'\\''");
		else if (*s == ':' || (in_brackets && (*s == '[' || *s == ']')) || *s == '\\')
			strbuf_addf(sb, "\\%c", *s);
		else
			strbuf_add(sb, s, 1);
	}
}

static void zsh_action(struct strbuf *sb, enum cmd_complete k, const char *choices)
{
	switch (k) {
	case CMPL_PID: strbuf_adds(sb, "_stackdump_pids"); break;
	case CMPL_FILE: strbuf_adds(sb, "_files"); break;
	case CMPL_DIR: strbuf_adds(sb, "_files -/"); break;
	case CMPL_COMMAND: strbuf_adds(sb, "_stackdump_all_commands"); break;
	case CMPL_FORMAT:
	case CMPL_CHOICES:
		if (choices && *choices) {
			strbuf_adds(sb, "(");
			zsh_text(sb, choices, 0);
			strbuf_adds(sb, ")");
		} else {
			strbuf_adds(sb, " ");
		}
		break;
	default: strbuf_adds(sb, " "); break;
	}
}

static void zsh_option(struct strbuf *sb, const struct cmd_option *o, const char *indent)
{
	struct strbuf ch;
	strbuf_init(&ch);
	option_choices(&ch, o);
	strbuf_adds(sb, indent);
	if (o->short_name) {
		strbuf_addf(sb, "'(-%c --%s)'{-%c%s,--%s%s}'", o->short_name, o->name, o->short_name,
			    o->arg ? "+" : "", o->name, o->arg ? "=" : "");
	} else {
		strbuf_addf(sb, "'--%s%s", o->name, o->arg ? "=" : "");
	}
	strbuf_adds(sb, "[");
	zsh_text(sb, o->help, 1);
	strbuf_adds(sb, "]");
	if (o->arg) {
		strbuf_adds(sb, ":");
		zsh_text(sb, o->arg, 0);
		strbuf_adds(sb, ":");
		zsh_action(sb, o->complete, ch.buf);
	}
	strbuf_adds(sb, "' \\\n");
	strbuf_release(&ch);
}

static void zsh_args(struct strbuf *sb, const struct cmd_entry *e, const char *indent)
{
	for (const struct cmd_option *o = e->options; o && o->name; o++)
		zsh_option(sb, o, indent);
	strbuf_addf(sb, "%s'(- *)'{-h,--help}'[show how to use the command]' \\\n", indent);
	if (e->max_args != 0 && e->arg_complete != CMPL_NONE) {
		strbuf_addf(sb, "%s'%s: :", indent, e->max_args == 1 ? "1" : "*");
		zsh_action(sb, e->arg_complete, NULL);
		strbuf_adds(sb, "' \\\n");
	}
}

/* One 'name:summary' entry for _describe (the first colon splits). */
static void zsh_describe(struct strbuf *sb, const struct cmd_entry *e)
{
	strbuf_adds(sb, "\t\t'");
	zsh_text(sb, e->name, 0);
	strbuf_adds(sb, ":");
	for (const char *p = e->summary; *p; p++) {
		if (*p == '\'')
			strbuf_adds(sb, "'\\''");
		else
			strbuf_add(sb, p, 1);
	}
	strbuf_adds(sb, "'\n");
}

static void gen_zsh(struct strbuf *sb)
{
	const struct cmd_entry *dump = dump_entry();
	strbuf_adds(sb, "#compdef stackdump\n"
			"# zsh completion for stackdump(1).\n"
			"# Generated from the command table by `stackdump --completion zsh`: do not\n"
			"# edit. Install as _stackdump in a directory of $fpath.\n\n");
	strbuf_adds(sb, "_stackdump_pids() {\n"
			"\tlocal -a pids names\n"
			"\tpids=(/proc/<->(N:t))\n"
			"\tnames=(${(fu)\"$(cat /proc/<->/comm 2>/dev/null)\"})\n"
			"\t_alternative 'pids:process ID:compadd -a pids' "
			"'names:process name:compadd -a names'\n}\n\n");
	strbuf_adds(sb, "_stackdump_all_commands() {\n\tlocal -a cmds\n\tcmds=(\n");
	for (size_t i = 0; i < cmd_table_len; i++)
		zsh_describe(sb, cmd_table[i]);
	strbuf_adds(sb, "\t)\n\t_describe -t commands 'stackdump command' cmds\n}\n\n");
	strbuf_adds(sb, "_stackdump_commands() {\n\tlocal -a cmds\n\tcmds=(\n");
	for (size_t i = 0; i < cmd_table_len; i++)
		if (on_cli(cmd_table[i]))
			zsh_describe(sb, cmd_table[i]);
	strbuf_adds(sb, "\t\t'shell:the interactive shell (attach PID|NAME first)'\n");
	strbuf_adds(sb, "\t)\n\t_describe -t commands 'stackdump command' cmds\n}\n\n");

	strbuf_adds(sb, "_stackdump() {\n"
			"\tlocal curcontext=$curcontext state line ret=1\n"
			"\ttypeset -A opt_args\n"
			"\t_arguments -C -s \\\n");
	for (const struct cmd_option *g = cmd_global_options; g->help; g++) {
		strbuf_adds(sb, "\t\t");
		if (!g->arg) {
			strbuf_addf(sb, "'(- *)'{-%c,--%s}'[", g->short_name, g->name);
			zsh_text(sb, g->help, 1);
			strbuf_adds(sb, "]'");
		} else {
			if (g->name)
				strbuf_addf(sb, "'--%s=", g->name);
			else
				strbuf_addf(sb, "'-%c+", g->short_name);
			strbuf_adds(sb, "[");
			zsh_text(sb, g->help, 1);
			strbuf_adds(sb, "]:");
			zsh_text(sb, g->arg, 0);
			strbuf_adds(sb, ":");
			if (g->choices) {
				strbuf_adds(sb, "(");
				zsh_text(sb, g->choices, 0);
				strbuf_adds(sb, ")");
			} else {
				strbuf_adds(sb, " ");
			}
			strbuf_adds(sb, "'");
		}
		strbuf_adds(sb, " \\\n");
	}
	/* `stackdump [options] PID` is a dump: its options are valid here. */
	for (const struct cmd_option *o = dump ? dump->options : NULL; o && o->name; o++)
		zsh_option(sb, o, "\t\t");
	strbuf_adds(sb, "\t\t'1: :->command' \\\n"
			"\t\t'*:: :->args' && ret=0\n\n"
			"\tcase $state in\n"
			"\tcommand)\n"
			"\t\t_alternative 'commands:command:_stackdump_commands' "
			"'processes:process:_stackdump_pids' && ret=0\n"
			"\t\t;;\n"
			"\targs)\n"
			"\t\tcurcontext=${curcontext%:*:*}:stackdump-$words[1]:\n"
			"\t\tcase $words[1] in\n"
			"\t\tshell)\n"
			"\t\t\t_arguments '1: :_stackdump_pids' && ret=0\n\t\t\t;;\n");
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!on_cli(e) || e == dump)
			continue;
		strbuf_addf(sb, "\t\t%s%s%s)\n\t\t\t_arguments -s \\\n", e->name, e->alias ? "|" : "",
			    e->alias ? e->alias : "");
		zsh_args(sb, e, "\t\t\t\t");
		strbuf_adds(sb, "\t\t\t\t&& ret=0\n\t\t\t;;\n");
	}
	if (dump) {
		strbuf_adds(sb, "\t\t*)\n\t\t\t_arguments -s \\\n");
		zsh_args(sb, dump, "\t\t\t\t");
		strbuf_adds(sb, "\t\t\t\t&& ret=0\n\t\t\t;;\n");
	}
	strbuf_adds(sb, "\t\tesac\n\t\t;;\n\tesac\n\treturn ret\n}\n\n"
			"if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
			"\t_stackdump \"$@\"\nelse\n\tcompdef _stackdump stackdump\nfi\n");
}

/* ------------------------------------------------------------------ */
/* fish */

static void fish_quote(struct strbuf *sb, const char *s)
{
	strbuf_adds(sb, "'");
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			strbuf_adds(sb, "\\");
		strbuf_add(sb, s, 1);
	}
	strbuf_adds(sb, "'");
}

static void fish_value(struct strbuf *sb, enum cmd_complete k, const char *choices)
{
	switch (k) {
	case CMPL_PID: strbuf_adds(sb, " -x -a '(__stackdump_pids)'"); break;
	case CMPL_FILE:
	case CMPL_DIR: strbuf_adds(sb, " -r -F"); break;
	case CMPL_COMMAND: strbuf_adds(sb, " -x -a '(__stackdump_commands all)'"); break;
	case CMPL_FORMAT:
	case CMPL_CHOICES:
		strbuf_adds(sb, " -x");
		if (choices && *choices) {
			strbuf_adds(sb, " -a ");
			fish_quote(sb, choices);
		}
		break;
	default: strbuf_adds(sb, " -x"); break;
	}
}

static void fish_options(struct strbuf *sb, const struct cmd_entry *e, const char *cond)
{
	for (const struct cmd_option *o = e->options; o && o->name; o++) {
		strbuf_addf(sb, "complete -c stackdump -n %s", cond);
		if (o->short_name)
			strbuf_addf(sb, " -s %c", o->short_name);
		strbuf_addf(sb, " -l %s", o->name);
		if (o->arg) {
			struct strbuf ch;
			strbuf_init(&ch);
			option_choices(&ch, o);
			fish_value(sb, o->complete, ch.buf);
			strbuf_release(&ch);
		}
		strbuf_adds(sb, " -d ");
		fish_quote(sb, o->help);
		strbuf_adds(sb, "\n");
	}
}

static void gen_fish(struct strbuf *sb)
{
	const struct cmd_entry *dump = dump_entry();
	strbuf_adds(sb, "# fish completion for stackdump(1).\n"
			"# Generated from the command table by `stackdump --completion fish`: do not\n"
			"# edit. Install as ~/.config/fish/completions/stackdump.fish.\n\n");
	strbuf_adds(sb, "function __stackdump_pids\n"
			"\t__fish_complete_pids\n"
			"\tcat /proc/*/comm 2>/dev/null | sort -u\n"
			"end\n\n");
	strbuf_adds(sb, "function __stackdump_commands\n");
	strbuf_adds(sb, "\tif test \"$argv[1]\" = all\n");
	for (size_t i = 0; i < cmd_table_len; i++) {
		struct strbuf line;
		strbuf_init(&line);
		strbuf_addf(&line, "%s\t%s", cmd_table[i]->name, cmd_table[i]->summary);
		strbuf_adds(sb, "\t\techo ");
		fish_quote(sb, line.buf);
		strbuf_adds(sb, "\n");
		strbuf_release(&line);
	}
	strbuf_adds(sb, "\tend\nend\n\n");
	/* The commands, for "no command on the line yet" conditions. */
	struct strbuf names;
	strbuf_init(&names);
	for (size_t i = 0; i < cmd_table_len; i++)
		if (on_cli(cmd_table[i])) {
			strbuf_addf(&names, " %s", cmd_table[i]->name);
			if (cmd_table[i]->alias)
				strbuf_addf(&names, " %s", cmd_table[i]->alias);
		}
	strbuf_adds(&names, " shell");
	strbuf_adds(sb, "complete -c stackdump -f\n");
	for (const struct cmd_option *g = cmd_global_options; g->help; g++) {
		strbuf_adds(sb, "complete -c stackdump -n __fish_use_subcommand");
		if (g->short_name)
			strbuf_addf(sb, " -s %c", g->short_name);
		if (g->name)
			strbuf_addf(sb, " -l %s", g->name);
		if (g->arg) {
			strbuf_adds(sb, " -x");
			if (g->choices) {
				strbuf_adds(sb, " -a ");
				fish_quote(sb, g->choices);
			}
		}
		strbuf_adds(sb, " -d ");
		fish_quote(sb, g->help);
		strbuf_adds(sb, "\n");
	}
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!on_cli(e))
			continue;
		strbuf_addf(sb, "complete -c stackdump -n __fish_use_subcommand -a %s -d ", e->name);
		fish_quote(sb, e->summary);
		strbuf_adds(sb, "\n");
	}
	strbuf_adds(sb, "complete -c stackdump -n __fish_use_subcommand -a shell -d "
			"'the interactive shell'\n");
	strbuf_adds(sb, "complete -c stackdump -n __fish_use_subcommand -a '(__stackdump_pids)'\n");
	/* `stackdump [options] PID` is a dump. */
	if (dump) {
		struct strbuf cond;
		strbuf_init(&cond);
		strbuf_addf(&cond, "'not __fish_seen_subcommand_from%s'", names.buf);
		fish_options(sb, dump, cond.buf);
		strbuf_release(&cond);
	}
	strbuf_release(&names);
	strbuf_adds(sb, "complete -c stackdump -n '__fish_seen_subcommand_from shell' -a "
			"'(__stackdump_pids)'\n");
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!on_cli(e))
			continue;
		struct strbuf cond;
		strbuf_init(&cond);
		strbuf_addf(&cond, "'__fish_seen_subcommand_from %s%s%s'", e->name,
			    e->alias ? " " : "", e->alias ? e->alias : "");
		fish_options(sb, e, cond.buf);
		strbuf_addf(sb, "complete -c stackdump -n %s -s h -l help -d 'show how to use the "
				"command'\n",
			    cond.buf);
		if (e->max_args != 0 && e->arg_complete != CMPL_NONE) {
			strbuf_addf(sb, "complete -c stackdump -n %s", cond.buf);
			switch (e->arg_complete) {
			case CMPL_PID: strbuf_adds(sb, " -a '(__stackdump_pids)'"); break;
			case CMPL_FILE:
			case CMPL_DIR: strbuf_adds(sb, " -F"); break;
			case CMPL_COMMAND: strbuf_adds(sb, " -a '(__stackdump_commands all)'"); break;
			default: break;
			}
			strbuf_adds(sb, "\n");
		}
		strbuf_release(&cond);
	}
}

int repl_completion_script(struct cmd_ctx *ctx, const char *shell)
{
	struct strbuf sb;
	strbuf_init(&sb);
	if (shell && !strcmp(shell, "bash"))
		gen_bash(&sb);
	else if (shell && !strcmp(shell, "zsh"))
		gen_zsh(&sb);
	else if (shell && !strcmp(shell, "fish"))
		gen_fish(&sb);
	else {
		cmd_error(ctx, "--completion: unsupported shell '%s' (bash, zsh or fish)",
			  shell ? shell : "");
		strbuf_release(&sb);
		return EXIT_USAGE;
	}
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* man page */

/* Text for roff: backslashes and dashes escaped, no line starting with a
 * control character. */
static void roff(struct strbuf *sb, const char *s)
{
	int bol = sb->len == 0 || sb->buf[sb->len - 1] == '\n';
	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			strbuf_adds(sb, "\\&");
		bol = *s == '\n';
		if (*s == '\\')
			strbuf_adds(sb, "\\e");
		else if (*s == '-')
			strbuf_adds(sb, "\\-");
		else
			strbuf_add(sb, s, 1);
	}
}

static void man_option(struct strbuf *sb, char short_name, const char *name, const char *arg,
		       const char *help)
{
	strbuf_adds(sb, ".TP\n");
	if (short_name)
		strbuf_addf(sb, "\\fB\\-%c\\fR%s", short_name, name ? ", " : "");
	if (name) {
		strbuf_adds(sb, "\\fB\\-\\-");
		roff(sb, name);
		strbuf_adds(sb, "\\fR");
	}
	if (arg) {
		strbuf_adds(sb, " \\fI");
		roff(sb, arg);
		strbuf_adds(sb, "\\fR");
	}
	strbuf_adds(sb, "\n");
	roff(sb, help);
	strbuf_adds(sb, "\n");
}

static void man_command(struct strbuf *sb, const struct cmd_entry *e)
{
	strbuf_addf(sb, ".SS %s", e->name);
	if (e->alias)
		strbuf_addf(sb, ", %s", e->alias);
	strbuf_adds(sb, "\n");
	if (!(e->flags & CMD_SHELL_ONLY))
		strbuf_adds(sb, "\\fBstackdump ");
	else
		strbuf_adds(sb, "\\fB");
	roff(sb, e->name);
	strbuf_adds(sb, "\\fR");
	if (e->options && e->options[0].name)
		strbuf_adds(sb, " [\\fIoptions\\fR]");
	if (e->args_usage) {
		strbuf_adds(sb, " ");
		roff(sb, e->args_usage);
	}
	strbuf_adds(sb, "\n.PP\n");
	roff(sb, e->summary);
	strbuf_adds(sb, ".\n");
	if (e->flags & CMD_SHELL_ONLY)
		strbuf_adds(sb, "Available in the shell only.\n");
	if (e->description) {
		strbuf_adds(sb, ".PP\n.nf\n");
		roff(sb, e->description);
		strbuf_adds(sb, "\n.fi\n");
	}
	if (e->options && e->options[0].name) {
		strbuf_adds(sb, ".PP\nOptions:\n.RS\n");
		for (const struct cmd_option *o = e->options; o->name; o++)
			man_option(sb, o->short_name, o->name, o->arg, o->help);
		strbuf_adds(sb, ".RE\n");
	}
}

static const char man_head[] =
    ".SH NAME\n"
    "stackdump \\- all\\-thread stacks, lock waits and profiles of live processes\n"
    ".SH SYNOPSIS\n"
    ".B stackdump\n"
    "[\\fIoptions\\fR] \\fIPID\\fR|\\fINAME\\fR...\n"
    ".br\n"
    ".B stackdump\n"
    "\\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIargs\\fR]\n"
    ".br\n"
    ".B stackdump\n"
    "[\\fBshell\\fR [\\fIPID\\fR|\\fINAME\\fR]]\n"
    ".br\n"
    ".B stackdump \\-c\n"
    "\\fI'CMD; CMD'\\fR [\\fIPID\\fR|\\fINAME\\fR]\n"
    ".SH DESCRIPTION\n"
    "\\fBstackdump\\fR attaches to running Linux processes and takes all\\-thread stack\n"
    "snapshots without hurting them. Every thread is frozen with\n"
    "\\fBPTRACE_SEIZE\\fR and \\fBPTRACE_INTERRUPT\\fR just long enough to copy its\n"
    "registers, a window of its stack and the lock words it waits on; the process\n"
    "then runs again while the stacks are unwound and symbolized offline. The\n"
    "pause is measured and reported. The target is never left stopped and never\n"
    "killed.\n"
    ".PP\n"
    "\\fBstackdump\\fR \\fIPID\\fR dumps every thread and exits;\n"
    "\\fBstackdump\\fR \\fICOMMAND\\fR runs one command; \\fBstackdump\\fR alone on a\n"
    "terminal opens the interactive shell (see \\fBTHE SHELL\\fR). The same commands\n"
    "work in both places.\n"
    ".SH OPTIONS\n";

static const char man_shell[] =
    ".SH THE SHELL\n"
    "\\fBstackdump\\fR with no arguments on a terminal, or \\fBstackdump shell\\fR\n"
    "[\\fIPID\\fR|\\fINAME\\fR], reads commands with readline. The prompt shows the\n"
    "current target, e.g. \\fBstackdump 4242 orderd>\\fR.\n"
    ".IP \\(bu 2\n"
    "Attaching is a handle, not a stop: nothing is traced between commands and the\n"
    "target runs freely. When a target exits, the shell says so and drops it.\n"
    "Several targets can be attached at once (\\fBtargets\\fR, \\fBuse\\fR N).\n"
    ".IP \\(bu 2\n"
    "Tab completes command names, options and their values (formats, files), PIDs\n"
    "and process names (\\fBattach ord\\fR<TAB>), TIDs and thread names of the current\n"
    "target, lock addresses of the last snapshot, settings, and attached targets.\n"
    ".IP \\(bu 2\n"
    "History is kept across sessions in \\fI$XDG_STATE_HOME/stackdump/history\\fR\n"
    "(or \\fI~/.local/state/stackdump/history\\fR). Key bindings come from\n"
    "\\fIinputrc\\fR (Emacs or vi mode; the application name is \\fBstackdump\\fR).\n"
    ".IP \\(bu 2\n"
    "\\fB;\\fR separates commands on a line. \\fB!\\fR\\fIcmd\\fR runs the rest of the\n"
    "line with \\fI/bin/sh\\fR, with \\fBSTACKDUMP_PID\\fR set to the current target.\n"
    "\\fB#\\fR at the start of a command starts a comment.\n"
    ".IP \\(bu 2\n"
    "Ctrl\\-C interrupts a long command (profile, record) and returns to the prompt;\n"
    "the target keeps running. At the prompt it clears the line. Ctrl\\-D or\n"
    "\\fBquit\\fR detaches every target and leaves.\n"
    ".IP \\(bu 2\n"
    "When standard input is not a terminal, commands are read from it, one per\n"
    "line: \\fBprintf 'attach 4242\\en locks\\en' | stackdump\\fR.\n"
    "\\fBstackdump \\-c\\fR \\fI'threads; dump'\\fR \\fIPID\\fR runs commands from the command\n"
    "line. The exit status is that of the last command; a script stops at Ctrl\\-C\n"
    "(status 130).\n"
    ".IP \\(bu 2\n"
    "Output is coloured on a terminal unless \\fBNO_COLOR\\fR is set or \\fBset color\n"
    "off\\fR. Thread names and other strings that come from the target are printed\n"
    "with control characters escaped (\\ee, \\en, \\exNN).\n"
    ".PP\n"
    "Settings (\\fBset\\fR \\fINAME VALUE\\fR, \\fBshow\\fR):\n"
    ".RS\n";

static const char man_tail[] =
    ".SH EXIT STATUS\n"
    ".TP\n0\nsuccess\n"
    ".TP\n1\npartial: some threads or processes could not be read\n"
    ".TP\n2\nfailure: nothing could be done\n"
    ".TP\n3\n\\fBlocks\\fR found a deadlock\n"
    ".TP\n64\nusage error\n"
    ".TP\n130\ninterrupted (Ctrl\\-C)\n"
    ".PP\n"
    "In the shell and in scripts, the status is that of the last command.\n"
    ".SH ENVIRONMENT\n"
    ".TP\n.B NO_COLOR\nwhen set (and not empty), no colours.\n"
    ".TP\n.B XDG_STATE_HOME\nwhere the shell's history is kept (see \\fBFILES\\fR).\n"
    ".TP\n.B INPUTRC\nthe readline init file (key bindings of the shell).\n"
    ".TP\n.B STACKDUMP_DEBUGINFOD\n"
    "when set to \\fB1\\fR, \\fBDEBUGINFOD_URLS\\fR is honoured to fetch debug information;\n"
    "any other value, or none, leaves it ignored, so that no network access happens unasked.\n"
    ".TP\n.B STACKDUMP_PID\nset for \\fB!\\fR\\fIcmd\\fR in the shell: the current target.\n"
    ".SH FILES\n"
    ".TP\n.I $XDG_STATE_HOME/stackdump/history\n"
    "the shell's history (\\fI~/.local/state/stackdump/history\\fR when\n"
    "\\fBXDG_STATE_HOME\\fR is not set).\n"
    ".SH EXAMPLES\n"
    "One look at a process, then the views of an incident:\n"
    ".PP\n"
    ".nf\n"
    "stackdump 4242                    # every thread of process 4242\n"
    "stackdump dump \\-\\-group orderd   # identical stacks merged, with counts\n"
    "stackdump dump \\-\\-format json orderd\n"
    "stackdump locks 4242              # who holds what; exit status 3: a deadlock\n"
    "stackdump \\-c 'threads; dump' 4242\n"
    "stackdump \\-c 'locks \\-\\-format json' 4242 | jq .deadlocks\n"
    "printf 'attach 4242\\enthreads\\en' | stackdump\n"
    ".fi\n"
    ".PP\n"
    "Where the time goes:\n"
    ".PP\n"
    ".nf\n"
    "stackdump top 4242                # live; q quits, i shows idle threads\n"
    "stackdump profile \\-d 30s 4242    # hottest stacks, on and off CPU\n"
    "stackdump profile \\-d 30s \\-f svg \\-o orderd.svg orderd\n"
    "stackdump profile \\-d 30s \\-f pprof \\-o orderd.pb.gz orderd\n"
    "stackdump diff before.json after.json\n"
    ".fi\n"
    ".PP\n"
    "During an incident, then after it:\n"
    ".PP\n"
    ".nf\n"
    "stackdump record \\-\\-pid\\-of orderd \\-\\-every 1s \\-\\-for 30m \\e\n"
    "    \\-\\-max\\-disk 500M \\-\\-compress \\-\\-out /var/tmp/sd/orderd\n"
    "stackdump record orderd \\-\\-when 'parked:2,stuck:5s' \\-\\-out /var/tmp/sd/orderd\n"
    "stackdump report /var/tmp/sd/orderd            # findings first\n"
    "stackdump report \\-\\-timeline\\-svg t.svg /var/tmp/sd/orderd\n"
    ".fi\n"
    ".SH NOTES\n"
    "Attaching needs the right to trace the process: the same user and\n"
    "\\fIkernel.yama.ptrace_scope\\fR 0, or \\fBCAP_SYS_PTRACE\\fR. A process already\n"
    "traced (by a debugger) cannot be looked at.\n"
    ".SH SEE ALSO\n"
    "\\fBgdb\\fR(1), \\fBeu\\-stack\\fR(1), \\fBptrace\\fR(2), \\fBproc\\fR(5),\n"
    "\\fBreadline\\fR(3)\n";

int repl_man_page(struct cmd_ctx *ctx)
{
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb, ".\\\" Generated from the command table by `stackdump --man-page`: do not "
			 "edit.\n");
	strbuf_addf(&sb, ".TH STACKDUMP 1 \"\" \"stackdump %s\" \"User Commands\"\n",
		    STACKDUMP_VERSION);
	strbuf_adds(&sb, man_head);
	for (const struct cmd_option *g = cmd_global_options; g->help; g++)
		man_option(&sb, g->short_name, g->name, g->arg, g->help);
	strbuf_adds(&sb, ".SH COMMANDS\n"
			 "Each command also takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR. In the shell, a "
			 "command can be\nshortened to a unique prefix.\n");
	for (size_t i = 0; i < cmd_table_len; i++)
		man_command(&sb, cmd_table[i]);
	strbuf_adds(&sb, man_shell);
	for (const struct shell_setting *s = shell_settings; s->name; s++) {
		strbuf_addf(&sb, ".TP\n.B %s\n", s->name);
		roff(&sb, s->help);
		strbuf_adds(&sb, "\n");
	}
	strbuf_adds(&sb, ".RE\n");
	strbuf_adds(&sb, man_tail);
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return EXIT_OK;
}
