// SPDX-License-Identifier: MIT
// Names as people read them: C++ and Rust (legacy and v0) symbols
// demangled with libiberty, for the symbolizer and the DWARF index alike.
#ifndef SD_DEMANGLE_H
#define SD_DEMANGLE_H

#include <stddef.h>

/* Demangle NAME; returns a heap string, or NULL when NAME is not mangled
 * (or cannot be demangled). */
char *demangle_symbol(const char *name);

/* The name of the future whose state machine type is named Q[0..N)
 * (qualified, demangled): an async fn's environment
 * `path::f::{async_fn_env#0}` is `path::f`, an async block's
 * `path::{async_block_env#1}` is `path::{async_block#1}`, anything else
 * its own name. Written to BUF (SIZE bytes, truncated); returns BUF. */
char *rust_future_name(const char *q, size_t n, char *buf, size_t size);

#endif
