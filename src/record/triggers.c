// SPDX-License-Identifier: MIT
// The conditions of `record --when` as functions of observations: parked
// threads counted, process CPU over the last interval, threads that look
// the same for a duration (confirmed by two snapshots), and a set of parked
// threads that stays the same and forms a cycle in the wait-for graph.
#include "triggers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "locks.h"

int triggers_parse(struct sd_triggers *t, const char *spec, struct sd_error *err)
{
	char *copy = sd_xstrdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t l = strlen(tok);
		while (l && tok[l - 1] == ' ')
			tok[--l] = '\0';
		if (t->n == SD_TRIGGERS_MAX) {
			rc = sd_error_set(err, EINVAL, "too many --when conditions (at most %d)",
					  SD_TRIGGERS_MAX);
			break;
		}
		struct sd_trigger *tg = &t->trig[t->n];
		memset(tg, 0, sizeof(*tg));
		tg->armed = 1;
		snprintf(tg->text, sizeof(tg->text), "%s", tok);
		/* NAME>=VALUE, or NAME:VALUE, the same without characters a
		 * shell takes for a redirection when unquoted. */
		const char *ge = strstr(tok, ">=");
		size_t opl = 2;
		if (!ge && (ge = strchr(tok, ':')))
			opl = 1;
		char *end;
		if (!strcmp(tok, "deadlock")) {
			tg->kind = SD_TRIG_DEADLOCK;
		} else if (ge && !strncmp(tok, "parked", 6) && ge == tok + 6) {
			long v = strtol(ge + opl, &end, 10);
			if (end == ge + opl || *end || v < 1 || v > 1000000)
				goto bad;
			tg->kind = SD_TRIG_PARKED;
			tg->threshold = (double)v;
		} else if (ge && !strncmp(tok, "cpu", 3) && ge == tok + 3) {
			double v = strtod(ge + opl, &end);
			if (end == ge + opl || (*end && strcmp(end, "%")) || !(v > 0) || v > 100000)
				goto bad;
			tg->kind = SD_TRIG_CPU;
			tg->threshold = v;
		} else if (ge && !strncmp(tok, "stuck", 5) && ge == tok + 5) {
			if (sd_parse_duration(ge + opl, &tg->dur_us) < 0 || tg->dur_us < 100000)
				goto bad;
			tg->kind = SD_TRIG_STUCK;
		} else {
			goto bad;
		}
		/* Reasons read the same however the condition was typed. */
		if (opl == 1)
			snprintf(tg->text, sizeof(tg->text), "%.*s>=%s", (int)(ge - tok), tok, ge + 1);
		t->n++;
		continue;
	bad:
		/* "parked" alone: an unquoted parked>=8 lost ">=8" to the
		 * shell (a file named "=8" now holds our output). */
		if (!strcmp(tok, "parked") || !strcmp(tok, "cpu") || !strcmp(tok, "stuck"))
			rc = sd_error_set(err, EINVAL,
					  "invalid --when condition '%s': no value (an unquoted '>' "
					  "is a redirection for the shell: write %s:VALUE, or quote "
					  "it)",
					  tok, tok);
		else
			rc = sd_error_set(err, EINVAL,
					  "invalid --when condition '%s' (expected parked:N, deadlock, "
					  "cpu:PERCENT or stuck:DURATION, or the same with >=, quoted, "
					  "e.g. --when parked:8,stuck:10s)",
					  tok);
		break;
	}
	free(copy);
	if (rc == 0 && !t->n)
		rc = sd_error_set(err, EINVAL, "--when needs a condition");
	return rc;
}

void triggers_release(struct sd_triggers *t)
{
	free(t->stuck);
	free(t->dl_prev);
	free(t->dl_probed);
	memset(t, 0, sizeof(*t));
}

int triggers_has(const struct sd_triggers *t, enum sd_trig_kind k)
{
	for (int i = 0; i < t->n; i++)
		if (t->trig[i].kind == k)
			return 1;
	return 0;
}

void triggers_describe(const struct sd_triggers *t, struct strbuf *sb)
{
	for (int i = 0; i < t->n; i++)
		strbuf_addf(sb, "%s%s", i ? "," : "", t->trig[i].text);
}

void triggers_reset(struct sd_triggers *t)
{
	t->cpu_have = 0;
	t->nstuck = 0;
}

int triggers_stuck_candidate(const struct sd_tobs *o)
{
	return (o->state == 'R' && o->running) || o->futex || o->state == 'D';
}

/* Is O still in the same place as LAST, with no voluntary switch? */
static int stuck_same(const struct sd_tobs *last, const struct sd_tobs *o)
{
	if (o->vol != last->vol)
		return 0;
	if (o->running != last->running || o->futex != last->futex || o->state != last->state)
		return 0;
	if (o->futex && o->nr == SYS_futex && last->nr == SYS_futex && o->arg0 != last->arg0)
		return 0;
	return 1;
}

