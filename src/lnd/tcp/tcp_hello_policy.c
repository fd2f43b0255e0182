/* SPDX-License-Identifier: MIT */
/* socklnd's HELLO decisions (lnet-wire.md §2.6), with no I/O: what to do with a connection once the
 * peer's HELLO is read, and whether the acceptor takes a connection at all. tcp_lnd.c gathers the
 * facts and carries the verdict out; tests/unit/test_tcp_hello_policy.c tests it from a table. */
#include "tcp.h"

const char *tcplnd_hello_action_name(enum tcplnd_hello_action a)
{
	switch (a) {
	case TCPLND_HELLO_GO_ON: return "go on";
	case TCPLND_HELLO_WRONG_NET: return "wrong net";
	case TCPLND_HELLO_WRONG_NID: return "wrong NID";
	case TCPLND_HELLO_RETRY_VERSION: return "retry version";
	case TCPLND_HELLO_LOST_RACE: return "lost race";
	case TCPLND_HELLO_BAD_CTYPE: return "bad ctype";
	case TCPLND_HELLO_ANSWER_NONE_RACE: return "answer NONE (race)";
	case TCPLND_HELLO_PEER_RESTARTED: return "peer restarted";
	case TCPLND_HELLO_DUPLICATE: return "duplicate";
	}
	return "?";
}

static struct tcplnd_hello_verdict verdict(enum tcplnd_hello_action a, const char *why)
{
	return (struct tcplnd_hello_verdict){ .action = a, .reason = why };
}

struct tcplnd_hello_verdict tcplnd_hello_check(const struct tcplnd_hello_facts *f)
{
	if (!f->same_net)
		return verdict(TCPLND_HELLO_WRONG_NET, "kshm_src_nid is not on this NI's net");
	if (f->passive) {
		if (tcplnd_ctype_invert(f->hello_ctype) == TCPLND_CONN_NONE)
			return verdict(TCPLND_HELLO_BAD_CTYPE, "a connecting peer must name a connection type");
		return verdict(TCPLND_HELLO_GO_ON, "HELLO well formed");
	}
	if (!f->src_is_target)
		return verdict(TCPLND_HELLO_WRONG_NID, "the peer is not the NID we connected to");
	if (f->hello_version != f->offered_version)
		return verdict(TCPLND_HELLO_RETRY_VERSION, "the peer answers another protocol version");
	if (f->hello_ctype == TCPLND_CONN_NONE)
		return verdict(TCPLND_HELLO_LOST_RACE, "the peer answered NONE: lost the race, or a duplicate");
	if (tcplnd_ctype_invert(f->hello_ctype) != f->our_ctype)
		return verdict(TCPLND_HELLO_BAD_CTYPE, "the peer's ctype does not mirror ours");
	return verdict(TCPLND_HELLO_GO_ON, "HELLO matches our request");
}

struct tcplnd_hello_verdict tcplnd_hello_admit(const struct tcplnd_hello_facts *f)
{
	if (f->passive && f->src_below_us && f->peer_connecting)
		return verdict(TCPLND_HELLO_ANSWER_NONE_RACE, "both sides connecting: the higher NID's conns win");
	if (f->peer_proto && (f->peer_proto != f->conn_proto || f->peer_incarnation != f->hello_incarnation))
		return verdict(TCPLND_HELLO_PEER_RESTARTED, f->peer_incarnation != f->hello_incarnation
							    ? "new incarnation: the peer restarted"
							    : "the peer changed protocol version");
	if (f->n_up >= f->type_limit)
		return verdict(TCPLND_HELLO_DUPLICATE, "enough connections of this type already");
	return verdict(TCPLND_HELLO_GO_ON, "accepted");
}

bool tcplnd_accept_allows(int policy, unsigned rport)
{
	switch (policy) {
	case TCPLND_ACCEPT_ALL: return true;
	case TCPLND_ACCEPT_SECURE: return rport <= TCPLND_MAX_RESERVED_PORT;
	default: return false; /* none: no acceptor */
	}
}
