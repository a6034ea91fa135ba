// SPDX-License-Identifier: MIT
// Interned strings: each distinct string is stored once and lives until the
// pool is freed, so frames can share function, file and module names.
#ifndef SD_STRPOOL_H
#define SD_STRPOOL_H

#include <stddef.h>

struct strpool;

struct strpool *strpool_new(void);
/* Frees every string the pool returned. NULL does nothing. */
void strpool_free(struct strpool *sp);
/* The pool's copy of S (NULL gives NULL). Lives until strpool_free(). */
const char *strpool_intern(struct strpool *sp, const char *s);
const char *strpool_intern_n(struct strpool *sp, const char *s, size_t n);

#endif
