// SPDX-License-Identifier: MIT
// pprof output: the profile as a gzipped perftools.profiles.Profile
// (profile.proto, encoded with protobuf-c), with build-ids in mappings and
// inline chains as several lines of one location, so pprof, Pyroscope and
// Parca ingest it. Samples carry thread, tid, pid and on/off-CPU labels.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hashmap.h"
#include "format-profile.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;

/* A string-keyed map to small integers (string table, functions,
 * locations). Keys are heap copies. */
struct smap_entry {
	char *key;
	uint64_t val;
};

static int smap_eq(const void *entry, const void *key)
{
	return !strcmp(((const struct smap_entry *)entry)->key, key);
}

static void smap_init(struct hashmap *m)
{
	hashmap_init(m, sizeof(struct smap_entry));
	hashmap_reserve(m, 128);
}

static void smap_release(struct hashmap *m)
{
	size_t pos = 0;
	for (struct smap_entry *e; (e = hashmap_next(m, &pos));)
		free(e->key);
	hashmap_release(m);
}

/* The value of KEY; when absent, *FOUND is 0 and VAL is stored. */
static uint64_t smap_get(struct hashmap *m, const char *key, uint64_t val, int *found)
{
	struct smap_entry *e = hashmap_put(m, sd_hash(key, strlen(key), 0), key, smap_eq, found);
	if (!*found) {
		e->key = sd_xstrdup(key);
		e->val = val;
	}
	return e->val;
}

struct pb {
	PbProfile prof;
	struct hashmap strs, funcs, locs; /* of struct smap_entry */
	char **strtab;
	size_t nstr, strcap;
	PbFunction **funcv;
	size_t nfunc, funccap;
	PbLocation **locv;
	size_t nloc, loccap;
	PbMapping **mapv;
	size_t nmap, mapcap;
	PbSample **samplev;
	size_t nsample, samplecap;
	/* mapping ids per process module: parallel to p->procs */
	uint64_t **mapids;
};

/* Index of S in the string table. Strings from the target are escaped:
 * proto3 strings must be valid UTF-8. */
static int64_t str_id(struct pb *b, const char *s)
{
	if (!s || !*s)
		return 0;
	struct strbuf e;
	strbuf_init(&e);
	strbuf_add_escaped(&e, s);
	int found;
	uint64_t id = smap_get(&b->strs, e.buf, b->nstr, &found);
	if (!found) {
		sd_grow(&b->strtab, &b->strcap, b->nstr + 1, sizeof(*b->strtab));
		b->strtab[b->nstr++] = strbuf_detach(&e);
	}
	strbuf_release(&e);
	return (int64_t)id;
}

static uint64_t func_id(struct pb *b, const struct sd_pframe *f)
{
	const char *name = f->function ? f->function : f->name;
	struct strbuf k;
	strbuf_init(&k);
	strbuf_addf(&k, "%s\n%s", name, f->file ? f->file : "");
	int found;
	uint64_t id = smap_get(&b->funcs, k.buf, b->nfunc + 1, &found);
	strbuf_release(&k);
	if (found)
		return id;
	PbFunction *fn = sd_xmalloc(sizeof(*fn));
	perftools__profiles__function__init(fn);
	fn->id = id;
	fn->name = str_id(b, name);
	fn->system_name = fn->name;
	fn->filename = str_id(b, f->file);
	sd_grow(&b->funcv, &b->funccap, b->nfunc + 1, sizeof(*b->funcv));
	b->funcv[b->nfunc++] = fn;
	return id;
}

static uint64_t mapping_of(struct pb *b, const struct sd_profile *p, pid_t pid, uint64_t pc)
{
	for (size_t i = 0; i < p->nprocs; i++) {
		const struct sd_pproc *pr = &p->procs[i];
		if (pr->pid != pid)
			continue;
		for (size_t k = 0; k < pr->nmodules; k++)
			if (pc >= pr->modules[k].start && pc < pr->modules[k].end)
				return b->mapids[i][k];
	}
	return 0;
}

/* The location of frames F[0..n) (an inline chain sharing one pc). */
static uint64_t loc_id(struct pb *b, const struct sd_profile *p, pid_t pid,
		       const struct sd_pframe *f, size_t n)
{
	uint64_t *fids = sd_xmalloc(n * sizeof(*fids));
	struct strbuf k;
	strbuf_init(&k);
	uint64_t map = f[0].pc ? mapping_of(b, p, pid, f[0].pc) : 0;
	strbuf_addf(&k, "%" PRIx64 ":%" PRIu64, f[0].pc, map);
	for (size_t i = 0; i < n; i++) {
		fids[i] = func_id(b, &f[i]);
		strbuf_addf(&k, ",%" PRIu64 ":%d", fids[i], f[i].line);
	}
	int found;
	uint64_t id = smap_get(&b->locs, k.buf, b->nloc + 1, &found);
	strbuf_release(&k);
	if (!found) {
		PbLocation *l = sd_xmalloc(sizeof(*l));
		perftools__profiles__location__init(l);
		l->id = id;
		l->mapping_id = map;
		l->address = f[0].pc;
		l->n_line = n;
		l->line = sd_xmalloc(n * sizeof(*l->line));
		for (size_t i = 0; i < n; i++) {
			PbLine *ln = sd_xmalloc(sizeof(*ln));
			perftools__profiles__line__init(ln);
			ln->function_id = fids[i];
			ln->line = f[i].line;
			l->line[i] = ln;
		}
		sd_grow(&b->locv, &b->loccap, b->nloc + 1, sizeof(*b->locv));
		b->locv[b->nloc++] = l;
	}
	free(fids);
	return id;
}

