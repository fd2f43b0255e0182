/* SPDX-License-Identifier: MIT */
/* What a node knows of its peers' large payload capability (docs/large.md): one table, filled by ping
 * replies (ulnet_ping's and the core's own probe), holding both answers, and the probes in flight. */
#ifndef ULNET_CORE_LARGE_CAP_H
#define ULNET_CORE_LARGE_CAP_H

#include "internal.h"

#define ULNET_LARGE_PEERS_MAX 1024 /* peers remembered (either answer, or a failed probe), replaced in turn */
/* after a probe failed, no other toward that peer this long: a dead peer is not pinged per call */
#define ULNET_LARGE_PROBE_HOLDOFF_NS 1000000000ull

enum ulnet_large_cap {
	ULNET_LARGE_CAP_UNKNOWN, /* never answered (or forgotten): a large op probes it */
	ULNET_LARGE_CAP_YES,     /* its last ping reply carried ULNET_PING_FEAT_ULNET_LARGE */
	ULNET_LARGE_CAP_NO,      /* its last ping reply lacked it */
	ULNET_LARGE_CAP_HELD,    /* unknown, and a probe of it failed within the hold-off */
};

struct ulnet_large_peer_cap {
	struct ulnet_nid nid;
	uint8_t cap;             /* YES, NO, or UNKNOWN with a failed probe's status and hold-off */
	int failed;
	uint64_t retry_ns;
};

struct ulnet_large_caps {
	struct ulnet_large_peer_cap peer[ULNET_LARGE_PEERS_MAX];
	unsigned n, next;
	struct ulnet_list probes;  /* struct large_probe, until its MD is gone */
};

/* All under the node lock. */
void ulnet__large_caps_init(struct ulnet_large_caps *c);
/* @nid's capability; HELD puts the failed probe's status in *@failed */
enum ulnet_large_cap ulnet__large_cap_get(const struct ulnet_large_caps *c, const struct ulnet_nid *nid,
					  uint64_t now, int *failed);
void ulnet__large_cap_note(struct ulnet_large_caps *c, const struct ulnet_nid *nid, uint32_t ping_features);
/* Is a probe of @nid waiting for its answer? */
bool ulnet__large_probing(const struct ulnet_large_caps *c, const struct ulnet_nid *nid);
/* A probe of @peer made ready (its MD): sent by ulnet__large_probe_send once the lock is let go. */
int ulnet__large_probe_new(struct ulnet_node *node, struct ulnet_large_caps *c, const struct ulnet_process_id *peer,
			   struct ulnet_handle *mdh);
/* Node teardown: the probes' memory (their MDs go with the node's). */
void ulnet__large_caps_free(struct ulnet_large_caps *c);

/* No lock held: the GET of the ping; a failure ends the probe as if it failed on the wire. */
void ulnet__large_probe_send(struct ulnet_node *node, struct ulnet_handle mdh, const struct ulnet_process_id *peer);

/* large.c, no lock held: the probe of @nid answered: 1 capable, 0 not, or the probe's failure. */
void ulnet__large_probe_done(struct ulnet_node *node, const struct ulnet_nid *nid, int verdict);
/* large.c: the table, for the probe's handler */
struct ulnet_large_caps *ulnet__large_caps(struct ulnet_node *node);

#endif
