// SPDX-License-Identifier: MIT
// The strict reader of saved JSON that the snapshot loader and its
// goroutine member share: every member checked for its type and range,
// the place of anything wrong named ("threads[2].frames[0].addr") and only
// the first error kept; strings interned in the snapshot's pool.
#ifndef SD_JSONRD_H
#define SD_JSONRD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"
#include "util.h"

struct sd_jrd {
	struct sd_snapshot *s; /* strings go to its pool */
	const char *name;      /* with ERR: the file, before the place */
	struct sd_error *err;  /* where the first error goes ("NAME: PLACE: what"), or NULL */
	char path[256];        /* the place being read */
	size_t plen;
	int failed;
	char msg[600]; /* the first error, "PLACE: what" */
};

/* Append to the place (printf-like); returns the length to pop back to. */
size_t jrd_push(struct sd_jrd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jrd_pop(struct sd_jrd *r, size_t old);
/* The first error, at the place and member KEY (NULL: the place itself;
 * a KEY starting with '[' follows without a dot). Returns -1. */
int jrd_fail(struct sd_jrd *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "an object", "a string"... */
const char *jrd_type_name(const json_t *j);

/* Member KEY of O. The getters return 1 read, 0 absent or null (a
 * failure when REQUIRED), -1 wrong (r->failed set). */
int jrd_int(struct sd_jrd *r, const json_t *o, const char *key, int required, long long lo,
	    long long hi, long long *out);
int jrd_u64(struct sd_jrd *r, const json_t *o, const char *key, uint64_t *out);
int jrd_real(struct sd_jrd *r, const json_t *o, const char *key, double *out);
int jrd_bool(struct sd_jrd *r, const json_t *o, const char *key, int *out);
int jrd_str(struct sd_jrd *r, const json_t *o, const char *key, int required, const char **out);
/* A one-letter string (a thread state). */
int jrd_char(struct sd_jrd *r, const json_t *o, const char *key, char *out);
/* A "0x..." string. */
int jrd_hex(struct sd_jrd *r, const json_t *o, const char *key, int required, uint64_t *out);
/* V itself as a "0x..." string (KEY names it in an error). */
int jrd_hex_value(struct sd_jrd *r, const json_t *v, const char *key, uint64_t *out);
/* "0x..." parsed: 0, or -1 when it is not one or does not fit 64 bits. */
int jrd_parse_hex(const char *p, uint64_t *out);
/* Member KEY as an array or an object: NULL when absent or null (then a
 * failure when REQUIRED), or wrong (r->failed set). */
json_t *jrd_array(struct sd_jrd *r, const json_t *o, const char *key, int required);
json_t *jrd_object(struct sd_jrd *r, const json_t *o, const char *key);
/* A frame object, as a dump writes it, into F (zeroed first). */
int jrd_frame(struct sd_jrd *r, const json_t *o, struct sd_frame *f);

#endif
