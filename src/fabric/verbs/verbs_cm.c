/* SPDX-License-Identifier: MIT */
/* verbs connection management over librdmacm, RDMA_PS_TCP: ids, listen, the active side's
 * resolve-address -> resolve-route -> connect chain, accept/reject with private data, and the
 * translation of rdma_cm events into fabric events (read straight from the CM channel). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "verbs.h"

#define IB_CM_REJ_CONSUMER_DEFINED 28 /* REJECTED status: the peer called rdma_reject */
#define PRIV_PORT_HI 1023
#define PRIV_PORT_LO 512

/* o2iblnd's parameters (lnet-wire.md §2.5.5): no RDMA READ, retry 5, RNR retry 6. */
static struct rdma_conn_param conn_param(const void *pdata, size_t len)
{
	return (struct rdma_conn_param){.private_data = pdata, .private_data_len = (uint8_t)len,
					.responder_resources = 0, .initiator_depth = 0, .flow_control = 1,
					.retry_count = 5, .rnr_retry_count = 6};
}

static struct fab_cm_id *id_new(struct fab_dev *dev, struct rdma_cm_id *cm, void *context)
{
	struct fab_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->dev = dev;
	id->cm = cm;
	id->context = context;
	ulnet_list_add_tail(&id->link, &dev->ids);
	return id;
}

int vrb_create_id(struct fab_dev *dev, void *context, struct fab_cm_id **out)
{
	struct rdma_cm_id *cm;
	struct fab_cm_id *id;

	if (rdma_create_id(dev->cm_ch, &cm, NULL, RDMA_PS_TCP))
		return -errno;
	if (!(id = id_new(dev, cm, context))) {
		rdma_destroy_id(cm);
		return -ENOMEM;
	}
	cm->context = id;
	*out = id;
	return 0;
}

void vrb_destroy_id(struct fab_cm_id *id)
{
	if (!id)
		return;
	if (id->expired && id->connecting)
		id->dev->n_expired--;
	vrb_dev_signal(id->dev);
	if (id->qp)
		vrb_qp_destroy(id->qp);
	rdma_destroy_id(id->cm);
	ulnet_list_del(&id->link);
	free(id);
}

void vrb_set_context(struct fab_cm_id *id, void *context) { id->context = context; }

int vrb_id_bind(struct fab_cm_id *id, bool privileged)
{
	struct sockaddr_in a = id->dev->addr;

	if (id->bound)
		return 0;
	if (!privileged) {
		a.sin_port = 0;
		if (rdma_bind_addr(id->cm, (struct sockaddr *)&a))
			return -errno;
		id->bound = true;
		return 0;
	}
	for (int port = PRIV_PORT_HI; port >= PRIV_PORT_LO; port--) {
		a.sin_port = htons((uint16_t)port);
		if (!rdma_bind_addr(id->cm, (struct sockaddr *)&a)) {
			id->bound = true;
			return 0;
		}
		if (errno == EACCES) {
			ULNET_LOG(FABRIC, ERR, "verbs: binding privileged source port %d needs CAP_NET_BIND_SERVICE "
				  "(or lnd tunable use_privileged_port: 0 if the peers do not require_privileged_port)", port);
			return -EACCES;
		}
		if (errno != EADDRINUSE)
			return -errno;
	}
	ULNET_LOG(FABRIC, ERR, "verbs: every privileged source port %d..%d is in use", PRIV_PORT_LO, PRIV_PORT_HI);
	return -EADDRINUSE;
}

int vrb_listen(struct fab_cm_id *id, const struct sockaddr_in *addr, int backlog)
{
	struct sockaddr_in a = *addr;

	if (rdma_bind_addr(id->cm, (struct sockaddr *)&a) || rdma_listen(id->cm, backlog))
		return -errno;
	id->bound = true;
	return 0;
}

int vrb_connect(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len, int timeout_ms)
{
	struct sockaddr_in d = *dst;

	if (len > FAB_PRIVATE_DATA_MAX || !id->qp || id->connecting)
		return -EINVAL;
	memcpy(id->pdata, pdata, len);
	id->pdata_len = (uint8_t)len;
	id->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
	if (rdma_resolve_addr(id->cm, NULL, (struct sockaddr *)&d, id->timeout_ms))
		return -errno;
	id->connecting = true;
	id->deadline_ns = ulnet__now_ns() + (uint64_t)id->timeout_ms * 1000000ull;
	vrb_deadlines(id->dev);
	return 0;
}

int vrb_accept(struct fab_cm_id *id, const void *pdata, size_t len)
{
	struct rdma_conn_param p = conn_param(pdata, len);

	if (len > FAB_PRIVATE_DATA_MAX || !id->qp)
		return -EINVAL;
	if (rdma_accept(id->cm, &p))
		return -errno;
	id->qp->connected = true; /* rdma_accept moved the QP to RTS */
	return 0;
}

int vrb_reject(struct fab_cm_id *id, const void *pdata, size_t len)
{
	if (len > FAB_PRIVATE_DATA_MAX)
		return -EINVAL;
	return rdma_reject(id->cm, pdata, (uint8_t)len) ? -errno : 0;
}

int vrb_disconnect(struct fab_cm_id *id)
{
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};

	if (id->disconnected)
		return 0;
	rdma_disconnect(id->cm); /* fails on an id that never connected: nothing to tear down then */
	if (id->qp)
		ibv_modify_qp(id->cm->qp, &err, IBV_QP_STATE);
	return 0;
}