static PbLabel *label(struct pb *b, const char *key, const char *str, int64_t num)
{
	PbLabel *l = sd_xmalloc(sizeof(*l));
	perftools__profiles__label__init(l);
	l->key = str_id(b, key);
	if (str)
		l->str = str_id(b, str);
	else
		l->num = num;
	return l;
}

static void add_sample(struct pb *b, const uint64_t *locs, size_t nlocs, uint64_t count,
		       int64_t period, const struct sd_pthread *t, const char *state)
{
	PbSample *s = sd_xmalloc(sizeof(*s));
	perftools__profiles__sample__init(s);
	s->n_location_id = nlocs;
	s->location_id = sd_xmalloc((nlocs ? nlocs : 1) * sizeof(*s->location_id));
	memcpy(s->location_id, locs, nlocs * sizeof(*locs));
	s->n_value = 2;
	s->value = sd_xmalloc(2 * sizeof(*s->value));
	s->value[0] = (int64_t)count;
	s->value[1] = (int64_t)count * period;
	s->label = sd_xmalloc(4 * sizeof(*s->label));
	if (t && t->name && *t->name)
		s->label[s->n_label++] = label(b, "thread", t->name, 0);
	if (t && t->tid)
		s->label[s->n_label++] = label(b, "tid", NULL, t->tid);
	if (t && t->pid)
		s->label[s->n_label++] = label(b, "pid", NULL, t->pid);
	if (state)
		s->label[s->n_label++] = label(b, "state", state, 0);
	sd_grow(&b->samplev, &b->samplecap, b->nsample + 1, sizeof(*b->samplev));
	b->samplev[b->nsample++] = s;
}

static PbValueType *value_type(struct pb *b, const char *type, const char *unit)
{
	PbValueType *v = sd_xmalloc(sizeof(*v));
	perftools__profiles__value_type__init(v);
	v->type = str_id(b, type);
	v->unit = str_id(b, unit);
	return v;
}

static void pb_release(struct pb *b, const struct sd_profile *p)
{
	for (size_t i = 0; i < b->nsample; i++) {
		PbSample *s = b->samplev[i];
		for (size_t k = 0; k < s->n_label; k++)
			free(s->label[k]);
		free(s->label);
		free(s->location_id);
		free(s->value);
		free(s);
	}
	free(b->samplev);
	for (size_t i = 0; i < b->nloc; i++) {
		for (size_t k = 0; k < b->locv[i]->n_line; k++)
			free(b->locv[i]->line[k]);
		free(b->locv[i]->line);
		free(b->locv[i]);
	}
	free(b->locv);
	for (size_t i = 0; i < b->nfunc; i++)
		free(b->funcv[i]);
	free(b->funcv);
	for (size_t i = 0; i < b->nmap; i++)
		free(b->mapv[i]);
	free(b->mapv);
	for (size_t i = 0; i < b->prof.n_sample_type; i++)
		free(b->prof.sample_type[i]);
	free(b->prof.sample_type);
	free(b->prof.period_type);
	free(b->prof.comment);
	for (size_t i = 0; i < b->nstr; i++)
		free(b->strtab[i]);
	free(b->strtab);
	for (size_t i = 0; b->mapids && i < p->nprocs; i++)
		free(b->mapids[i]);
	free(b->mapids);
	smap_release(&b->strs);
	smap_release(&b->funcs);
	smap_release(&b->locs);
}

static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen,
		    struct sd_error *err)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer, as pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return sd_error_set(err, ENOMEM, "cannot compress the pprof profile: zlib failed");
	size_t cap = deflateBound(&z, (uLong)len) + 64;
	uint8_t *buf = sd_xmalloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	int r = deflate(&z, Z_FINISH);
	size_t n = cap - z.avail_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(buf);
		return sd_error_set(err, EIO, "cannot compress the pprof profile: zlib error %d", r);
	}
	*out = buf;
	*outlen = n;
	return 0;
}

