/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/datapath: where the programs find Loom's bundled data (traces, DAG
 * shapes, the shipped model) at run time.
 */
#ifndef LOOM_COMMON_DATAPATH_H
#define LOOM_COMMON_DATAPATH_H

#include <stddef.h>

/*
 * Writes the path of data file rel into buf and returns buf: the first
 * readable of $LOOM_DATA/rel, ./data/rel, $LOOM_SRCDIR/data/rel, the
 * installed data directory (share/loom/rel) and the source tree Loom was
 * built from; when none is, the first of them (so the caller's error names
 * a path).
 */
const char *loom_data_path(const char *rel, char *buf, size_t size);

#endif
