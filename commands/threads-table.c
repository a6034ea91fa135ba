// SPDX-License-Identifier: MIT
// The table `threads` prints (threads-table.h).
#include "threads-table.h"

void threads_cells_init(struct cells *c)
{
	strbuf_init(&c->tid);
	strbuf_init(&c->name);
	strbuf_init(&c->state);
	strbuf_init(&c->wait);
	strbuf_init(&c->cpu);
	strbuf_init(&c->wchan);
	strbuf_init(&c->holds);
	c->lock = 0;
}

void threads_cells_release(struct cells *c)
{
	strbuf_release(&c->tid);
	strbuf_release(&c->name);
	strbuf_release(&c->state);
	strbuf_release(&c->wait);
	strbuf_release(&c->cpu);
	strbuf_release(&c->wchan);
	strbuf_release(&c->holds);
}

static void pad(struct strbuf *sb, const struct strbuf *cell, size_t width, int right)
{
	if (right)
		for (size_t i = cell->len; i < width; i++)
			strbuf_adds(sb, " ");
	strbuf_add(sb, cell->buf, cell->len);
	if (!right)
		for (size_t i = cell->len; i < width; i++)
			strbuf_adds(sb, " ");
}

/* Print the table of CELLS (N rows) under HEADER. */
void threads_print_table(struct cmd_ctx *ctx, const char *header, struct cells *c, size_t n,
			 const char *footer)
{
	size_t w[6] = {3, 4, 1, 4, 4, 5}; /* TID NAME S WAIT CPU% WCHAN */
	/* HOLDS, last (scripts keep their columns), when a thread holds
	 * what others wait on: the holder must not hide among its waiters. */
	size_t wh = 0;
	for (size_t i = 0; i < n; i++)
		if (c[i].holds.len > wh)
			wh = c[i].holds.len;
	if (wh && wh < 5)
		wh = 5;
	for (size_t i = 0; i < n; i++) {
		struct strbuf *col[6] = {&c[i].tid,  &c[i].name, &c[i].state,
					 &c[i].wait, &c[i].cpu,	 &c[i].wchan};
		for (int k = 0; k < 6; k++)
			if (col[k]->len > w[k])
				w[k] = col[k]->len;
	}
	const char *bold = ctx->color ? "\033[1m" : "", *reset = ctx->color ? "\033[0m" : "";
	const char *yellow = ctx->color ? "\033[33m" : "";
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_addf(&sb, "%s\n%s", header, bold);
	strbuf_addf(&sb, "%*s  %-*s  %-*s  %-*s  %*s  ", (int)w[0], "TID", (int)w[1], "NAME",
		    (int)w[2], "S", (int)w[3], "WAIT", (int)w[4], "CPU%");
	if (wh)
		strbuf_addf(&sb, "%-*s  HOLDS%s\n", (int)w[5], "WCHAN", reset);
	else
		strbuf_addf(&sb, "WCHAN%s\n", reset);
	for (size_t i = 0; i < n; i++) {
		pad(&sb, &c[i].tid, w[0], 1);
		strbuf_adds(&sb, "  ");
		pad(&sb, &c[i].name, w[1], 0);
		strbuf_adds(&sb, "  ");
		pad(&sb, &c[i].state, w[2], 0);
		strbuf_adds(&sb, "  ");
		if (c[i].lock)
			strbuf_adds(&sb, yellow);
		pad(&sb, &c[i].wait, w[3], 0);
		if (c[i].lock)
			strbuf_adds(&sb, reset);
		strbuf_adds(&sb, "  ");
		pad(&sb, &c[i].cpu, w[4], 1);
		strbuf_adds(&sb, "  ");
		if (wh) {
			pad(&sb, &c[i].wchan, w[5], 0);
			strbuf_adds(&sb, "  ");
			if (c[i].holds.len)
				strbuf_adds(&sb, yellow);
			strbuf_add(&sb, c[i].holds.buf, c[i].holds.len);
			if (c[i].holds.len)
				strbuf_adds(&sb, reset);
		} else {
			strbuf_add(&sb, c[i].wchan.buf, c[i].wchan.len);
		}
		while (sb.len && sb.buf[sb.len - 1] == ' ')
			sb.buf[--sb.len] = '\0';
		strbuf_adds(&sb, "\n");
	}
	if (footer)
		strbuf_addf(&sb, "%s\n", footer);
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
}
