/* SPDX-License-Identifier: BSD-3-Clause */
/* The 5-tuple's text form and hash; see tuple.h. */
#include "proto/tuple.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

const char *wire_tuple_str(const struct wire_tuple *t, char *buf, size_t size)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int af = t->family == 4 ? AF_INET : AF_INET6;
	const char *pname = t->protocol == 6 ? "tcp" : t->protocol == 17 ? "udp" : "ip";

	if (!inet_ntop(af, t->src, s, sizeof(s)))
		snprintf(s, sizeof(s), "?");
	if (!inet_ntop(af, t->dst, d, sizeof(d)))
		snprintf(d, sizeof(d), "?");
	if (af == AF_INET6)
		snprintf(buf, size, "%s [%s]:%u->[%s]:%u", pname, s, t->src_port, d, t->dst_port);
	else
		snprintf(buf, size, "%s %s:%u->%s:%u", pname, s, t->src_port, d, t->dst_port);
	return buf;
}

uint64_t wire_tuple_hash(const struct wire_tuple *t)
{
	/*
	 * FNV-1a over the fields, then a final avalanche: a private copy of
	 * loom_hash_u64() (common/hash.h), since proto/ includes nothing of ours.
	 */
	uint64_t h = 1469598103934665603ULL;
	const uint8_t *parts[2] = {t->src, t->dst};

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 16; i++)
			h = (h ^ parts[k][i]) * 1099511628211ULL;
	h ^= (uint64_t)t->src_port << 32 | (uint64_t)t->dst_port << 16 |
	     (uint64_t)t->protocol << 8 | t->family;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}
