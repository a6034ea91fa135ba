// SPDX-License-Identifier: MIT
// The discover stage: parse /proc for threads, their states and syscalls,
// the process's memory map and who already traces it. Nothing is stopped.
#include "procfs.h"

#include "switchring.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000

/* Where field N (1-based, as proc(5) counts: 3 is the state) of a stat
 * line starts, or NULL. The comm (field 2) may hold spaces and
 * parentheses: the fields after it start after the last ')'. */
static const char *stat_field(const char *text, int n)
{
	const char *q = strrchr(text, ')');
	for (int field = 3; field <= n && q; field++)
		q = strchr(q + 1, ' ');
	return q ? q + 1 : NULL;
}

int procfs_parse_stat(const char *text, char *state, pid_t *ppid,
		      unsigned long *flags, uint64_t *utime, uint64_t *stime,
		      int *cpu)
{
	/* The comm may hold spaces and parentheses: the fields start after
	 * the last ')'. */
	const char *p = strrchr(text, ')');
	if (!p)
		return -EINVAL;
	p++;
	char st = 0;
	int pp = 0;
	unsigned long fl = 0;
	unsigned long long ut = 0, stt = 0;
	int c = 0;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime ... (field 39 processor) */
	int n = sscanf(p, " %c %d %*d %*d %*d %*d %lu %*u %*u %*u %*u %llu %llu", &st, &pp,
		       &fl, &ut, &stt);
	if (n < 2)
		return -EINVAL;
	const char *q = stat_field(text, 39);
	if (q)
		c = atoi(q);
	if (state)
		*state = st;
	if (ppid)
		*ppid = pp;
	if (flags)
		*flags = fl;
	if (utime)
		*utime = ut;
	if (stime)
		*stime = stt;
	if (cpu)
		*cpu = c;
	return 0;
}

static void read_comm(const char *path, char *out, size_t outsz)
{
	char *text;
	out[0] = '\0';
	if (sd_read_file(path, &text, 4096) < 0)
		return;
	size_t l = strcspn(text, "\n");
	if (l >= outsz)
		l = outsz - 1;
	memcpy(out, text, l);
	out[l] = '\0';
	free(text);
}

static uint64_t status_field(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	return strtoull(p, NULL, 10);
}

int procfs_proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long *flags,
		     long *nthreads, struct sd_error *err)
{
	char path[64], *text;
	/* The leader's own stat: the same state letter and thread count as
	 * /proc/PID/stat, without the sum of every thread's times that one
	 * costs the kernel. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	ssize_t n = sd_read_file(path, &text, 1 << 16);
	if (n < 0) {
		if (n == -ENOENT || n == -ESRCH)
			return sd_error_set(err, ESRCH, "no such process: %d", (int)pid);
		return sd_error_set(err, (int)-n, "cannot read %s: %s", path, sd_strerror((int)-n));
	}
	int r = procfs_parse_stat(text, state, ppid, flags, NULL, NULL, NULL);
	if (r == 0 && nthreads) {
		const char *q = stat_field(text, 20); /* num_threads */
		*nthreads = q ? strtol(q, NULL, 10) : -1;
	}
	free(text);
	if (r < 0)
		return sd_error_set(err, EINVAL, "cannot parse %s", path);
	return 0;
}

int procfs_procinfo(pid_t pid, struct sd_procinfo *info, struct sd_error *err)
{
	char path[64], *text;
	memset(info, 0, sizeof(*info));
	info->pid = pid;
	unsigned long flags = 0;
	int r = procfs_proc_stat(pid, &info->state, &info->ppid, &flags, NULL, err);
	if (r < 0)
		return r;
	info->kernel_thread = (flags & PF_KTHREAD) != 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	read_comm(path, info->comm, sizeof(info->comm));
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (sd_read_file(path, &text, 1 << 16) >= 0) {
		info->tracer = (pid_t)status_field(text, "TracerPid:");
		info->uid = (uid_t)status_field(text, "Uid:");
		info->nthreads = (long)status_field(text, "Threads:");
		free(text);
	}
	if (info->tracer > 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)info->tracer);
		read_comm(path, info->tracer_comm, sizeof(info->tracer_comm));
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	char exe[4096];
	ssize_t l = readlink(path, exe, sizeof(exe) - 1);
	if (l > 0) {
		exe[l] = '\0';
		info->exe = sd_xstrdup(exe);
	}
	return 0;
}

