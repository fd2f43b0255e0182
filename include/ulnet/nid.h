/* SPDX-License-Identifier: MIT */
/* NIDs, network numbers and process ids (lnet-wire.md §2.2).
 * A struct ulnet_nid holds every NID form in host order; only the wire codecs know byte orders. */
#ifndef ULNET_NID_H
#define ULNET_NID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LND type numbers; never reuse (nidstr.h). */
enum ulnet_lnd_type {
	ULNET_LND_SOCK = 2,   /* "tcp" */
	ULNET_LND_O2IB = 5,   /* "o2ib" */
	ULNET_LND_LO = 9,     /* "lo" */
	ULNET_LND_GNI = 13,   /* "gni" */
	ULNET_LND_GNIIP = 14, /* "gip" */
	ULNET_LND_PTL4 = 15,  /* "ptlf" */
	ULNET_LND_KFI = 16,   /* "kfi" */
	ULNET_LND_TOFU = 17,  /* "tofu" */
	ULNET_LND_EFA = 18,   /* "efa" */
	ULNET_LND_BXI3 = 19,  /* "bxi3f" */
	ULNET_LND_ANY = 0xff, /* nid_type of a wildcard NID */
};

#define ULNET_NID_ANY4 UINT64_C(0xffffffffffffffff) /* LNET_NID_ANY */
#define ULNET_PID_ANY UINT32_C(0xffffffff)
#define ULNET_PID_LUSTRE UINT32_C(12345)
#define ULNET_PID_USERFLAG UINT32_C(0x80000000)
#define ULNET_NID_LO_0 UINT64_C(0x0009000000000000)
#define ULNET_NID_STRLEN 64 /* enough for any NID string, with its NUL */

/* Large NID in host order. size = address bytes - 4 (0: IPv4 or numeric, 12: IPv6).
 * addr[0] holds an IPv4 address as a host number (192.168.1.1 = 0xC0A80101); IPv6 uses addr[0..3]
 * most significant word first. type == ULNET_LND_ANY with everything else all-ones is the ANY NID. */
struct ulnet_nid {
	uint8_t size;
	uint8_t type;
	uint16_t num;
	uint32_t addr[4];
};

struct ulnet_process_id {
	struct ulnet_nid nid;
	uint32_t pid;
};

/* The ANY NID (matches every NID in an ME). */
ULNET_EXPORT struct ulnet_nid ulnet_nid_any(void);
ULNET_EXPORT bool ulnet_nid_is_any(const struct ulnet_nid *nid);
ULNET_EXPORT bool ulnet_nid_equal(const struct ulnet_nid *a, const struct ulnet_nid *b);
/* true when @nid fits the classic 64-bit form (size 0 and addr[0] only, or ANY). */
ULNET_EXPORT bool ulnet_nid_is_nid4(const struct ulnet_nid *nid);
/* nid4 <-> large NID. ulnet_nid_to_nid4 returns ULNET_NID_ANY4 for ANY and for NIDs that do not fit. */
ULNET_EXPORT uint64_t ulnet_nid_to_nid4(const struct ulnet_nid *nid);
ULNET_EXPORT void ulnet_nid_from_nid4(uint64_t nid4, struct ulnet_nid *out);
/* 32-bit net = (type << 16) | num. */
ULNET_EXPORT uint32_t ulnet_nid_net(const struct ulnet_nid *nid);

/* Parse "<addr>@<lnd>[num]" ("192.168.1.1@o2ib3", "[::1]@tcp" or "::1@tcp", "0@lo", "12@gni", "<?>"
 * or "*" for ANY). 0, or -EINVAL with a reason in @why (if non-NULL, static string). */
ULNET_EXPORT int ulnet_nid_parse(const char *str, struct ulnet_nid *out, const char **why);
/* Format into @buf (>= ULNET_NID_STRLEN); returns @buf. ANY prints as "<?>". */
ULNET_EXPORT char *ulnet_nid_format(const struct ulnet_nid *nid, char *buf, size_t len);
/* Parse a network name "tcp", "o2ib3", "lo": *net = (type << 16) | num. 0 or -EINVAL. */
ULNET_EXPORT int ulnet_net_parse(const char *str, uint32_t *net, const char **why);
ULNET_EXPORT char *ulnet_net_format(uint32_t net, char *buf, size_t len);
/* LND type <-> name ("tcp" <-> 2). Unknown: NULL / -EINVAL. */
ULNET_EXPORT const char *ulnet_lnd_type_name(unsigned type);
ULNET_EXPORT int ulnet_lnd_type_parse(const char *name, unsigned *type);

#ifdef __cplusplus
}
#endif
#endif
