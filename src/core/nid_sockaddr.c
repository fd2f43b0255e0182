/* SPDX-License-Identifier: MIT */
/* The one conversion from an IP NID to a socket address (lnet-wire.md §2.2: addr[0] holds an IPv4
 * address as a host number; IPv6 is addr[0..3], most significant word first). Pure. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include "internal.h"

int ulnet__nid_sockaddr(const struct ulnet_nid *nid, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (nid->type == ULNET_LND_LO || nid->type == ULNET_LND_ANY || (nid->size != 0 && nid->size != 12))
		return -EAFNOSUPPORT;
	if (nid->size == 0) {
		struct sockaddr_in *in = (struct sockaddr_in *)(void *)ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(nid->addr[0]);
		in->sin_port = htons(port);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)ss;

		in6->sin6_family = AF_INET6;
		for (int i = 0; i < 4; i++) {
			uint32_t w = htonl(nid->addr[i]);

			memcpy(&in6->sin6_addr.s6_addr[4 * i], &w, 4);
		}
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
	}
	return 0;
}