void procfs_procinfo_release(struct sd_procinfo *info)
{
	free(info->exe);
	info->exe = NULL;
}

int procfs_parse_syscall(const char *text, struct sd_taskinfo *ti)
{
	ti->syscall_known = 0;
	ti->running = 0;
	ti->syscall_nr = -1;
	ti->sp = ti->pc = 0;
	memset(ti->syscall_args, 0, sizeof(ti->syscall_args));
	if (!strncmp(text, "running", 7)) {
		ti->syscall_known = 1;
		ti->running = 1;
		return 0;
	}
	char *end;
	errno = 0;
	long nr = strtol(text, &end, 10);
	if (end == text || errno)
		return -EINVAL;
	ti->syscall_nr = nr;
	const char *p = end;
	if (nr >= 0) {
		for (int i = 0; i < 6; i++) {
			while (*p == ' ')
				p++;
			if (strncmp(p, "0x", 2))
				return -EINVAL;
			ti->syscall_args[i] = strtoull(p, &end, 16);
			if (end == p)
				return -EINVAL;
			p = end;
		}
	}
	/* then the stack pointer and the pc */
	while (*p == ' ')
		p++;
	if (!strncmp(p, "0x", 2)) {
		ti->sp = strtoull(p, &end, 16);
		p = end;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "0x", 2))
			ti->pc = strtoull(p, &end, 16);
	}
	ti->syscall_known = 1;
	return 0;
}

/* One open, one read, one close: /proc files of a task fit in one read,
 * and on a busy target every syscall here is paid per thread. */
