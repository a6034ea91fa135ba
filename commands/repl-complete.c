// SPDX-License-Identifier: MIT
// Tab completion in the shell, driven by the command table: command names,
// each command's options and their values, PIDs and process names, TIDs
// and thread names of the current target, lock addresses, settings, files.
// Candidates carry a description shown when readline lists them.
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "shell.h"
#include "procfs.h"
#include "repl.h"

/* PF_KTHREAD in /proc/PID/stat flags. */
#define KTHREAD_FLAG 0x00200000ul

static struct cmd_ctx *cctx;

struct cand {
	char *word;
	char *desc;
};
static struct cand *cands;
static size_t ncands, candcap;
static const char *cand_prefix; /* the word being completed */

static void cand_clear(void)
{
	for (size_t i = 0; i < ncands; i++) {
		free(cands[i].word);
		free(cands[i].desc);
	}
	ncands = 0;
}

/* Offer WORD (described by DESC, may be NULL) when it extends the prefix;
 * words that could not be typed back (spaces, control characters) are
 * left out. */
static void cand_add(const char *word, const char *desc)
{
	if (strncmp(word, cand_prefix, strlen(cand_prefix)))
		return;
	for (const unsigned char *p = (const unsigned char *)word; *p; p++)
		if (*p <= ' ' || *p == 0x7f || *p == '\'' || *p == '"' || *p == '\\' || *p == ';')
			return;
	for (size_t i = 0; i < ncands; i++)
		if (!strcmp(cands[i].word, word))
			return;
	sd_grow(&cands, &candcap, ncands + 1, sizeof(*cands));
	cands[ncands].word = sd_xstrdup(word);
	if (desc) {
		struct strbuf d;
		strbuf_init(&d);
		strbuf_add_escaped(&d, desc);
		cands[ncands].desc = strbuf_detach(&d);
	} else {
		cands[ncands].desc = NULL;
	}
	ncands++;
}

static void cand_add_list(const char *list)
{
	char *copy = sd_xstrdup(list ? list : ""), *save = NULL;
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		cand_add(w, NULL);
	free(copy);
}

static char *cand_next(const char *text, int state)
{
	static size_t i;
	(void)text;
	if (!state)
		i = 0;
	return i < ncands ? strdup(cands[i++].word) : NULL;
}

static const char *desc_of(const char *word)
{
	for (size_t i = 0; i < ncands; i++)
		if (!strcmp(cands[i].word, word))
			return cands[i].desc;
	return NULL;
}

/* Readline lists the matches: add each one's description. */
static void display_matches(char **matches, int num, int max)
{
	int any = 0;
	for (int i = 1; i <= num; i++)
		any |= desc_of(matches[i]) != NULL;
	if (!any) {
		rl_display_match_list(matches, num, max);
		rl_forced_update_display();
		return;
	}
	char **disp = sd_xcalloc((size_t)num + 2, sizeof(char *));
	disp[0] = matches[0];
	int newmax = 0;
	for (int i = 1; i <= num; i++) {
		const char *d = desc_of(matches[i]);
		struct strbuf sb;
		strbuf_init(&sb);
		strbuf_addf(&sb, "%-*s", max, matches[i]);
		if (d)
			strbuf_addf(&sb, "  %s", d);
		if ((int)sb.len > newmax)
			newmax = (int)sb.len;
		disp[i] = strbuf_detach(&sb);
	}
	rl_display_match_list(disp, num, newmax);
	for (int i = 1; i <= num; i++)
		free(disp[i]);
	free(disp);
	rl_forced_update_display();
}

/* Processes: PIDs when the word is a number, else process names. Kernel
 * threads are left out: they cannot be attached. */
static void complete_pids(void)
{
	const char *word = cand_prefix;
	int numeric = *word >= '0' && *word <= '9';
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *de;
	pid_t self = getpid();
	while ((de = readdir(d))) {
		long p = sd_parse_pid(de->d_name);
		if (p <= 0 || p == self)
			continue;
		if (numeric && strncmp(de->d_name, word, strlen(word)))
			continue;
		char path[64], *text;
		snprintf(path, sizeof(path), "/proc/%ld/stat", p);
		if (sd_read_file(path, &text, 4096) < 0)
			continue;
		unsigned long flags = 0;
		char state = 0;
		const char *l = strchr(text, '('), *r = strrchr(text, ')');
		if (!l || !r || r < l || procfs_parse_stat(text, &state, NULL, &flags, NULL, NULL, NULL) < 0 ||
		    (flags & KTHREAD_FLAG) || state == 'Z') {
			free(text);
			continue;
		}
		char comm[64];
		size_t n = (size_t)(r - l - 1) < sizeof(comm) - 1 ? (size_t)(r - l - 1) : sizeof(comm) - 1;
		memcpy(comm, l + 1, n);
		comm[n] = '\0';
		free(text);
		if (numeric) {
			cand_add(de->d_name, comm);
		} else {
			char desc[32];
			snprintf(desc, sizeof(desc), "PID %ld", p);
			size_t before = ncands;
			cand_add(comm, desc);
			/* Several processes of that name: attach needs a PID
			 * (or --all). */
			for (size_t i = 0; ncands == before && i < ncands; i++)
				if (!strcmp(cands[i].word, comm)) {
					free(cands[i].desc);
					cands[i].desc = sd_xstrdup("several processes");
				}
		}
	}
	closedir(d);
}

