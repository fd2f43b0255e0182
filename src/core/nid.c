/* SPDX-License-Identifier: MIT */
/* NID, network and LND-name conversions (lnet-wire.md §2.2): parse and print the string forms and convert
 * between the large NID and the 64-bit nid4. Pure: no allocation, no logging, no global state.
 * The wire forms of a NID (nid4 LE in the header, nid16 BE) live in hdr_wire.c, not here. */
#include "ulnet/nid.h"
#include "nid_equal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* How an LND writes the address part of its NIDs. */
enum nid_addr_kind {
	NID_ADDR_IP,  /* dotted IPv4 (size 0) or IPv6 (size 12) */
	NID_ADDR_NUM, /* decimal u32 (size 0) */
	NID_ADDR_LO,  /* always "0" (size 0); the loopback net takes no net number */
};

struct lnd_info {
	unsigned type;
	const char *name;
	enum nid_addr_kind kind;
};

/* IP versus numeric addresses: tcp, o2ib, gip (IP) and gni, ptlf, kfi (numeric) match Lustre's string
 * table; tofu, efa and bxi3f are numeric by project decision, not yet checked against a kernel peer. */
static const struct lnd_info lnd_table[] = {
	{ ULNET_LND_SOCK, "tcp", NID_ADDR_IP },
	{ ULNET_LND_O2IB, "o2ib", NID_ADDR_IP },
	{ ULNET_LND_LO, "lo", NID_ADDR_LO },
	{ ULNET_LND_GNI, "gni", NID_ADDR_NUM },
	{ ULNET_LND_GNIIP, "gip", NID_ADDR_IP },
	{ ULNET_LND_PTL4, "ptlf", NID_ADDR_NUM },
	{ ULNET_LND_KFI, "kfi", NID_ADDR_NUM },
	{ ULNET_LND_TOFU, "tofu", NID_ADDR_NUM },
	{ ULNET_LND_EFA, "efa", NID_ADDR_NUM },
	{ ULNET_LND_BXI3, "bxi3f", NID_ADDR_NUM },
};

#define LND_TABLE_LEN (sizeof(lnd_table) / sizeof(lnd_table[0]))
#define NET_ANY UINT32_C(0xffffffff) /* net part of ULNET_NID_ANY4 */

static const struct lnd_info *lnd_by_type(unsigned type)
{
	for (size_t i = 0; i < LND_TABLE_LEN; i++)
		if (lnd_table[i].type == type)
			return &lnd_table[i];
	return NULL;
}

static const struct lnd_info *lnd_by_name(const char *name, size_t len)
{
	for (size_t i = 0; i < LND_TABLE_LEN; i++)
		if (strlen(lnd_table[i].name) == len && memcmp(lnd_table[i].name, name, len) == 0)
			return &lnd_table[i];
	return NULL;
}

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parse exactly @len bytes of decimal digits (no sign, no space) into a value <= @max.
 * 0, -EINVAL (not all digits or empty) or -ERANGE (above @max). */
static int parse_decimal(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return -ERANGE; /* checked per digit, so v never overflows */
	}
	*out = (uint32_t)v;
	return 0;
}

/* Dotted quad, four decimal parts of 1-3 digits each, 0..255. Leading zeros read as decimal, as Lustre
 * does ("010.0.0.1" is 10.0.0.1); inet_pton() would refuse them and inet_aton() would read octal. */
static int parse_ipv4(const char *s, size_t len, uint32_t *out)
{
	uint32_t addr = 0;
	size_t pos = 0;

	for (int part = 0; part < 4; part++) {
		size_t start = pos;
		uint32_t v;

		while (pos < len && s[pos] != '.')
			pos++;
		if (pos - start > 3 || parse_decimal(s + start, pos - start, 255, &v) != 0)
			return -EINVAL;
		addr = (addr << 8) | v;
		if (part < 3) {
			if (pos == len)
				return -EINVAL; /* fewer than four parts */
			pos++;                  /* skip the '.' */
		}
	}
	if (pos != len)
		return -EINVAL; /* a fifth part */
	*out = addr;
	return 0;
}

/* IPv6 text (no brackets, no zone) into four host-order words, most significant first. */
static int parse_ipv6(const char *s, size_t len, uint32_t out[4])
{
	char tmp[INET6_ADDRSTRLEN];
	uint8_t b[16];

	if (len == 0 || len >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, b) != 1)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		out[i] = ((uint32_t)b[4 * i] << 24) | ((uint32_t)b[4 * i + 1] << 16) |
			 ((uint32_t)b[4 * i + 2] << 8) | (uint32_t)b[4 * i + 3];
	return 0;
}

/* Address part of an IP-addressed LND. "[v6]" and bare "v6" are both accepted; a ':' marks IPv6. */
static int parse_ip_addr(const char *s, size_t len, struct ulnet_nid *nid, const char **why)
{
	if (len > 0 && s[0] == '[') {
		if (len < 2 || s[len - 1] != ']')
			return fail(why, "unbalanced '[' in address");
		if (parse_ipv6(s + 1, len - 2, nid->addr) != 0)
			return fail(why, "bad IPv6 address");
		nid->size = 12;
		return 0;
	}
	if (memchr(s, ':', len) != NULL) {
		if (parse_ipv6(s, len, nid->addr) != 0)
			return fail(why, "bad IPv6 address");
		nid->size = 12;
		return 0;
	}
	if (parse_ipv4(s, len, &nid->addr[0]) != 0)
		return fail(why, "bad IPv4 address");
	nid->size = 0;
	return 0;
}

