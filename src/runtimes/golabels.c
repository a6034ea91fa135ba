// SPDX-License-Identifier: MIT
// pprof labels (golabels.h). g.labels points to a runtime/pprof.labelMap:
// in Go 1.19 a map[string]string (a pointer to the runtime's hash<string,
// string>: buckets of tophash, keys, values and overflow, a slot in use
// when its tophash is at least minTopHash), from Go 1.21 a struct holding a slice of label
// {key, value}. Both read by the DWARF's names, bounded.
#include "golabels.h"

#include <stdlib.h>
#include <string.h>

#include "dwtype.h"
#include "rtmem.h"

#define GL_MAX_LABELS 64      /* labels of one goroutine read at most */
#define GL_MAX_LABEL_LEN 256  /* bytes of a key or a value */
#define GL_MAX_BUCKETS_LOG 4  /* a labels map of more than 16 buckets is not read */
#define GL_MAX_OVERFLOW 8
#define GL_BUCKET_MAX 4096    /* bytes of a bucket */

enum { LM_NONE, LM_MAP, LM_SLICE };

struct golabels_layout {
	struct dwt *d;
	int kind;
	uint64_t g_labels;
	struct dwt_type str_t;
	/* LM_SLICE */
	uint64_t list_off, key_off, value_off;
	struct dwt_type list_t;
	/* LM_MAP */
	uint64_t h_count, h_B, h_buckets, h_old;
	uint64_t b_size, b_tophash, b_keys, b_elems, b_overflow, key_stride, elem_stride, nslots;
	int64_t min_tophash;
};

void golabels_layout_free(struct golabels_layout *l)
{
	free(l);
}

static int learn_slice(struct golabels_layout *l, struct dwt *d, const struct dwt_type *lm)
{
	struct dwt_type elem, t;
	uint64_t n;
	if (dwt_member(d, lm, "LabelSet.list", &l->list_off, &l->list_t, NULL) < 0 &&
	    dwt_member(d, lm, "list", &l->list_off, &l->list_t, NULL) < 0)
		return -1;
	if (dwt_member(d, &l->list_t, "array", &n, &t, NULL) < 0 ||
	    dwt_pointee(d, &t, &elem, NULL) < 0 ||
	    dwt_member(d, &elem, "key", &l->key_off, &l->str_t, NULL) < 0 ||
	    dwt_member(d, &elem, "value", &l->value_off, NULL, NULL) < 0)
		return -1;
	l->kind = LM_SLICE;
	return 0;
}

static int learn_map(struct golabels_layout *l, struct dwt *d, const struct dwt_type *lm)
{
	struct dwt_type h, bp, b, arr, el;
	uint64_t cnt;
	if (dwt_pointee(d, lm, &h, NULL) < 0 || dwt_member(d, &h, "count", &l->h_count, NULL, NULL) ||
	    dwt_member(d, &h, "B", &l->h_B, NULL, NULL) ||
	    dwt_member(d, &h, "buckets", &l->h_buckets, &bp, NULL) ||
	    dwt_member(d, &h, "oldbuckets", &l->h_old, NULL, NULL) ||
	    dwt_pointee(d, &bp, &b, NULL) < 0 || !b.size || b.size > GL_BUCKET_MAX ||
	    dwt_member(d, &b, "tophash", &l->b_tophash, &arr, NULL) ||
	    dwt_array(d, &arr, &el, &l->nslots, NULL) || el.size != 1 ||
	    dwt_member(d, &b, "keys", &l->b_keys, &arr, NULL) ||
	    dwt_array(d, &arr, &l->str_t, &cnt, NULL) || cnt != l->nslots ||
	    (dwt_member(d, &b, "values", &l->b_elems, &arr, NULL) &&
	     dwt_member(d, &b, "elems", &l->b_elems, &arr, NULL)) ||
	    dwt_array(d, &arr, &el, &cnt, NULL) || cnt != l->nslots ||
	    dwt_member(d, &b, "overflow", &l->b_overflow, NULL, NULL) ||
	    dwt_const(d, "runtime.minTopHash", &l->min_tophash, NULL) < 0)
		return -1;
	l->key_stride = l->str_t.size;
	l->elem_stride = el.size;
	l->b_size = b.size;
	/* Every slot read lies inside the bucket copy. */
	if (!l->nslots || l->nslots > 64 || l->b_tophash + l->nslots > b.size ||
	    l->b_keys + l->nslots * l->key_stride > b.size ||
	    l->b_elems + l->nslots * l->elem_stride > b.size || l->b_overflow + 8 > b.size)
		return -1;
	l->kind = LM_MAP;
	return 0;
}