static void copy_pdata(struct fab_cm_event *ev, const struct rdma_cm_event *e)
{
	/* IB carries no length: a REQ brings 56 bytes, a REP or REJ more; the fabric keeps 56 at most */
	size_t n = e->param.conn.private_data ? e->param.conn.private_data_len : 0;

	if (n > FAB_PRIVATE_DATA_MAX)
		n = FAB_PRIVATE_DATA_MAX;
	memcpy(ev->private_data, e->param.conn.private_data, n);
	ev->private_data_len = (uint8_t)n;
}

static void peer_addr(struct fab_cm_event *ev, struct rdma_cm_id *cm)
{
	const struct sockaddr *sa = rdma_get_peer_addr(cm);

	if (sa && sa->sa_family == AF_INET)
		memcpy(&ev->peer, sa, sizeof(ev->peer));
}

/* The active side's attempt is over (either way): its deadline no longer applies. */
static void connect_over(struct fab_cm_id *id)
{
	if (id->expired && id->connecting)
		id->dev->n_expired--;
	id->connecting = id->expired = false;
}

/* The active side failed: TIMED_OUT when the kernel says so, else UNREACHABLE. */
static void active_failed(struct fab_cm_id *id, struct fab_cm_event *ev, int status)
{
	connect_over(id);
	ev->status = status < 0 ? status : -ECONNREFUSED;
	ev->type = ev->status == -ETIMEDOUT ? FAB_CM_TIMED_OUT : FAB_CM_UNREACHABLE;
}

/* A new passive id for an incoming request; NULL (request rejected) when out of memory. */
static struct fab_cm_id *passive_id(struct fab_cm_id *listener, struct rdma_cm_id *cm)
{
	struct fab_cm_id *id = id_new(listener->dev, cm, NULL);

	if (!id) {
		ULNET_LOG(FABRIC, ERR, "verbs: no memory for an incoming connection; rejected");
		rdma_reject(cm, NULL, 0);
		rdma_destroy_id(cm);
		return NULL;
	}
	cm->context = id;
	id->bound = true;
	id->listener = listener;
	return id;
}

/* An active id whose deadline passed: TIMED_OUT now; what rdma_cm still says about it is dropped. */
static bool timed_out(struct fab_dev *dev, struct fab_cm_event *ev)
{
	for (struct ulnet_list *p = dev->ids.next; p != &dev->ids; p = p->next) {
		struct fab_cm_id *id = ulnet_container_of(p, struct fab_cm_id, link);

		if (!id->expired || !id->connecting)
			continue;
		id->connecting = false;
		id->gave_up = true;
		dev->n_expired--;
		vrb_dev_signal(dev);
		*ev = (struct fab_cm_event){.type = FAB_CM_TIMED_OUT, .id = id, .context = id->context,
					    .status = -ETIMEDOUT};
		return true;
	}
	return false;
}

/* Translate one rdma_cm event. true: @ev is to be reported. */
static bool translate(struct rdma_cm_event *e, struct fab_cm_event *ev)
{
	struct fab_cm_id *id = e->id->context;
	int rc;

	if (id && id->gave_up && e->event != RDMA_CM_EVENT_DISCONNECTED && e->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return false;
	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	ev->context = id ? id->context : NULL;
	switch (e->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (!(id = passive_id(e->listen_id->context, e->id)))
			return false;
		ev->type = FAB_CM_CONNECT_REQUEST;
		ev->id = id;
		ev->listen_id = id->listener;
		ev->context = id->listener->context;
		peer_addr(ev, e->id);
		copy_pdata(ev, e);
		return true;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!(rc = rdma_resolve_route(e->id, id->timeout_ms) ? -errno : 0))
			return false;
		active_failed(id, ev, rc);
		return true;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct rdma_conn_param p = conn_param(id->pdata, id->pdata_len);

		if (!(rc = rdma_connect(e->id, &p) ? -errno : 0))
			return false;
		active_failed(id, ev, rc);
		return true;
	}
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		active_failed(id, ev, e->status);
		return true;
	case RDMA_CM_EVENT_REJECTED:
		active_failed(id, ev, -ECONNREFUSED); /* e.g. reason 8, invalid service id: nobody listens */
		if (e->status != IB_CM_REJ_CONSUMER_DEFINED)
			return true;
		ev->type = FAB_CM_REJECTED;
		ev->status = -ECONNREFUSED;
		copy_pdata(ev, e);
		return true;
	case RDMA_CM_EVENT_ESTABLISHED:
		ev->type = FAB_CM_ESTABLISHED;
		peer_addr(ev, e->id);
		if (id->connecting)
			copy_pdata(ev, e); /* the acceptor's; the passive side gets none */
		connect_over(id);
		if (id->qp)
			id->qp->connected = true;
		return true;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (id->disconnected)
			return false;
		vrb_disconnect(id); /* the QP to the error state: everything posted is flushed */
		id->disconnected = true;
		ev->type = FAB_CM_DISCONNECTED;
		ev->status = e->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? -ENODEV : 0;
		return true;
	default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ...: nothing for the owner */
		return false;
	}
}

int vrb_get_event(struct fab_dev *dev, struct fab_cm_event *ev)
{
	struct rdma_cm_event *e;

	if (dev->n_expired && timed_out(dev, ev))
		return 0;
	for (;;) {
		bool report;

		if (rdma_get_cm_event(dev->cm_ch, &e))
			return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
		report = e->id->context || e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? translate(e, ev) : false;
		rdma_ack_cm_event(e);
		if (report)
			return 0;
	}
}
