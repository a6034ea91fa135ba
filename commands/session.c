// SPDX-License-Identifier: MIT
// The shell's session: its targets (added, found, labelled, removed) and
// the loaded snapshot, shared by attach, detach, use, quit and the shell.
#include <stdlib.h>
#include <string.h>

#include "shell.h"

int shell_target_index(const struct cmd_session *s, pid_t pid)
{
	for (size_t i = 0; i < s->ntargets; i++)
		if (s->targets[i]->pid == pid)
			return (int)i;
	return -1;
}

size_t shell_target_add(struct cmd_session *s, struct sd_target *t)
{
	sd_grow(&s->targets, &s->cap, s->ntargets + 1, sizeof(*s->targets));
	s->targets[s->ntargets] = t;
	return s->ntargets++;
}

void shell_target_label(struct strbuf *sb, const struct sd_target *t)
{
	strbuf_addf(sb, "%d \"", (int)t->pid);
	strbuf_add_escaped(sb, t->info.comm);
	strbuf_adds(sb, "\"");
}

void shell_target_remove(struct cmd_session *s, size_t i)
{
	if (i >= s->ntargets)
		return;
	target_free(s->targets[i]);
	memmove(&s->targets[i], &s->targets[i + 1], (s->ntargets - i - 1) * sizeof(*s->targets));
	s->ntargets--;
	if (s->current > i)
		s->current--;
	else if (s->current == i)
		s->current = 0;
	if (s->current >= s->ntargets)
		s->current = 0;
}

void shell_close_loaded(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb, "closed the loaded snapshot");
	if (s->loaded_path) {
		strbuf_adds(&sb, " ");
		strbuf_add_escaped(&sb, s->loaded_path);
	}
	cmd_status(ctx, "%s\n", sb.buf);
	strbuf_release(&sb);
	snapshot_free(s->loaded);
	s->loaded = NULL;
	free(s->loaded_path);
	s->loaded_path = NULL;
}

void cmd_session_init(struct cmd_session *s)
{
	memset(s, 0, sizeof(*s));
	s->settings.max_frames = ~0u;
	s->settings.color = -1;
	s->settings.group = -1;
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