static ssize_t read_small_at(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

int procfs_taskinfo(pid_t pid, pid_t tid, struct sd_taskinfo *ti)
{
	return procfs_taskinfo_ex(pid, tid, ti, 0);
}

int procfs_taskinfo_ex(pid_t pid, pid_t tid, struct sd_taskinfo *ti, int light)
{
	return procfs_taskinfo_cached(NULL, AT_FDCWD, pid, tid, ti, light);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* Files of a task read by procfs_taskinfo, in this order. */
enum { TF_STAT, TF_SYSCALL, TF_WCHAN, TF_STATUS, TF_SCHEDSTAT, TF_COMM, TF_N };
static const char *const task_files[TF_N] = {"stat",	  "syscall", "wchan",
					     "status", "schedstat", "comm"};

struct procfs_taskcache {
	struct tcent {
		pid_t tid;
		int fd[TF_N]; /* -1: not open */
		int clock;    /* switch-record or task clock event, -1: not open */
		void *ring;   /* the switch records' ring (NULL: a task clock) */
		uint64_t ring_ns, ring_head; /* the ring's head at a time */
		int hot;      /* switches too often for events: schedstat only */
		int judged;   /* its switch rate over its life was looked at */
	} *v;
	size_t n, cap, max;
	size_t hint;	   /* where tc_find() looks first */
	int clock_refused; /* the kernel refused a task clock event */
	int ring_refused;  /* ... or a switch-record event or its ring */
	size_t hot;	   /* threads whose ring was closed (ring_hot) */
	size_t page;
};

/* Read task file F of TID: through the cache's open descriptor when there
 * is one (a pread from 0 makes the kernel write the file afresh, at a
 * third of the cost of open, read and close), else by opening it, and
 * keeping it open when the cache has room. A descriptor of a thread that
 * is gone (its TID perhaps reused since) fails with ESRCH: opened anew. */
static ssize_t task_read(struct tcent *e, int taskdir, const char *dirpath, int f, char *buf,
			 size_t size)
{
	char path[128];
	if (e && e->fd[f] >= 0) {
		ssize_t n = pread(e->fd[f], buf, size - 1, 0);
		if (n >= 0) {
			buf[n] = '\0';
			return n;
		}
		close(e->fd[f]);
		e->fd[f] = -1;
	}
	snprintf(path, sizeof(path), "%s%s", dirpath, task_files[f]);
	if (!e)
		return read_small_at(taskdir, path, buf, size);
	int fd = openat(taskdir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, buf, size - 1, 0);
	int err = errno;
	if (n < 0) {
		close(fd);
		return -err;
	}
	buf[n] = '\0';
	e->fd[f] = fd;
	return n;
}

static int cmp_tcent(const void *a, const void *b)
{
	pid_t x = ((const struct tcent *)a)->tid, y = ((const struct tcent *)b)->tid;
	return (x > y) - (x < y);
}

/* The cache entry of TID, or NULL. */
static struct tcent *tc_find(struct procfs_taskcache *c, pid_t tid)
{
	if (!c)
		return NULL;
	/* Threads are read in rising TID order. */
	struct tcent key = {.tid = tid};
	return sd_bsearch_hint(&key, c->v, c->n, sizeof(key), cmp_tcent, &c->hint);
}

/* The cache entry of TID, made if there is room; NULL: read uncached. */
static struct tcent *tc_entry(struct procfs_taskcache *c, pid_t tid)
{
	if (!c)
		return NULL;
	struct tcent *e = tc_find(c, tid);
	if (e || c->n >= c->max)
		return e;
	sd_grow(&c->v, &c->cap, c->n + 1, sizeof(*c->v));
	/* Keep the array sorted: insert in place. */
	size_t i = c->n;
	while (i > 0 && c->v[i - 1].tid > tid) {
		c->v[i] = c->v[i - 1];
		i--;
	}
	e = &c->v[i];
	e->tid = tid;
	for (int f = 0; f < TF_N; f++)
		e->fd[f] = -1;
	e->clock = -1;
	e->ring = NULL;
	e->ring_ns = e->ring_head = 0;
	e->hot = 0;
	e->judged = 0;
	c->n++;
	return e;
}

struct procfs_taskcache *procfs_taskcache_new(void)
{
	struct procfs_taskcache *c = sd_xcalloc(1, sizeof(*c));
	/* Up to seven descriptors a thread (six files and the task clock),
	 * within the limit, leaving room for the rest of the program; threads
	 * past that are read uncached. */
	struct rlimit rl;
	size_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			     ? (size_t)rl.rlim_cur
			     : 1024;
	c->max = lim > 512 ? (lim - 256) / (TF_N + 1) : 0;
	if (c->max > 16384)
		c->max = 16384;
	c->page = (size_t)sysconf(_SC_PAGESIZE);
	return c;
}

static void tc_close(const struct procfs_taskcache *c, struct tcent *e)
{
	for (int f = 0; f < TF_N; f++)
		if (e->fd[f] >= 0)
			close(e->fd[f]);
	if (e->ring)
		munmap(e->ring, 2 * c->page);
	if (e->clock >= 0)
		close(e->clock);
}

void procfs_taskcache_prune(struct procfs_taskcache *c, const pid_t *tids, size_t n)
{
	if (!c)
		return;
	size_t keep = 0, k = 0;
	for (size_t i = 0; i < c->n; i++) {
		/* Both sorted (TIDS by procfs_list_tids): one walk. */
		while (k < n && tids[k] < c->v[i].tid)
			k++;
		if (k < n && tids[k] == c->v[i].tid)
			c->v[keep++] = c->v[i];
		else
			tc_close(c, &c->v[i]);
	}
	c->n = keep;
}

void procfs_taskcache_free(struct procfs_taskcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		tc_close(c, &c->v[i]);
	free(c->v);
	free(c);
}

int procfs_taskinfo_cached(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			   struct sd_taskinfo *ti, int light)
{
	char dirpath[96], buf[4096];
	memset(ti, 0, sizeof(*ti));
	ti->syscall_nr = -1;
	/* Relative to an open /proc/PID/task, the kernel walks one name
	 * less per file; that is most of what opening one costs. */
	if (taskdir == AT_FDCWD)
		snprintf(dirpath, sizeof(dirpath), "/proc/%d/task/%d/", (int)pid, (int)tid);
	else
		snprintf(dirpath, sizeof(dirpath), "%d/", (int)tid);
	struct tcent *e = tc_entry(c, tid);
	ssize_t n = task_read(e, taskdir, dirpath, TF_STAT, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	int r = procfs_parse_stat(buf, &ti->state, NULL, &ti->flags, &ti->utime, &ti->stime, &ti->cpu);
	if (r < 0)
		return r;
	/* The name is between the first '(' and the last ')' of stat. */
	const char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
	if (open_p && close_p && close_p > open_p) {
		size_t l = (size_t)(close_p - open_p - 1);
		if (l >= sizeof(ti->comm))
			l = sizeof(ti->comm) - 1;
		memcpy(ti->comm, open_p + 1, l);
		ti->comm[l] = '\0';
	}
	/* A sleeping thread's syscall is in the registers a freeze reads;
	 * only a runnable one's file says more (on a CPU or waiting). */
	if (!(light & PROCFS_REGS_FOLLOW) || ti->state != 'S') {
		if (task_read(e, taskdir, dirpath, TF_SYSCALL, buf, sizeof(buf)) >= 0)
			procfs_parse_syscall(buf, ti);
	}
	if (light & PROCFS_LIGHT)
		return 0;
	if ((!(light & PROCFS_SHOWN) || ti->state == 'D') &&
	    task_read(e, taskdir, dirpath, TF_WCHAN, buf, sizeof(buf)) > 0 && strcmp(buf, "0")) {
		buf[strcspn(buf, "\n")] = '\0';
		size_t l = strlen(buf) < sizeof(ti->wchan) - 1 ? strlen(buf) : sizeof(ti->wchan) - 1;
		memcpy(ti->wchan, buf, l);
		ti->wchan[l] = '\0';
	}
	if (!(light & PROCFS_SHOWN) &&
	    task_read(e, taskdir, dirpath, TF_STATUS, buf, sizeof(buf)) >= 0) {
		ti->vol_ctxsw = status_field(buf, "voluntary_ctxt_switches:");
		ti->nonvol_ctxsw = status_field(buf, "nonvoluntary_ctxt_switches:");
	}
	return 0;
}

int procfs_parse_schedstat(const char *text, struct sd_counters *out)
{
	char *end;
	errno = 0;
	unsigned long long run = strtoull(text, &end, 10);
	if (end == text || errno)
		return -EINVAL;
	const char *p = end;
	strtoull(p, &end, 10); /* time waiting on a run queue: not a sign of running */
	if (end == p)
		return -EINVAL;
	p = end;
	unsigned long long cnt = strtoull(p, &end, 10);
	if (end == p || errno)
		return -EINVAL;
	out->ran_ns = run;
	out->switches = cnt;
	out->from_status = 0;
	return 0;
}

static void task_dirpath(char *dirpath, size_t size, int taskdir, pid_t pid, pid_t tid)
{
	if (taskdir == AT_FDCWD)
		snprintf(dirpath, size, "/proc/%d/task/%d/", (int)pid, (int)tid);
	else
		snprintf(dirpath, size, "%d/", (int)tid);
}

/* A ring of E's thread's context switches (switchring_open): 0,
 * or a negative errno (-ESRCH: gone; else the task clock takes its place). */
static int switch_ring(struct procfs_taskcache *c, struct tcent *e)
{
	void *r;
	int fd = switchring_open(e->tid, c->page, &r);
	if (fd < 0)
		return fd;
	e->clock = fd;
	e->ring = r;
	return 0;
}

/* A thread scheduled more than this many times a second (a server's
 * worker, in and out of its waits) pays for a switch record at every
 * switch, in its own time: more than the loads the records save us.
 * Its ring is closed and schedstat proves its samples instead. */
#define PROCFS_HOT_SWITCHES 1000

/* Is E's thread, whose ring's head is HEAD now, switching that often?
 * Measured over a second or more; when it is, its ring is closed. */
static int ring_hot(struct procfs_taskcache *c, struct tcent *e, uint64_t head)
{
	uint64_t now = sd_now_ns();
	if (!e->ring_ns) {
		e->ring_ns = now;
		e->ring_head = head;
		return 0;
	}
	if (now - e->ring_ns < 1000000000ull)
		return 0;
	/* The ring is written backwards: its head goes down. */
	double cycles = (double)(e->ring_head - head) / PROCFS_RING_CYCLE;
	double rate = cycles * 1e9 / (double)(now - e->ring_ns);
	e->ring_ns = now;
	e->ring_head = head;
	if (rate < PROCFS_HOT_SWITCHES)
		return 0;
	munmap(e->ring, 2 * c->page);
	close(e->clock);
	e->ring = NULL;
	e->clock = -1;
	e->hot = 1;
	c->hot++;
	return 1;
}

/* The task clock of E's thread: a software counting event, user and
 * kernel time alike, read with one read(2); or, where the kernel gives
 * one, the head of its switch-record ring (see switch_ring). Opened on
 * first use; a thread gone fails with ESRCH. Returns 0, or a negative
 * errno. */
static int task_clock(struct procfs_taskcache *c, struct tcent *e, struct sd_counters *out,
		      int ring)
{
	if (e->hot)
		return -EAGAIN; /* schedstat's */
	if (e->clock < 0 && ring && !c->ring_refused) {
		int r = switch_ring(c, e);
		if (r == -ESRCH)
			return r;
		if (r < 0)
			c->ring_refused = 1;
	}
	if (e->ring) {
		const struct perf_event_mmap_page *mp = e->ring;
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		if (ring_hot(c, e, head))
			return -EAGAIN; /* closed: schedstat from now on */
		out->switches = head;
		out->from_ring = 1;
		return 0;
	}
	if (e->clock < 0) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		int fd = (int)syscall(SYS_perf_event_open, &a, e->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			if (err != ESRCH)
				c->clock_refused = 1;
			return -err;
		}
		e->clock = fd;
	}
	uint64_t v;
	if (read(e->clock, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		close(e->clock);
		e->clock = -1;
		return -ESRCH;
	}
	out->ran_ns = v;
	out->from_clock = 1;
	return 0;
}

int procfs_task_switch_regs(struct procfs_taskcache *c, pid_t tid, uint64_t head,
			    struct user_regs_struct *regs)
{
	struct tcent *e = tc_find(c, tid);
	if (!e || !e->ring)
		return -ENODATA;
	return switchring_regs(e->ring, c->page, head, regs);
}

/* E's thread over its life so far (see procfs_task_life): its times
 * scheduled and run time from schedstat, its start from stat. */
static int life_of(struct tcent *e, int taskdir, const char *dirpath, struct procfs_life *out)
{
	char buf[1024];
	struct sd_counters sc;
	ssize_t n = task_read(e, taskdir, dirpath, TF_SCHEDSTAT, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (procfs_parse_schedstat(buf, &sc) < 0)
		return -ENODATA;
	n = task_read(e, taskdir, dirpath, TF_STAT, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	const char *p = stat_field(buf, 22); /* starttime */
	char *end;
	unsigned long long start = p ? strtoull(p, &end, 10) : 0;
	if (!p || end == p)
		return -ENODATA;
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return -ENODATA;
	double life = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - (double)start / (double)hz;
	memset(out, 0, sizeof(*out));
	out->secs = life;
	if (life > 0) {
		out->switches_per_s = (double)sc.switches / life;
		out->cpu_share = (double)sc.ran_ns / 1e9 / life;
	}
	return 0;
}

int procfs_task_life(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
		     struct procfs_life *out)
{
	char dirpath[96];
	task_dirpath(dirpath, sizeof(dirpath), taskdir, pid, tid);
	return life_of(c ? tc_entry(c, tid) : NULL, taskdir, dirpath, out);
}

/* Has E's thread been scheduled more than PROCFS_HOT_SWITCHES times a
 * second over its life (a second of it at least)? Then a ring would cost
 * it a record at every switch for the second ring_hot needs to find that
 * out: it never gets one. */
static int switched_often(struct tcent *e, int taskdir, const char *dirpath)
{
	struct procfs_life l;
	return life_of(e, taskdir, dirpath, &l) == 0 && l.secs >= 1.0 &&
	       l.switches_per_s >= PROCFS_HOT_SWITCHES;
}

int procfs_task_counters(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			 enum procfs_counter_src src, struct sd_counters *out)
{
	char dirpath[96], buf[4096];
	task_dirpath(dirpath, sizeof(dirpath), taskdir, pid, tid);
	struct tcent *e = tc_entry(c, tid);
	memset(out, 0, sizeof(*out));
	if (src == PROCFS_CNT_CLOCK && e && !e->judged && !e->ring && e->clock < 0 &&
	    !c->ring_refused) {
		e->judged = 1;
		if (!e->hot && switched_often(e, taskdir, dirpath)) {
			e->hot = 1;
			c->hot++;
		}
	}
	if ((src == PROCFS_CNT_CLOCK || src == PROCFS_CNT_TASKCLOCK) && e &&
	    (!c->clock_refused || e->ring)) {
		int r = task_clock(c, e, out, src == PROCFS_CNT_CLOCK);
		if (r == 0)
			return 0;
		/* A thread gone, or the kernel said no: schedstat says
		 * which. */
	}
	if (src != PROCFS_CNT_STATUS) {
		ssize_t n = task_read(e, taskdir, dirpath, TF_SCHEDSTAT, buf, sizeof(buf));
		if (n > 0 && procfs_parse_schedstat(buf, out) == 0)
			return 0;
		if (n == -ESRCH)
			return (int)n;
	}
	ssize_t n = task_read(e, taskdir, dirpath, TF_STATUS, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (!strstr(buf, "voluntary_ctxt_switches:"))
		return -ENODATA;
	out->switches = status_field(buf, "voluntary_ctxt_switches:") +
			status_field(buf, "nonvoluntary_ctxt_switches:");
	out->from_status = 1;
	return 0;
}

int procfs_task_waits(pid_t pid, pid_t tid, uint64_t *out)
{
	char path[80], *buf;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	ssize_t n = sd_read_file(path, &buf, 1 << 16);
	if (n < 0)
		return (int)n;
	int ok = strstr(buf, "\nvoluntary_ctxt_switches:") != NULL;
	if (ok)
		*out = status_field(buf, "\nvoluntary_ctxt_switches:");
	free(buf);
	return ok ? 0 : -ENODATA;
}

int procfs_task_comm(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid, char *out,
		     size_t size)
{
	char dirpath[96], buf[64];
	task_dirpath(dirpath, sizeof(dirpath), taskdir, pid, tid);
	ssize_t n = task_read(tc_entry(c, tid), taskdir, dirpath, TF_COMM, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(out, size, "%s", buf);
	return 0;
}

int procfs_task_syscall(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			struct sd_taskinfo *ti)
{
	char dirpath[96], buf[512];
	task_dirpath(dirpath, sizeof(dirpath), taskdir, pid, tid);
	ssize_t n = task_read(tc_entry(c, tid), taskdir, dirpath, TF_SYSCALL, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ENODATA;
	return procfs_parse_syscall(buf, ti);
}

int procfs_task_state(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
		      struct sd_taskinfo *ti)
{
	struct sd_taskinfo t2;
	int r = procfs_taskinfo_cached(c, taskdir, pid, tid, &t2, PROCFS_REGS_FOLLOW);
	if (r < 0)
		return r;
	ti->state = t2.state;
	memcpy(ti->comm, t2.comm, sizeof(ti->comm));
	memcpy(ti->wchan, t2.wchan, sizeof(ti->wchan));
	ti->utime = t2.utime;
	ti->stime = t2.stime;
	ti->cpu = t2.cpu;
	ti->flags = t2.flags;
	ti->vol_ctxsw = t2.vol_ctxsw;
	ti->nonvol_ctxsw = t2.nonvol_ctxsw;
	return 0;
}

int procfs_list_tids(pid_t pid, pid_t **tids, size_t *n, struct sd_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		int e = errno;
		if (e == ENOENT)
			return sd_error_set(err, ESRCH, "no such process: %d", (int)pid);
		return sd_error_set(err, e, "cannot list %s: %s", path, sd_strerror(e));
	}
	pid_t *v = NULL;
	size_t len = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		long t = sd_parse_pid(de->d_name);
		if (t <= 0)
			continue;
		sd_grow(&v, &cap, len + 1, sizeof(*v));
		v[len++] = (pid_t)t;
	}
	closedir(d);
	sd_sort(v, len, sizeof(*v), cmp_pid);
	*tids = v;
	*n = len;
	return 0;
}

size_t procfs_pids_by_name(const char *name, pid_t **pids)
{
	DIR *d = opendir("/proc");
	pid_t *v = NULL;
	size_t len = 0, cap = 0;
	if (!d) {
		*pids = NULL;
		return 0;
	}
	struct dirent *de;
	pid_t self = getpid();
	while ((de = readdir(d))) {
		long p = sd_parse_pid(de->d_name);
		if (p <= 0 || p == self)
			continue;
		char path[64], comm[64];
		snprintf(path, sizeof(path), "/proc/%ld/comm", p);
		read_comm(path, comm, sizeof(comm));
		int match = !strcmp(comm, name);
		if (!match) {
			char exe[4096];
			snprintf(path, sizeof(path), "/proc/%ld/exe", p);
			ssize_t l = readlink(path, exe, sizeof(exe) - 1);
			if (l > 0) {
				exe[l] = '\0';
				const char *b = strrchr(exe, '/');
				match = !strcmp(b ? b + 1 : exe, name);
			}
		}
		if (match) {
			sd_grow(&v, &cap, len + 1, sizeof(*v));
			v[len++] = (pid_t)p;
		}
	}
	closedir(d);
	sd_sort(v, len, sizeof(*v), cmp_pid);
	*pids = v;
	return len;
}

const char *procfs_syscall_name(long nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_write: return "write";
	case SYS_poll: return "poll";
	case SYS_pread64: return "pread64";
	case SYS_pwrite64: return "pwrite64";
	case SYS_readv: return "readv";
	case SYS_writev: return "writev";
	case SYS_select: return "select";
	case SYS_pause: return "pause";
	case SYS_nanosleep: return "nanosleep";
	case SYS_accept: return "accept";
	case SYS_sendto: return "sendto";
	case SYS_recvfrom: return "recvfrom";
	case SYS_sendmsg: return "sendmsg";
	case SYS_recvmsg: return "recvmsg";
	case SYS_wait4: return "wait4";
	case SYS_semget: return "semget";
	case SYS_semop: return "semop";
	case SYS_fcntl: return "fcntl";
	case SYS_fsync: return "fsync";
	case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
	case SYS_rt_sigsuspend: return "rt_sigsuspend";
	case SYS_futex: return "futex";
	case SYS_restart_syscall: return "restart_syscall";
	case SYS_clock_nanosleep: return "clock_nanosleep";
	case SYS_epoll_wait: return "epoll_wait";
	case SYS_waitid: return "waitid";
	case SYS_pselect6: return "pselect6";
	case SYS_ppoll: return "ppoll";
	case SYS_epoll_pwait: return "epoll_pwait";
	case SYS_accept4: return "accept4";
	case SYS_recvmmsg: return "recvmmsg";
	case SYS_io_uring_enter: return "io_uring_enter";
	case SYS_epoll_pwait2: return "epoll_pwait2";
	case SYS_futex_waitv: return "futex_waitv";
	default: return NULL;
	}
}

static uint64_t status_num(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

size_t procfs_observe(pid_t pid, int switches, struct sd_tobs **out)
{
	pid_t *tids = NULL;
	size_t n = 0, k = 0;
	*out = NULL;
	if (procfs_list_tids(pid, &tids, &n, NULL) < 0)
		return 0;
	struct sd_tobs *v = sd_xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		char path[96], *text;
		struct sd_tobs *o = &v[k];
		memset(o, 0, sizeof(*o));
		o->tid = tids[i];
		o->nr = -1;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tids[i]);
		if (sd_read_file(path, &text, 4096) < 0)
			continue;
		procfs_parse_stat(text, &o->state, NULL, NULL, NULL, NULL, NULL);
		free(text);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tids[i]);
		if (sd_read_file(path, &text, 4096) >= 0) {
			struct sd_taskinfo ti;
			memset(&ti, 0, sizeof(ti));
			if (procfs_parse_syscall(text, &ti) == 0) {
				o->running = ti.running;
				o->nr = ti.syscall_nr;
				o->arg0 = ti.syscall_args[0];
			}
			free(text);
		}
		int sleeping = o->state == 'S' || o->state == 'D';
		if (sleeping && o->nr == SYS_futex) {
			o->futex = 1;
		} else if (sleeping && o->nr == SYS_restart_syscall) {
			/* A timed futex wait interrupted by an earlier snapshot
			 * comes back as restart_syscall; so does a sleep. */
			snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tids[i]);
			if (sd_read_file(path, &text, 256) >= 0) {
				o->futex = !strncmp(text, "futex", 5);
				free(text);
			}
		}
		if (switches) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
				 (int)tids[i]);
			if (sd_read_file(path, &text, 1 << 16) < 0)
				continue;
			o->vol = status_num(text, "\nvoluntary_ctxt_switches:");
			o->nonvol = status_num(text, "\nnonvoluntary_ctxt_switches:");
			free(text);
		}
		k++;
	}
	free(tids);
	*out = v;
	return k;
}

int procfs_cpu_ticks(pid_t pid, uint64_t *ticks)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t r = sd_read_file(path, &text, 4096);
	if (r < 0)
		return (int)r;
	uint64_t u = 0, s = 0;
	int rc = procfs_parse_stat(text, NULL, NULL, NULL, &u, &s, NULL);
	free(text);
	*ticks = u + s;
	return rc;
}