/* TIDs (or thread names) of the current target, and "all". */
static void complete_tids(int with_all)
{
	struct cmd_session *s = cctx->session;
	const char *word = cand_prefix;
	int numeric = *word >= '0' && *word <= '9';
	if (with_all)
		cand_add("all", "every thread");
	if (s->loaded) {
		for (size_t i = 0; i < s->loaded->nthreads; i++) {
			const struct sd_thread *th = &s->loaded->threads[i];
			char tid[16];
			snprintf(tid, sizeof(tid), "%d", (int)th->tid);
			if (numeric)
				cand_add(tid, th->name);
			else if (th->name)
				cand_add(th->name, tid);
		}
		return;
	}
	if (!s->ntargets)
		return;
	pid_t pid = s->targets[s->current]->pid;
	pid_t *tids;
	size_t n;
	if (procfs_list_tids(pid, &tids, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char path[96], tid[16], *text;
		snprintf(tid, sizeof(tid), "%d", (int)tids[i]);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tids[i]);
		if (sd_read_file(path, &text, 4096) < 0)
			continue;
		text[strcspn(text, "\n")] = '\0';
		if (numeric)
			cand_add(tid, text);
		else
			cand_add(text, tid);
		free(text);
	}
	free(tids);
}

/* Lock addresses seen in the last snapshot (or the loaded one). */
static void complete_locks(void)
{
	struct cmd_session *s = cctx->session;
	const struct sd_snapshot *snap = s->loaded ? s->loaded : s->last;
	if (!snap)
		return;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct sd_wait *w = &snap->threads[i].wait;
		if (w->kind < SD_WAIT_MUTEX || w->kind > SD_WAIT_FUTEX || !w->address)
			continue;
		char addr[32];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, w->address);
		cand_add(addr, w->symbol ? w->symbol : sd_wait_kind_name(w->kind));
		if (w->symbol)
			cand_add(w->symbol, addr);
	}
}

/* Attached targets by number (for use and detach). */
static void complete_targets(int with_all)
{
	struct cmd_session *s = cctx->session;
	for (size_t i = 0; i < s->ntargets; i++) {
		char n[24], desc[96];
		snprintf(n, sizeof(n), "%zu", i + 1);
		snprintf(desc, sizeof(desc), "%d %s", (int)s->targets[i]->pid, s->targets[i]->info.comm);
		cand_add(n, desc);
	}
	if (with_all)
		cand_add("all", s->loaded ? "every target and the loaded snapshot" : "every target");
}

static void complete_commands(void)
{
	for (size_t i = 0; i < cmd_table_len; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (e->flags & CMD_CLI_ONLY)
			continue;
		cand_add(e->name, e->summary);
		if (e->alias) {
			char d[64];
			snprintf(d, sizeof(d), "same as %s", e->name);
			cand_add(e->alias, d);
		}
	}
}

static void complete_setting_value(const char *name)
{
	if (!strcmp(name, "format")) {
		struct strbuf sb;
		strbuf_init(&sb);
		cmd_format_names(&sb);
		cand_add_list(sb.buf);
		cand_add("default", NULL);
		strbuf_release(&sb);
		return;
	}
	for (const struct shell_setting *st = shell_settings; st->name; st++)
		if (!strcmp(st->name, name))
			cand_add_list(st->values);
}

/* Values of option O. Returns readline's matches for files, else NULL
 * after filling the candidates. */
static int complete_kind(enum cmd_complete kind, const struct cmd_option *o)
{
	switch (kind) {
	case CMPL_PID: complete_pids(); break;
	case CMPL_TID: complete_tids(0); break;
	case CMPL_FILE:
	case CMPL_DIR: return 1;
	case CMPL_FORMAT:
	case CMPL_CHOICES:
		if (o && o->choices) {
			cand_add_list(o->choices);
		} else {
			struct strbuf sb;
			strbuf_init(&sb);
			cmd_format_names(&sb);
			cand_add_list(sb.buf);
			strbuf_release(&sb);
		}
		break;
	case CMPL_COMMAND: complete_commands(); break;
	case CMPL_SETTING:
		for (const struct shell_setting *st = shell_settings; st->name; st++)
			cand_add(st->name, st->help);
		break;
	case CMPL_LOCK: complete_locks(); break;
	case CMPL_NONE: break;
	}
	return 0;
}

static const struct cmd_option *find_long(const struct cmd_entry *e, const char *name, size_t n)
{
	for (const struct cmd_option *o = e->options; o && o->name; o++)
		if (strlen(o->name) == n && !strncmp(o->name, name, n))
			return o;
	return NULL;
}

