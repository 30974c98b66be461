/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/client: internal helper shared by libloom and its LD_PRELOAD
 * shim (not installed, not exported from libloom.so).
 */
#ifndef LOOM_CONTROLPLANE_CLIENT_SOCKADDR_H
#define LOOM_CONTROLPLANE_CLIENT_SOCKADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * Copies one side of a flow's tuple from a socket address: family 4 or 6
 * (an IPv4-mapped IPv6 address gives 4), the address in network order in
 * addr (IPv4 in the first 4 bytes, the rest zero), the port in host order.
 * Returns false for other families.
 */
__attribute__((visibility("hidden"))) bool loom_client_sockaddr_side(const struct sockaddr *sa,
								     uint8_t *family,
								     uint8_t addr[16],
								     uint16_t *port);

#endif