static struct sd_stuck_ent *stuck_find(struct sd_triggers *t, pid_t tid)
{
	for (size_t i = 0; i < t->nstuck; i++)
		if (t->stuck[i].tid == tid)
			return &t->stuck[i];
	return NULL;
}

void triggers_rebaseline(struct sd_triggers *t, const struct sd_tobs *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sd_stuck_ent *e = stuck_find(t, v[i].tid);
		if (e && triggers_stuck_candidate(&v[i]) && v[i].futex == e->last.futex)
			e->last = v[i];
		else if (e)
			e->last.vol = v[i].vol;
	}
}

/* Update the stuck candidates from a fresh observation. */
static void stuck_update(struct sd_triggers *t, const struct sd_tobs *v, size_t n, uint64_t now)
{
	for (size_t i = 0; i < t->nstuck; i++)
		t->stuck[i].seen = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sd_tobs *o = &v[i];
		struct sd_stuck_ent *e = stuck_find(t, o->tid);
		if (!triggers_stuck_candidate(o))
			continue;
		if (!e) {
			sd_grow(&t->stuck, &t->stuckcap, t->nstuck + 1, sizeof(*t->stuck));
			e = &t->stuck[t->nstuck++];
			memset(e, 0, sizeof(*e));
			e->tid = o->tid;
			e->since_us = now;
			e->last = *o;
		} else if (!stuck_same(&e->last, o)) {
			e->since_us = now;
			e->have_ref = 0;
			e->done = 0;
			e->last = *o;
		}
		e->seen = 1;
	}
	size_t k = 0;
	for (size_t i = 0; i < t->nstuck; i++)
		if (t->stuck[i].seen)
			t->stuck[k++] = t->stuck[i];
	t->nstuck = k;
}

/* Is the thread's wait an idle one (a pool worker on its condition
 * variable) rather than being stuck? */
static int idle_wait(const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	return th && locks_is_idle(th->wait.kind);
}

/* Check the stuck candidates, confirming with snapshots: one at half the
 * duration records each candidate's stack, one at the full duration must
 * show the same stack. Returns 1 (REASON filled, *SNAP the confirming
 * snapshot) when a thread is stuck. */
static int check_stuck(struct sd_triggers *t, const struct sd_trigger *tg, uint64_t now,
		       sd_probe_fn probe, void *arg, struct strbuf *reason,
		       struct sd_snapshot **snap)
{
	int need = 0;
	for (size_t i = 0; i < t->nstuck; i++) {
		struct sd_stuck_ent *e = &t->stuck[i];
		uint64_t age = now - e->since_us;
		if (!e->done &&
		    ((!e->have_ref && age >= tg->dur_us / 2) || (e->have_ref && age >= tg->dur_us)))
			need = 1;
	}
	if (!need)
		return 0;
	struct sd_snapshot *s = probe(arg);
	if (!s)
		return 0;
	int fired = 0;
	for (size_t i = 0; i < t->nstuck; i++) {
		struct sd_stuck_ent *e = &t->stuck[i];
		uint64_t age = now - e->since_us;
		if (e->done)
			continue;
		uint64_t h = snapshot_stack_hash(snapshot_find_thread(s, e->tid));
		if (idle_wait(s, e->tid)) {
			e->done = 1;
			continue;
		}
		if (!e->have_ref && age >= tg->dur_us / 2) {
			e->ref_hash = h;
			e->have_ref = h != 0;
		} else if (e->have_ref && age >= tg->dur_us) {
			if (h && h == e->ref_hash) {
				const struct sd_thread *th = snapshot_find_thread(s, e->tid);
				e->done = 1;
				if (!fired) {
					strbuf_addf(reason, "%s: thread %d \"", tg->text,
						    (int)e->tid);
					strbuf_add_escaped(reason, th->name);
					strbuf_addf(
					    reason,
					    "\" had the same stack and no voluntary context "
					    "switch for %.1fs (%s)",
					    (double)age / 1e6,
					    e->last.futex	   ? "parked in futex"
					    : e->last.state == 'D' ? "uninterruptible"
								   : "running");
				}
				fired++;
			} else {
				e->since_us = now;
				e->have_ref = 0;
			}
		}
	}
	if (fired > 1)
		strbuf_addf(reason, " (+%d more)", fired - 1);
	if (fired)
		*snap = s;
	else
		snapshot_free(s);
	return fired > 0;
}

/* The first deadlock lock analysis found in S: writes
 * "123 "a" -> 124 "b" -> 123" into DESC and returns its length (0: none). */