int format_profile_pprof(struct sd_profile *p, uint8_t **out, size_t *len, struct sd_error *err)
{
	profile_sort(p);
	struct pb b;
	memset(&b, 0, sizeof(b));
	smap_init(&b.strs);
	smap_init(&b.funcs);
	smap_init(&b.locs);
	perftools__profiles__profile__init(&b.prof);
	/* Entry 0 of the string table is always "". */
	int found;
	sd_grow(&b.strtab, &b.strcap, 1, sizeof(*b.strtab));
	b.strtab[b.nstr++] = sd_xstrdup("");
	smap_get(&b.strs, "", 0, &found);

	/* The period is the interval sampling achieved (the duration over
	 * the samples) when it is not the one asked (within 2%, as the
	 * header says): a slowed run's samples each stand for more time. */
	int64_t period = (int64_t)(p->interval_us ? p->interval_us : 1) * 1000;
	double got = profile_rate_achieved(p);
	if (got > 0 && p->interval_us && fabs(got * (double)p->interval_us / 1e6 - 1) > 0.02)
		period = (int64_t)(1e9 / got);
	b.prof.n_sample_type = 2;
	b.prof.sample_type = sd_xmalloc(2 * sizeof(*b.prof.sample_type));
	b.prof.sample_type[0] = value_type(&b, "samples", "count");
	b.prof.sample_type[1] = value_type(&b, "wall", "nanoseconds");
	b.prof.period_type = value_type(&b, "wall", "nanoseconds");
	b.prof.period = period;
	b.prof.time_nanos = (int64_t)(p->start_time * 1e9);
	b.prof.duration_nanos = (int64_t)p->duration_us * 1000;

	/* Mappings: every module of every process sampled. */
	b.mapids = sd_xcalloc(p->nprocs ? p->nprocs : 1, sizeof(*b.mapids));
	for (size_t i = 0; i < p->nprocs; i++) {
		const struct sd_pproc *pr = &p->procs[i];
		b.mapids[i] = sd_xcalloc(pr->nmodules ? pr->nmodules : 1, sizeof(uint64_t));
		for (size_t k = 0; k < pr->nmodules; k++) {
			const struct sd_module *m = &pr->modules[k];
			PbMapping *pm = sd_xmalloc(sizeof(*pm));
			perftools__profiles__mapping__init(pm);
			pm->id = b.nmap + 1;
			pm->memory_start = m->start;
			pm->memory_limit = m->end;
			/* Modules start at their first mapping, which maps the
			 * file from offset 0 for every ELF the loader maps. */
			pm->file_offset = 0;
			pm->filename = str_id(&b, m->path);
			pm->build_id = str_id(&b, m->build_id);
			pm->has_functions = 1;
			pm->has_filenames = !p->opts.no_source;
			pm->has_line_numbers = !p->opts.no_source;
			pm->has_inline_frames = !p->opts.no_inline;
			sd_grow(&b.mapv, &b.mapcap, b.nmap + 1, sizeof(*b.mapv));
			b.mapv[b.nmap++] = pm;
			b.mapids[i][k] = pm->id;
		}
	}

	/* Samples: one per stack, thread and on/off-CPU state. */
	uint64_t *locs = NULL;
	size_t lcap = 0;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		size_t nl = 0;
		for (size_t k = 0; k < st->nframes;) {
			size_t e = k;
			/* An inline frame shares its pc with the frames after
			 * it, up to the function it was inlined into. */
			while (e + 1 < st->nframes && (st->frames[e].flags & SD_FRAME_INLINED) &&
			       st->frames[e + 1].pc == st->frames[k].pc)
				e++;
			sd_grow(&locs, &lcap, nl + 1, sizeof(*locs));
			locs[nl++] = loc_id(&b, p, st->pid, &st->frames[k], e - k + 1);
			k = e + 1;
		}
		if (!st->nthreads) {
			if (st->on_cpu)
				add_sample(&b, locs, nl, st->on_cpu, period, NULL, "on-cpu");
			if (st->count > st->on_cpu)
				add_sample(&b, locs, nl, st->count - st->on_cpu, period, NULL,
					   p->on_cpu ? "off-cpu" : NULL);
			continue;
		}
		for (size_t k = 0; k < st->nthreads; k++) {
			const struct sd_pthread *t = &st->threads[k];
			if (t->on_cpu)
				add_sample(&b, locs, nl, t->on_cpu, period, t, "on-cpu");
			if (t->count > t->on_cpu)
				add_sample(&b, locs, nl, t->count - t->on_cpu, period, t, "off-cpu");
		}
	}
	free(locs);

	struct strbuf c;
	strbuf_init(&c);
	strbuf_adds(&c, "stackdump profile of");
	for (size_t i = 0; i < p->nprocs; i++)
		strbuf_addf(&c, " %d (%s)", (int)p->procs[i].pid, p->procs[i].comm);
	b.prof.n_comment = 1;
	b.prof.comment = sd_xmalloc(sizeof(*b.prof.comment));
	b.prof.comment[0] = str_id(&b, c.buf);
	strbuf_release(&c);

	b.prof.n_sample = b.nsample;
	b.prof.sample = b.samplev;
	b.prof.n_mapping = b.nmap;
	b.prof.mapping = b.mapv;
	b.prof.n_location = b.nloc;
	b.prof.location = b.locv;
	b.prof.n_function = b.nfunc;
	b.prof.function = b.funcv;
	b.prof.n_string_table = b.nstr;
	b.prof.string_table = b.strtab;

	size_t raw = perftools__profiles__profile__get_packed_size(&b.prof);
	uint8_t *buf = sd_xmalloc(raw ? raw : 1);
	perftools__profiles__profile__pack(&b.prof, buf);
	int r = gzip_buf(buf, raw, out, len, err);
	free(buf);
	pb_release(&b, p);
	return r;
}
