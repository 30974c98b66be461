/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo/topo_impl.h: what topo.c and topo_json.c share, private to topo/ (the
 * public interface is topo.h).
 */
#ifndef LOOM_TOPO_TOPO_IMPL_H
#define LOOM_TOPO_TOPO_IMPL_H

#include <stdint.h>

#include "topo/topo.h"

/*
 * Allocates a topology of nhosts hosts and nracks racks with every array
 * sized, every capacity 0 and every host in rack 0: the caller fills them in
 * and owns the result (topo_free()). NULL with errno EINVAL when nhosts is 0
 * or above TOPO_MAX_HOSTS or nracks above nhosts, ENOMEM when out of memory.
 */
struct topo *topo_alloc(uint32_t nhosts, uint32_t nracks);

#endif