static int parse_net(const char *s, size_t len, uint32_t *net, const struct lnd_info **lndp, const char **why)
{
	const struct lnd_info *lnd = NULL;
	size_t name_len = 0;
	uint32_t num = 0;
	int rc;

	if (len == 0)
		return fail(why, "empty network name");
	/* Names may hold digits ("o2ib", "bxi3f"), so match known names as prefixes; the rest is the number.
	 * Take the longest match in case a future name extends another. */
	for (size_t i = 0; i < LND_TABLE_LEN; i++) {
		size_t n = strlen(lnd_table[i].name);

		if (n <= len && n > name_len && memcmp(s, lnd_table[i].name, n) == 0 &&
		    (n == len || is_digit(s[n]))) {
			lnd = &lnd_table[i];
			name_len = n;
		}
	}
	if (lnd == NULL)
		return fail(why, "unknown network type");
	if (name_len < len) {
		/* Lustre refuses any number on the loopback net, "lo0" included. */
		if (lnd->kind == NID_ADDR_LO)
			return fail(why, "lo takes no net number");
		rc = parse_decimal(s + name_len, len - name_len, 0xffff, &num);
		if (rc == -ERANGE)
			return fail(why, "net number out of range");
		if (rc != 0)
			return fail(why, "bad net number");
	}
	*net = ((uint32_t)lnd->type << 16) | num;
	if (lndp)
		*lndp = lnd;
	return 0;
}

struct ulnet_nid ulnet_nid_any(void)
{
	struct ulnet_nid nid = {
		.size = 0xff,
		.type = ULNET_LND_ANY,
		.num = 0xffff,
		.addr = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX },
	};
	return nid;
}

/* The type alone decides: 0xff is never a real LND, and a decoder may hand over a wildcard whose other
 * fields are not all ones. */
bool ulnet_nid_is_any(const struct ulnet_nid *nid)
{
	return nid->type == ULNET_LND_ANY;
}

/* Number of addr words @nid's size covers (1 for IPv4/numeric, 4 for IPv6), at most 4. */
static unsigned addr_words(const struct ulnet_nid *nid)
{
	unsigned words = ((unsigned)nid->size + 4 + 3) / 4;

	return words > 4 ? 4 : words;
}

bool ulnet_nid_equal(const struct ulnet_nid *a, const struct ulnet_nid *b)
{
	return ulnet__nid_equal(a, b);
}

bool ulnet_nid_is_nid4(const struct ulnet_nid *nid)
{
	return ulnet_nid_is_any(nid) || nid->size == 0;
}

uint64_t ulnet_nid_to_nid4(const struct ulnet_nid *nid)
{
	if (ulnet_nid_is_any(nid) || !ulnet_nid_is_nid4(nid))
		return ULNET_NID_ANY4;
	return ((uint64_t)ulnet_nid_net(nid) << 32) | nid->addr[0];
}

/* nid4 holds a 16-bit LND type; only the low byte survives, which covers every assigned type. */
void ulnet_nid_from_nid4(uint64_t nid4, struct ulnet_nid *out)
{
	if (nid4 == ULNET_NID_ANY4) {
		*out = ulnet_nid_any();
		return;
	}
	memset(out, 0, sizeof(*out));
	out->size = 0;
	out->type = (uint8_t)(nid4 >> 48);
	out->num = (uint16_t)(nid4 >> 32);
	out->addr[0] = (uint32_t)nid4;
}

/* ANY maps to the all-ones net, the net part of ULNET_NID_ANY4. */
uint32_t ulnet_nid_net(const struct ulnet_nid *nid)
{
	if (ulnet_nid_is_any(nid))
		return NET_ANY;
	return ((uint32_t)nid->type << 16) | nid->num;
}

int ulnet_nid_parse(const char *str, struct ulnet_nid *out, const char **why)
{
	struct ulnet_nid nid;
	const struct lnd_info *lnd;
	const char *at;
	uint32_t net;
	size_t addr_len;
	int rc;

	if (str == NULL || out == NULL)
		return fail(why, "null argument");
	if (strcmp(str, "*") == 0 || strcmp(str, "<?>") == 0) {
		*out = ulnet_nid_any();
		return 0;
	}
	/* No address form contains '@', so the last one separates; any earlier one fails the address parse. */
	at = strrchr(str, '@');
	if (at == NULL)
		return fail(why, "missing '@network'");
	addr_len = (size_t)(at - str);
	if (addr_len == 0)
		return fail(why, "missing address");
	rc = parse_net(at + 1, strlen(at + 1), &net, &lnd, why);
	if (rc != 0)
		return rc;

	memset(&nid, 0, sizeof(nid));
	nid.type = (uint8_t)(net >> 16);
	nid.num = (uint16_t)net;
	switch (lnd->kind) {
	case NID_ADDR_IP:
		rc = parse_ip_addr(str, addr_len, &nid, why);
		if (rc != 0)
			return rc;
		break;
	case NID_ADDR_NUM:
		rc = parse_decimal(str, addr_len, UINT32_MAX, &nid.addr[0]);
		if (rc == -ERANGE)
			return fail(why, "address out of range");
		if (rc != 0)
			return fail(why, "bad numeric address");
		break;
	case NID_ADDR_LO:
		if (parse_decimal(str, addr_len, UINT32_MAX, &nid.addr[0]) != 0 || nid.addr[0] != 0)
			return fail(why, "lo address must be 0");
		break;
	}
	*out = nid;
	return 0;
}