struct golabels_layout *golabels_learn(struct dwt *d, const struct dwt_type *g)
{
	struct golabels_layout *l = sd_xcalloc(1, sizeof(*l));
	l->d = d;
	struct dwt_type lm;
	if (dwt_member(d, g, "labels", &l->g_labels, NULL, NULL) < 0)
		return l;
	/* Without runtime/pprof in the program no goroutine has labels. */
	if (dwt_type(d, "runtime/pprof.labelMap", &lm, NULL) < 0)
		return l;
	if (lm.kind == DWT_STRUCT)
		learn_slice(l, d, &lm);
	else if (lm.kind == DWT_POINTER)
		learn_map(l, d, &lm);
	return l;
}

static int add(struct rtmem *m, struct golabels_layout *l, struct sd_snapshot *s,
	       struct sd_goroutine *g, uint64_t key, uint64_t value)
{
	char *k = NULL, *v = NULL;
	if (g->nlabels >= GL_MAX_LABELS)
		return 0;
	if (rtmem_string(m, l->d, key, &l->str_t, GL_MAX_LABEL_LEN, &k, NULL, NULL) < 0 ||
	    rtmem_string(m, l->d, value, &l->str_t, GL_MAX_LABEL_LEN, &v, NULL, NULL) < 0) {
		free(k);
		free(v);
		return -1;
	}
	g->labels = sd_xrealloc(g->labels, (g->nlabels + 1) * 2 * sizeof(*g->labels));
	g->labels[2 * g->nlabels] = strpool_intern(s->pool, k);
	g->labels[2 * g->nlabels + 1] = strpool_intern(s->pool, v);
	g->nlabels++;
	free(k);
	free(v);
	return 0;
}

static int read_map(struct golabels_layout *l, struct rtmem *m, struct sd_snapshot *s,
		    uint64_t h, struct sd_goroutine *g)
{
	uint64_t B = 0, buckets = 0, old = 0;
	if (rtmem_uint(m, h + l->h_B, 1, &B, "a labels map", NULL) < 0 ||
	    rtmem_uint(m, h + l->h_buckets, 8, &buckets, "a labels map", NULL) < 0 ||
	    rtmem_uint(m, h + l->h_old, 8, &old, "a labels map", NULL) < 0)
		return -1;
	/* Labels maps are made whole and never grow: one growing, or a
	 * large one, is not what it should be. */
	if (old || B > GL_MAX_BUCKETS_LOG)
		return -1;
	uint8_t bk[GL_BUCKET_MAX];
	for (uint64_t i = 0; buckets && i < (1ull << B); i++) {
		uint64_t at = buckets + i * l->b_size;
		for (int o = 0; at && o <= GL_MAX_OVERFLOW; o++) {
			if (rtmem_read(m, at, bk, l->b_size, "a labels bucket", NULL) < 0)
				return -1;
			for (uint64_t k = 0; k < l->nslots; k++)
				if ((int64_t)bk[l->b_tophash + k] >= l->min_tophash &&
				    add(m, l, s, g, at + l->b_keys + k * l->key_stride,
					at + l->b_elems + k * l->elem_stride) < 0)
					return -1;
			memcpy(&at, bk + l->b_overflow, 8);
		}
	}
	return 0;
}

static int cmp_label(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	return strcmp(x[0], y[0]);
}

int golabels_read(struct golabels_layout *l, struct rtmem *m, struct sd_snapshot *s,
		  const uint8_t *gb, size_t glen, struct sd_goroutine *g)
{
	if (!l->g_labels || l->g_labels + 8 > glen)
		return -1;
	uint64_t p;
	memcpy(&p, gb + l->g_labels, 8);
	if (!p) {
		g->labels_read = 1; /* none set */
		return 0;
	}
	int rc = -1;
	if (l->kind == LM_SLICE) {
		uint64_t arr, len;
		struct dwt_type elem;
		if (rtmem_slice(m, l->d, p + l->list_off, &l->list_t, GL_MAX_LABELS, &arr, &len, &elem,
				NULL) == 0) {
			rc = 0;
			for (uint64_t i = 0; i < len && rc == 0; i++)
				rc = add(m, l, s, g, arr + i * elem.size + l->key_off,
					 arr + i * elem.size + l->value_off);
		}
	} else if (l->kind == LM_MAP) {
		uint64_t h;
		if (rtmem_uint(m, p, 8, &h, "a labels map", NULL) == 0)
			rc = h ? read_map(l, m, s, h, g) : 0;
	}
	if (rc < 0) {
		free(g->labels);
		g->labels = NULL;
		g->nlabels = 0;
		return -1;
	}
	/* As Go prints them: by key. */
	if (g->nlabels > 1)
		sd_sort(g->labels, g->nlabels, 2 * sizeof(*g->labels), cmp_label);
	g->labels_read = 1;
	return 0;
}