/* The option WORD names ("--format", "-f"), or NULL. */
static const struct cmd_option *option_of(const struct cmd_entry *e, const char *word)
{
	if (word[0] != '-' || !word[1])
		return NULL;
	if (word[1] == '-') {
		const char *eq = strchr(word, '=');
		return find_long(e, word + 2, eq ? (size_t)(eq - word - 2) : strlen(word + 2));
	}
	for (const struct cmd_option *o = e->options; o && o->name; o++)
		if (o->short_name == word[1] && !word[2])
			return o;
	return NULL;
}

static char **finish(const char *text, int files)
{
	if (files) {
		rl_attempted_completion_over = 1;
		return rl_completion_matches(text, rl_filename_completion_function);
	}
	if (!ncands)
		return NULL;
	return rl_completion_matches(text, cand_next);
}

/* Where the command holding position START begins: after the last ';'
 * that is not quoted. */
static int command_start(const char *line, int start)
{
	int seg = 0;
	char q = 0;
	for (int i = 0; i < start; i++) {
		char c = line[i];
		if (q) {
			if (c == q)
				q = 0;
			else if (c == '\\' && q == '"' && i + 1 < start)
				i++;
			continue;
		}
		if (c == '\\' && i + 1 < start)
			i++;
		else if (c == '\'' || c == '"')
			q = c;
		else if (c == ';')
			seg = i + 1;
	}
	return seg;
}

static char **complete(const char *text, int start, int end)
{
	(void)end;
	rl_attempted_completion_over = 1;
	cand_clear();
	cand_prefix = text;
	int seg = command_start(rl_line_buffer, start);
	const char *cmdtext = rl_line_buffer + seg;
	cmdtext += strspn(cmdtext, " \t");
	if (*cmdtext == '!')
		return finish(text, 1);
	/* The words before the one completed. An opening quote of the word
	 * itself is not part of them. */
	int len = (int)(rl_line_buffer + start - cmdtext);
	if (len < 0)
		len = 0;
	char *before = strndup(cmdtext, (size_t)len);
	if (len > 0 && (before[len - 1] == '\'' || before[len - 1] == '"'))
		before[len - 1] = '\0';
	int value_of_eq = len > 0 && before[len - 1] == '=';
	char **w;
	int nw = repl_split(before, &w);
	free(before);
	if (nw < 0)
		return NULL;
	char **result = NULL;
	if (nw == 0) {
		complete_commands();
		result = finish(text, 0);
		goto out;
	}
	char msg[256];
	const struct cmd_entry *e = cmd_find(w[0], 0, msg, sizeof(msg));
	if (!e)
		goto out;
	/* The value of an option: "--format=<TAB>" or "--format <TAB>". */
	const struct cmd_option *o = NULL;
	if (value_of_eq)
		o = option_of(e, w[nw - 1]);
	else if (nw >= 2 && !strchr(w[nw - 1], '='))
		o = option_of(e, w[nw - 1]);
	if (o && o->arg) {
		result = finish(text, complete_kind(o->complete, o));
		goto out;
	}
	if (value_of_eq)
		goto out;
	if (text[0] == '-') {
		for (const struct cmd_option *p = e->options; p && p->name; p++) {
			char name[80];
			snprintf(name, sizeof(name), "--%s", p->name);
			cand_add(name, p->help);
		}
		cand_add("--help", "show how to use the command");
		result = finish(text, 0);
		goto out;
	}
	/* A positional argument: which one? */
	int pos = 0;
	for (int i = 1; i < nw; i++) {
		const struct cmd_option *po = option_of(e, w[i]);
		if (po) {
			if (po->arg && !strchr(w[i], '=') && w[i][1] == '-')
				i++;
			else if (po->arg && w[i][1] != '-' && !w[i][2])
				i++;
			continue;
		}
		if (!strcmp(w[i], "--") || w[i][0] != '-' || !w[i][1])
			pos++;
	}
	if (e->max_args >= 0 && pos >= e->max_args)
		goto out;
	struct cmd_session *s = cctx->session;
	int have_target = s->ntargets || s->loaded;
	if (!strcmp(e->name, "use") || !strcmp(e->name, "detach")) {
		complete_targets(e->name[0] == 'd');
	} else if (e->arg_complete == CMPL_SETTING && pos == 1) {
		complete_setting_value(w[nw - 1]);
	} else if (e->arg_complete == CMPL_SETTING && pos > 1) {
		/* nothing */
	} else if (have_target && e->args_usage && strstr(e->args_usage, "TID")) {
		/* In the shell, with a target, such commands take threads. */
		complete_tids(1);
	} else {
		result = finish(text, complete_kind(e->arg_complete, NULL));
		goto out;
	}
	result = finish(text, 0);
out:
	repl_free_words(nw, w);
	return result;
}

void repl_complete_init(struct cmd_ctx *ctx)
{
	cctx = ctx;
	rl_attempted_completion_function = complete;
	/* '=' splits "--format=json": the value is completed on its own. */
	rl_completer_word_break_characters = " \t\n;=";
	rl_completer_quote_characters = "'\"";
	rl_completion_display_matches_hook = display_matches;
}