/* Formatters build into a scratch array, then copy_out() truncates to the caller's @len (even 0).
 * A plain copy rather than snprintf(buf, len, "%s") keeps -Wformat-truncation quiet at every level. */
#define SCRATCH_LEN 96

static char *copy_out(char *buf, size_t len, const char *s)
{
	size_t n;

	if (len == 0)
		return buf;
	n = strlen(s);
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

static void format_net(uint32_t net, char *s, size_t len)
{
	const struct lnd_info *lnd = lnd_by_type(net >> 16);
	unsigned num = net & 0xffff;

	if (net == NET_ANY)
		snprintf(s, len, "<?>");
	else if (lnd == NULL)
		snprintf(s, len, "<%u:%u>", (unsigned)(net >> 16), num);
	else if (num == 0)
		snprintf(s, len, "%s", lnd->name);
	else
		snprintf(s, len, "%s%u", lnd->name, num);
}

char *ulnet_net_format(uint32_t net, char *buf, size_t len)
{
	char tmp[SCRATCH_LEN];

	format_net(net, tmp, sizeof(tmp));
	return copy_out(buf, len, tmp);
}

/* Address text for @nid into @s. Returns false when the size does not suit the LND's address kind. */
static bool format_addr(const struct ulnet_nid *nid, const struct lnd_info *lnd, char *s, size_t len)
{
	uint32_t a = nid->addr[0];

	if (lnd == NULL)
		return false;
	if (lnd->kind == NID_ADDR_IP && nid->size == 12) {
		uint8_t b[16];

		for (int i = 0; i < 4; i++) {
			b[4 * i] = (uint8_t)(nid->addr[i] >> 24);
			b[4 * i + 1] = (uint8_t)(nid->addr[i] >> 16);
			b[4 * i + 2] = (uint8_t)(nid->addr[i] >> 8);
			b[4 * i + 3] = (uint8_t)nid->addr[i];
		}
		return inet_ntop(AF_INET6, b, s, (socklen_t)len) != NULL;
	}
	if (nid->size != 0)
		return false;
	if (lnd->kind == NID_ADDR_IP)
		snprintf(s, len, "%u.%u.%u.%u", (unsigned)(a >> 24), (unsigned)((a >> 16) & 0xff),
			 (unsigned)((a >> 8) & 0xff), (unsigned)(a & 0xff));
	else
		snprintf(s, len, "%u", (unsigned)a);
	return true;
}

/* IPv6 prints bare ("::1@tcp"), like inet_ntop(); the parser takes it with or without brackets.
 * A NID whose type or size we cannot print normally shows its covered addr words in hex. */
char *ulnet_nid_format(const struct ulnet_nid *nid, char *buf, size_t len)
{
	char addr[SCRATCH_LEN];
	char net[SCRATCH_LEN];
	char tmp[2 * SCRATCH_LEN + 2];

	if (ulnet_nid_is_any(nid))
		return copy_out(buf, len, "<?>");
	format_net(ulnet_nid_net(nid), net, sizeof(net));
	if (!format_addr(nid, lnd_by_type(nid->type), addr, sizeof(addr))) {
		size_t off = 0;

		for (unsigned i = 0; i < addr_words(nid); i++)
			off += (size_t)snprintf(addr + off, sizeof(addr) - off, "%s%x", i ? ":" : "",
						(unsigned)nid->addr[i]);
	}
	snprintf(tmp, sizeof(tmp), "%s@%s", addr, net);
	return copy_out(buf, len, tmp);
}

int ulnet_net_parse(const char *str, uint32_t *net, const char **why)
{
	uint32_t v;
	int rc;

	if (str == NULL || net == NULL)
		return fail(why, "null argument");
	rc = parse_net(str, strlen(str), &v, NULL, why);
	if (rc == 0)
		*net = v;
	return rc;
}

const char *ulnet_lnd_type_name(unsigned type)
{
	const struct lnd_info *lnd = lnd_by_type(type);

	return lnd ? lnd->name : NULL;
}

int ulnet_lnd_type_parse(const char *name, unsigned *type)
{
	const struct lnd_info *lnd;

	if (name == NULL || type == NULL)
		return -EINVAL;
	lnd = lnd_by_name(name, strlen(name));
	if (lnd == NULL)
		return -EINVAL;
	*type = lnd->type;
	return 0;
}