static size_t find_cycle(const struct sd_snapshot *s, struct strbuf *desc)
{
	struct sd_lockgraph *g = locks_graph(s);
	size_t n = 0;
	if (g->ndeadlocks) {
		const struct sd_deadlock *d = &g->deadlocks[0];
		for (size_t k = 0; k < d->n; k++) {
			const struct sd_thread *th = snapshot_find_thread(s, d->edges[k].tid);
			strbuf_addf(desc, "%d \"", (int)d->edges[k].tid);
			strbuf_add_escaped(desc, th ? th->name : "");
			strbuf_adds(desc, "\" -> ");
		}
		strbuf_addf(desc, "%d", (int)d->edges[0].tid);
		n = d->n;
		if (g->ndeadlocks > 1)
			strbuf_addf(desc, " (and %zu more cycles)", g->ndeadlocks - 1);
	}
	locks_graph_free(g);
	return n;
}

/* Deadlock: only a set of parked threads that stayed the same between two
 * checks can be a deadlock; look at each such set once. */
static int check_deadlock(struct sd_triggers *t, const struct sd_trigger *tg,
			  const struct sd_observation *obs, sd_probe_fn probe, void *arg,
			  struct strbuf *why, struct sd_snapshot **snap)
{
	int cond = 0;
	struct strbuf sig;
	strbuf_init(&sig);
	for (size_t k = 0; k < obs->nthreads; k++) {
		const struct sd_tobs *o = &obs->threads[k];
		if (o->futex)
			strbuf_addf(&sig, "%d:%" PRIx64 " ", (int)o->tid,
				    o->nr == SYS_futex ? o->arg0 : 0);
	}
	int stable = sig.len && t->dl_prev && !strcmp(sig.buf, t->dl_prev);
	int probed = t->dl_probed && !strcmp(sig.buf, t->dl_probed);
	if (stable && !probed) {
		free(t->dl_probed);
		t->dl_probed = sd_xstrdup(sig.buf);
		struct sd_snapshot *s = *snap ? *snap : probe(arg);
		struct strbuf cyc;
		strbuf_init(&cyc);
		size_t len = s ? find_cycle(s, &cyc) : 0;
		if (len) {
			cond = 1;
			strbuf_addf(why, "deadlock: %zu threads in a cycle: %s", len, cyc.buf);
			*snap = s;
		} else if (s && s != *snap) {
			snapshot_free(s);
		}
		strbuf_release(&cyc);
	}
	if (probed)
		cond = !tg->armed; /* the same deadlock: stay disarmed */
	free(t->dl_prev);
	t->dl_prev = strbuf_detach(&sig);
	return cond;
}

int triggers_check(struct sd_triggers *t, const struct sd_observation *obs, sd_probe_fn probe,
		   void *arg, struct strbuf *reason, struct sd_snapshot **snap)
{
	uint64_t now = obs->now_us;
	if (triggers_has(t, SD_TRIG_STUCK))
		stuck_update(t, obs->threads, obs->nthreads, now);
	int fire = 0;
	*snap = NULL;
	for (int i = 0; i < t->n; i++) {
		struct sd_trigger *tg = &t->trig[i];
		int cond = 0;
		struct strbuf why;
		strbuf_init(&why);
		switch (tg->kind) {
		case SD_TRIG_PARKED: {
			size_t parked = 0;
			for (size_t k = 0; k < obs->nthreads; k++)
				parked += obs->threads[k].futex != 0;
			cond = (double)parked >= tg->threshold;
			strbuf_addf(&why, "%s: %zu threads parked in futex waits", tg->text,
				    parked);
			break;
		}
		case SD_TRIG_CPU:
			if (!obs->have_cpu)
				break;
			if (t->cpu_have && now > t->cpu_us && obs->cpu_ticks >= t->cpu_ticks) {
				double pct = (double)(obs->cpu_ticks - t->cpu_ticks) /
					     obs->clk_tck / ((double)(now - t->cpu_us) / 1e6) *
					     100.0;
				cond = pct >= tg->threshold;
				strbuf_addf(&why, "%s: process at %.0f%% of one core", tg->text,
					    pct);
			}
			t->cpu_ticks = obs->cpu_ticks;
			t->cpu_us = now;
			t->cpu_have = 1;
			break;
		case SD_TRIG_STUCK:
			if (!*snap)
				cond = check_stuck(t, tg, now, probe, arg, &why, snap);
			break;
		case SD_TRIG_DEADLOCK:
			cond = check_deadlock(t, tg, obs, probe, arg, &why, snap);
			break;
		}
		if (cond && tg->armed) {
			if (fire)
				strbuf_adds(reason, "; ");
			strbuf_add(reason, why.buf, why.len);
			fire = 1;
		}
		tg->armed = !cond;
		strbuf_release(&why);
	}
	if (!fire && *snap) {
		snapshot_free(*snap);
		*snap = NULL;
	}
	return fire;
}
