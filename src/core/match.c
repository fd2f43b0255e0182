/* SPDX-License-Identifier: MIT */
/* Matching an incoming PUT or GET to an ME, as LNet does: the first ME of the portal, in list order,
 * whose bits, initiator and MD accept the operation wins. A portal may hold thousands of MEs with
 * unique match bits (one per RPC), so those without ignore bits are found through a hash on
 * (portal, match bits); the MEs with ignore bits stay on a per-portal wildcard list. Every ME has a
 * sequence number giving its place in the portal (INS_BEFORE takes one below every other, INS_AFTER
 * one above), so both lists stay in portal order and the lower of the two first candidates is the
 * one a walk of the whole portal would have found. */
#include "internal.h"

static struct ulnet_list *match_bucket(struct ulnet_node *node, uint32_t portal, uint64_t bits)
{
	uint64_t h = (bits ^ ((uint64_t)portal << 56)) * 0x9e3779b97f4a7c15ull;

	return &node->match_hash[h >> 52 & (ULNET_MATCH_BUCKETS - 1)];
}

void ulnet__match_init(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_MATCH_BUCKETS; i++)
		ulnet_list_init(&node->match_hash[i]);
	for (unsigned i = 0; i < ULNET_MAX_PORTALS; i++)
		ulnet_list_init(&node->portal_wild[i]);
}

void ulnet__me_hook(struct ulnet_node *node, struct ulnet_me *me, enum ulnet_ins_pos pos)
{
	struct ulnet_list *chain = me->ignore_bits ? &node->portal_wild[me->portal]
						   : match_bucket(node, me->portal, me->match_bits);

	/* a chain is sorted by seq: the lowest ever taken goes first, the highest last */
	if (pos == ULNET_INS_BEFORE) {
		me->seq = --node->me_head_seq;
		ulnet_list_add_head(&me->ptl_link, &node->portals[me->portal]);
		ulnet_list_add_head(&me->match_link, chain);
	} else {
		me->seq = ++node->me_tail_seq;
		ulnet_list_add_tail(&me->ptl_link, &node->portals[me->portal]);
		ulnet_list_add_tail(&me->match_link, chain);
	}
}

void ulnet__me_unhook(struct ulnet_me *me)
{
	ulnet_list_del(&me->ptl_link);
	ulnet_list_del(&me->match_link);
}

static bool id_matches(const struct ulnet_process_id *want, const struct ulnet_process_id *got)
{
	if (want->pid != ULNET_PID_ANY && want->pid != got->pid)
		return false;
	return ulnet_nid_is_any(&want->nid) || ulnet__nid_equal(&want->nid, &got->nid);
}

/* @me is a candidate: active, bits, initiator and operation accepted (room is judged after). */
static bool me_accepts(const struct ulnet_me *me, const struct ulnet_match *m)
{
	const struct ulnet_libmd *md = me->md;

	return me->portal == m->portal && md && ulnet__md_active(md) &&
	       ((me->match_bits ^ m->match_bits) & ~me->ignore_bits) == 0 &&
	       id_matches(&me->match_id, &m->initiator) && (md->umd.options & m->op);
}

/* The first candidate of @chain with seq below @below (INT64_MAX: any), or NULL. */
static struct ulnet_me *first_candidate(struct ulnet_list *chain, const struct ulnet_match *m, int64_t below)
{
	for (struct ulnet_list *p = chain->next; p != chain; p = p->next) {
		struct ulnet_me *me = ulnet_container_of(p, struct ulnet_me, match_link);

		if (me->seq >= below)
			break;
		if (me_accepts(me, m))
			return me;
	}
	return NULL;
}

/* An MD with too little room and no TRUNCATE drops the message rather than passing it on, as LNet
 * does, so a sizing bug shows up as a drop, not as data in the wrong buffer. */
enum ulnet_match_rc ulnet__match_md(struct ulnet_node *node, struct ulnet_match *m)
{
	struct ulnet_me *me = first_candidate(match_bucket(node, m->portal, m->match_bits), m, INT64_MAX);
	struct ulnet_me *wild = first_candidate(&node->portal_wild[m->portal], m, me ? me->seq : INT64_MAX);
	struct ulnet_libmd *md;
	uint32_t offset, room, mlen;

	if (wild)
		me = wild;
	if (!me)
		return ULNET_MATCH_NONE;
	md = me->md;
	offset = (md->umd.options & ULNET_MD_MANAGE_REMOTE) ? m->roffset : md->offset;
	room = offset <= md->total ? md->total - offset : 0;
	mlen = m->rlength;
	if (mlen > room) {
		if (!(md->umd.options & ULNET_MD_TRUNCATE)) {
			ULNET_LOG(CORE, WARN,
				  "portal %u: match bits 0x%llx: length %u too big: %u left at offset %u "
				  "(MD has no TRUNCATE); dropping", m->portal, (unsigned long long)m->match_bits,
				  m->rlength, room, offset);
			return ULNET_MATCH_DROP;
		}
		mlen = room;
	}
	m->md = md;
	m->offset = offset;
	m->mlength = mlen;
	ulnet__md_use(md);
	if (!(md->umd.options & ULNET_MD_MANAGE_REMOTE))
		md->offset = offset + mlen;
	return ULNET_MATCH_OK;
}
