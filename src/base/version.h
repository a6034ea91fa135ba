// SPDX-License-Identifier: MIT
// The version of stackdump.
#ifndef SD_VERSION_H
#define SD_VERSION_H
#define STACKDUMP_VERSION "0.1.0"
#endif
