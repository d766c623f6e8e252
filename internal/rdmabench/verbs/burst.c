// The connection burst of a job's start, one rank's share: a device
// context, a PD and a CQ, then many RC QPs, each created and moved
// RESET→INIT→RTR→RTS, held, and destroyed. Each phase is one call that
// times every verb of every QP, so that Go is entered once per phase, never
// per QP. Pairs of QPs are connected to each other: over verbs (each QP's
// RTR names the other's number), or over rdma_cm (half the QPs connect to
// a listener of the rank's own, as cmtime's client and server would).
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rb.h"

struct rb_burst {
	struct ibv_context *ctx;
	struct ibv_context **cm_ctxs; // rdma_cm: librdmacm's contexts (ctx is one of them)
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qps;
	int nqp, made, port, gid_index, tid;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	// over rdma_cm
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct cm_conn *conns;
	int cm_port;
	char cm_addr[64];
	char err[256];
};

struct rb_burst *rb_burst_new(void)
{
	return calloc(1, sizeof(struct rb_burst));
}

const char *rb_burst_err(struct rb_burst *b)
{
	return b->err;
}

int rb_burst_tid(struct rb_burst *b)
{
	return b->tid;
}

// rb_burst_free releases what is left (rb_burst_close) and b itself.
void rb_burst_free(struct rb_burst *b)
{
	struct rb_step t[RB_B_NSETUP];
	rb_burst_close(b, t);
	free(b);
}

static int bfail(struct rb_burst *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof b->err, fmt, ap);
	va_end(ap);
	return -1;
}

#define TIMED(st, body)                            \
	do {                                       \
		(st)->start = rb_now();            \
		body;                              \
		(st)->dur = rb_now() - (st)->start; \
	} while (0)

// rb_burst_open opens the device and makes the rank's PD and CQ. Over
// rdma_cm (cm set) they must be on librdmacm's own context of the device,
// the one its ids are bound to, which rdma_get_devices returns.
int rb_burst_open(struct rb_burst *b, const char *dev, int port, int gid_index, int nqp, int cm, struct rb_step *setup)
{
	b->tid = rb_gettid();
	b->port = port;
	b->gid_index = gid_index;
	if (cm) {
		int n = 0;
		TIMED(&setup[RB_B_OPEN_DEVICE], b->cm_ctxs = rdma_get_devices(&n));
		if (!b->cm_ctxs)
			return bfail(b, "rdma_get_devices: %s (is rdma_ucm loaded?)", strerror(errno));
		for (int i = 0; i < n; i++)
			if (!strcmp(ibv_get_device_name(b->cm_ctxs[i]->device), dev))
				b->ctx = b->cm_ctxs[i];
		if (!b->ctx)
			return bfail(b, "no RDMA device %s that rdma_cm can use", dev);
	} else {
		int n;
		struct ibv_device **l = ibv_get_device_list(&n);
		struct ibv_device *d = NULL;
		if (!l)
			return bfail(b, "ibv_get_device_list: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			if (!strcmp(ibv_get_device_name(l[i]), dev))
				d = l[i];
		if (!d) {
			ibv_free_device_list(l);
			return bfail(b, "no RDMA device %s", dev);
		}
		TIMED(&setup[RB_B_OPEN_DEVICE], b->ctx = ibv_open_device(d));
		ibv_free_device_list(l);
		if (!b->ctx)
			return bfail(b, "ibv_open_device %s: %s", dev, strerror(errno));
	}
	if (ibv_query_port(b->ctx, port, &b->pa))
		return bfail(b, "device %s has no port %d", dev, port);
	if (ibv_query_gid(b->ctx, port, gid_index, &b->gid))
		return bfail(b, "device %s port %d has no GID at index %d", dev, port, gid_index);
	TIMED(&setup[RB_B_ALLOC_PD], b->pd = ibv_alloc_pd(b->ctx));
	if (!b->pd)
		return bfail(b, "ibv_alloc_pd: %s", strerror(errno));
	// One CQ for all the rank's QPs, as a rank has one per device: no
	// work request is ever posted, so its depth does not matter.
	TIMED(&setup[RB_B_CREATE_CQ], b->cq = ibv_create_cq(b->ctx, 16, NULL, NULL, 0));
	if (!b->cq)
		return bfail(b, "ibv_create_cq: %s", strerror(errno));
	b->qps = calloc(nqp, sizeof *b->qps);
	if (!b->qps)
		return bfail(b, "no memory for %d QPs", nqp);
	b->nqp = nqp;
	return 0;
}

static struct ibv_qp *burst_create(struct rb_burst *b)
{
	struct ibv_qp_init_attr qa = { .send_cq = b->cq, .recv_cq = b->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	return ibv_create_qp(b->pd, &qa);
}

static int burst_init(struct rb_burst *b, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = b->port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int burst_rtr(struct rb_burst *b, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = b->pa.active_mtu, .dest_qp_num = dest,
				 .rq_psn = 1, .max_dest_rd_atomic = 1, .min_rnr_timer = 12 };
	a.ah_attr.port_num = b->port;
	a.ah_attr.dlid = b->pa.lid;
	if (b->pa.link_layer == IBV_LINK_LAYER_ETHERNET || b->gid.global.interface_id) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = b->gid;
		a.ah_attr.grh.sgid_index = b->gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int burst_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				 .sq_psn = 1, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

// burst_make creates QP j and moves it to INIT.
static int burst_make(struct rb_burst *b, int j, struct rb_burst_qp *out, int init)
{
	struct rb_burst_qp *r = &out[j];
	TIMED(&r->steps[RB_BV_CREATE], b->qps[j] = burst_create(b));
	if (!b->qps[j])
		return bfail(b, "ibv_create_qp, QP %d of %d: %s", j + 1, b->nqp, strerror(errno));
	b->made = j + 1;
	r->qpn = b->qps[j]->qp_num;
	if (!init)
		return 0;
	int e;
	TIMED(&r->steps[RB_BV_INIT], e = burst_init(b, b->qps[j]));
	if (e)
		return bfail(b, "ibv_modify_qp to INIT, QP %d: %s", j + 1, strerror(e));
	return 0;
}

// peer is the QP that j is connected to: the other of its pair (an odd
// last QP: itself).
static uint32_t peer(struct rb_burst *b, int j)
{
	int k = j ^ 1;
	return b->qps[k < b->nqp ? k : j]->qp_num;
}

static int burst_to_rtr(struct rb_burst *b, int j, struct rb_burst_qp *out)
{
	int e;
	TIMED(&out[j].steps[RB_BV_RTR], e = burst_rtr(b, b->qps[j], peer(b, j)));
	if (e)
		return bfail(b, "ibv_modify_qp to RTR, QP %d: %s", j + 1, strerror(e));
	return 0;
}

static int burst_to_rts(struct rb_burst *b, int j, struct rb_burst_qp *out)
{
	int e;
	TIMED(&out[j].steps[RB_BV_RTS], e = burst_rts(b->qps[j]));
	if (e)
		return bfail(b, "ibv_modify_qp to RTS, QP %d: %s", j + 1, strerror(e));
	return 0;
}

// rb_burst_connect creates every QP and brings it to RTS, connected to
// the other QP of its pair (2k and 2k+1; an odd last QP to itself), in
// one of three orders:
//   RB_ORDER_NCCL: create and INIT every QP, then RTR and RTS each (NCCL
//     creates a QP per connection and answers its peers' once they have
//     exchanged numbers);
//   RB_ORDER_PAIRS: a pair at a time: create and INIT both, RTR both, RTS
//     both;
//   RB_ORDER_PHASES: each verb for every QP before the next verb.
// It returns the QPs that reached RTS (all of them) or -1; the QPs made
// before a failure are kept for rb_burst_destroy.
int rb_burst_connect(struct rb_burst *b, struct rb_burst_qp *out, int order)
{
	memset(out, 0, b->nqp * sizeof *out);
	switch (order) {
	case RB_ORDER_NCCL:
		for (int j = 0; j < b->nqp; j++)
			if (burst_make(b, j, out, 1))
				return -1;
		for (int j = 0; j < b->nqp; j++)
			if (burst_to_rtr(b, j, out) || burst_to_rts(b, j, out))
				return -1;
		return b->nqp;
	case RB_ORDER_PAIRS:
		for (int i = 0; i < b->nqp; i += 2) {
			int k = i + 1 < b->nqp ? 2 : 1;
			for (int j = i; j < i + k; j++)
				if (burst_make(b, j, out, 1))
					return -1;
			for (int j = i; j < i + k; j++)
				if (burst_to_rtr(b, j, out))
					return -1;
			for (int j = i; j < i + k; j++)
				if (burst_to_rts(b, j, out))
					return -1;
		}
		return b->nqp;
	case RB_ORDER_PHASES:
		for (int j = 0; j < b->nqp; j++)
			if (burst_make(b, j, out, 0))
				return -1;
		for (int j = 0; j < b->nqp; j++) {
			int e;
			TIMED(&out[j].steps[RB_BV_INIT], e = burst_init(b, b->qps[j]));
			if (e)
				return bfail(b, "ibv_modify_qp to INIT, QP %d: %s", j + 1, strerror(e));
		}
		for (int j = 0; j < b->nqp; j++)
			if (burst_to_rtr(b, j, out))
				return -1;
		for (int j = 0; j < b->nqp; j++)
			if (burst_to_rts(b, j, out))
				return -1;
		return b->nqp;
	}
	return bfail(b, "unknown order %d", order);
}

// rb_burst_destroy destroys the QPs made, in the order they were made.
int rb_burst_destroy(struct rb_burst *b, struct rb_burst_qp *out)
{
	int ret = 0;
	for (int j = 0; j < b->made; j++) {
		if (!b->qps[j])
			continue;
		int e;
		TIMED(&out[j].steps[RB_BV_DESTROY], e = ibv_destroy_qp(b->qps[j]));
		if (e && ret == 0)
			ret = bfail(b, "ibv_destroy_qp, QP %d: %s", j + 1, strerror(e));
		b->qps[j] = NULL;
	}
	return ret ? -1 : b->made;
}

/* ---- over rdma_cm ---- */

// A pair over rdma_cm: the active id (index 2k) connects to the rank's own
// listener, whose new id (2k+1) accepts. The states a connection's active
// side goes through, in order.
enum { CM_IDLE, CM_ADDR, CM_ROUTE, CM_CONNECTING, CM_ESTABLISHED, CM_DISCONNECTING, CM_GONE };

struct cm_conn {
	struct rdma_cm_id *id;
	int idx; // its record in out
	int state;
};

static int cm_resolve(const char *addr, int port, struct sockaddr_storage *ss, struct rb_burst *b)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *res;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int r = getaddrinfo(addr, ps, &hints, &res);
	if (r)
		return bfail(b, "address %s: %s", addr, gai_strerror(r));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static struct ibv_qp_init_attr cm_qp_attr(struct rb_burst *b)
{
	struct ibv_qp_init_attr qa = { .send_cq = b->cq, .recv_cq = b->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	return qa;
}

// cm_next waits for the next event on the rank's channel.
static int cm_next(struct rb_burst *b, struct rdma_cm_event **ev, int64_t timeout_ns, const char *what)
{
	int64_t deadline = rb_now() + timeout_ns;
	for (;;) {
		struct pollfd p = { .fd = b->ch->fd, .events = POLLIN };
		int64_t left = deadline - rb_now();
		if (left <= 0)
			return bfail(b, "%s: no rdma_cm event within %.1f s", what, timeout_ns / 1e9);
		int r = poll(&p, 1, left / 1000000 + 1);
		if (r < 0 && errno != EINTR)
			return bfail(b, "%s: poll: %s", what, strerror(errno));
		if (r > 0)
			break;
	}
	if (rdma_get_cm_event(b->ch, ev))
		return bfail(b, "%s: rdma_get_cm_event: %s", what, strerror(errno));
	return 0;
}

int rb_burst_cm_listen(struct rb_burst *b, const char *addr, int port)
{
	struct sockaddr_storage ss;
	if (cm_resolve(addr, port, &ss, b))
		return -1;
	if (!(b->ch = rdma_create_event_channel()))
		return bfail(b, "rdma_create_event_channel: %s (is rdma_ucm loaded?)", strerror(errno));
	if (rdma_create_id(b->ch, &b->listen_id, NULL, RDMA_PS_TCP))
		return bfail(b, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(b->listen_id, (struct sockaddr *)&ss))
		return bfail(b, "rdma_bind_addr %s:%d: %s (no RDMA device has that address, or the port is taken)", addr,
			     port, strerror(errno));
	if (rdma_listen(b->listen_id, 1024))
		return bfail(b, "rdma_listen %s:%d: %s", addr, port, strerror(errno));
	b->cm_port = port;
	snprintf(b->cm_addr, sizeof b->cm_addr, "%s", addr);
	return 0;
}

// cm_start begins the active side of connection c: create its id and ask
// for the address.
static int cm_start(struct rb_burst *b, struct cm_conn *c, struct rb_burst_qp *out, struct sockaddr *dst)
{
	struct rb_burst_qp *r = &out[c->idx];
	TIMED(&r->steps[RB_BC_CREATE_ID], rdma_create_id(b->ch, &c->id, c, RDMA_PS_TCP));
	if (!c->id)
		return bfail(b, "rdma_create_id: %s", strerror(errno));
	r->steps[RB_BC_RESOLVE_ADDR].start = rb_now();
	if (rdma_resolve_addr(c->id, NULL, dst, 20000))
		return bfail(b, "rdma_resolve_addr %s: %s", b->cm_addr, strerror(errno));
	c->state = CM_ADDR;
	return 0;
}

#define STEP_DONE(r, k, t) ((r)->steps[k].dur = (t) - (r)->steps[k].start)

// rb_burst_cm_connect makes nqp/2 connections to the rank's own listener,
// window of them in flight at once (cmtime starts them all; a window keeps
// an emulated machine's rdma_cm timers from expiring), and returns when
// every QP of both sides is established. Records 2k are the active sides,
// 2k+1 the passive ones.
int rb_burst_cm_connect(struct rb_burst *b, struct rb_burst_qp *out, int window, int64_t timeout_ns)
{
	int npairs = b->nqp / 2, started = 0, established = 0;
	struct sockaddr_storage ss;
	if (cm_resolve(b->cm_addr, b->cm_port, &ss, b))
		return -1;
	b->conns = calloc(b->nqp, sizeof(struct cm_conn));
	if (!b->conns)
		return bfail(b, "no memory for %d connections", npairs);
	struct cm_conn *conns = b->conns;
	memset(out, 0, b->nqp * sizeof *out);
	for (int k = 0; k < b->nqp; k++)
		conns[k].idx = k;
	while (established < 2 * npairs) {
		while (started < npairs && started * 2 - established < 2 * window) {
			if (cm_start(b, &conns[2 * started], out, (struct sockaddr *)&ss))
				return -1;
			started++;
			b->made = 2 * started;
		}
		struct rdma_cm_event *ev;
		if (cm_next(b, &ev, timeout_ns, "connect"))
			return -1;
		int64_t t = rb_now();
		struct rdma_cm_id *id = ev->id;
		struct cm_conn *c = id->context;
		int e = ev->event, status = ev->status;
		if (e == RDMA_CM_EVENT_CONNECT_REQUEST) {
			// The listener's new id: its context is the listener's. The
			// request's private data names the active side's record.
			int k = -1;
			if (ev->param.conn.private_data_len >= sizeof(int))
				memcpy(&k, ev->param.conn.private_data, sizeof k);
			rdma_ack_cm_event(ev);
			if (k < 0 || k >= npairs || conns[2 * k + 1].id) {
				rdma_reject(id, NULL, 0);
				rdma_destroy_id(id);
				continue;
			}
			c = &conns[2 * k + 1];
			c->id = id;
			id->context = c;
			struct rb_burst_qp *r = &out[c->idx];
			struct ibv_qp_init_attr qa = cm_qp_attr(b);
			int ret;
			TIMED(&r->steps[RB_BC_CREATE_QP], ret = rdma_create_qp(id, b->pd, &qa));
			if (ret)
				return bfail(b, "rdma_create_qp for connection %d's request: %s", k + 1, strerror(errno));
			r->qpn = id->qp->qp_num;
			struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7 };
			r->steps[RB_BC_CONNECT].start = rb_now();
			if (rdma_accept(id, &cp))
				return bfail(b, "rdma_accept, connection %d: %s", k + 1, strerror(errno));
			c->state = CM_CONNECTING;
			continue;
		}
		rdma_ack_cm_event(ev);
		if (!c || c < conns || c >= conns + b->nqp) {
			if (e == RDMA_CM_EVENT_TIMEWAIT_EXIT || e == RDMA_CM_EVENT_DISCONNECTED)
				continue;
			return bfail(b, "connect: unexpected %s (status %d) on the listener", rdma_event_str(e), status);
		}
		struct rb_burst_qp *r = &out[c->idx];
		int k = c->idx / 2;
		switch (e) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			STEP_DONE(r, RB_BC_RESOLVE_ADDR, t);
			r->steps[RB_BC_RESOLVE_ROUTE].start = rb_now();
			if (rdma_resolve_route(c->id, 20000))
				return bfail(b, "rdma_resolve_route, connection %d: %s", k + 1, strerror(errno));
			c->state = CM_ROUTE;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED: {
			STEP_DONE(r, RB_BC_RESOLVE_ROUTE, t);
			struct ibv_qp_init_attr qa = cm_qp_attr(b);
			int ret;
			TIMED(&r->steps[RB_BC_CREATE_QP], ret = rdma_create_qp(c->id, b->pd, &qa));
			if (ret)
				return bfail(b, "rdma_create_qp, connection %d: %s", k + 1, strerror(errno));
			r->qpn = c->id->qp->qp_num;
			struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
						      .rnr_retry_count = 7, .private_data = &k,
						      .private_data_len = sizeof k };
			r->steps[RB_BC_CONNECT].start = rb_now();
			if (rdma_connect(c->id, &cp))
				return bfail(b, "rdma_connect, connection %d: %s", k + 1, strerror(errno));
			c->state = CM_CONNECTING;
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			STEP_DONE(r, RB_BC_CONNECT, t);
			c->state = CM_ESTABLISHED;
			established++;
			break;
		default:
			return bfail(b, "connection %d: %s (status %d) while connecting", k + 1, rdma_event_str(e), status);
		}
	}
	return 2 * npairs;
}

// rb_burst_cm_destroy disconnects every connection from its active side,
// and destroys each side's QP and id once its DISCONNECTED has come.
int rb_burst_cm_destroy(struct rb_burst *b, struct rb_burst_qp *out, int64_t timeout_ns)
{
	struct cm_conn *conns = b->conns;
	int left = 0;
	if (!conns)
		return 0;
	for (int k = 0; k + 1 < b->made; k += 2) {
		struct cm_conn *c = &conns[k];
		if (c->state != CM_ESTABLISHED || conns[k + 1].state != CM_ESTABLISHED)
			continue;
		out[k].steps[RB_BC_DISCONNECT].start = out[k + 1].steps[RB_BC_DISCONNECT].start = rb_now();
		if (rdma_disconnect(c->id))
			return bfail(b, "rdma_disconnect, connection %d: %s", k / 2 + 1, strerror(errno));
		c->state = conns[k + 1].state = CM_DISCONNECTING;
		left += 2;
	}
	while (left > 0) {
		struct rdma_cm_event *ev;
		if (cm_next(b, &ev, timeout_ns, "disconnect"))
			return -1;
		int64_t t = rb_now();
		struct cm_conn *c = ev->id->context;
		int e = ev->event;
		rdma_ack_cm_event(ev);
		if (e != RDMA_CM_EVENT_DISCONNECTED || !c || c < conns || c >= conns + b->nqp ||
		    c->state != CM_DISCONNECTING)
			continue; // TIMEWAIT_EXIT, or the listener's
		struct rb_burst_qp *r = &out[c->idx];
		STEP_DONE(r, RB_BC_DISCONNECT, t);
		if (c->idx % 2)
			rdma_disconnect(c->id); // the passive side answers the request (DREP)
		TIMED(&r->steps[RB_BC_DESTROY], rdma_destroy_qp(c->id); rdma_destroy_id(c->id));
		c->id = NULL;
		c->state = CM_GONE;
		left--;
	}
	return b->made;
}

void rb_burst_close(struct rb_burst *b, struct rb_step *teardown)
{
	if (b->conns) {
		struct cm_conn *conns = b->conns;
		for (int k = 0; k < b->nqp; k++)
			if (conns[k].id) {
				if (conns[k].id->qp)
					rdma_destroy_qp(conns[k].id);
				rdma_destroy_id(conns[k].id);
			}
		free(b->conns);
		b->conns = NULL;
	}
	if (b->qps) {
		for (int j = 0; j < b->made; j++)
			if (b->qps[j])
				ibv_destroy_qp(b->qps[j]);
		free(b->qps);
		b->qps = NULL;
	}
	if (b->listen_id)
		rdma_destroy_id(b->listen_id);
	b->listen_id = NULL;
	if (b->cq)
		TIMED(&teardown[RB_B_DESTROY_CQ], ibv_destroy_cq(b->cq));
	if (b->pd)
		TIMED(&teardown[RB_B_DEALLOC_PD], ibv_dealloc_pd(b->pd));
	if (b->cm_ctxs)
		TIMED(&teardown[RB_B_CLOSE_DEVICE], rdma_free_devices(b->cm_ctxs));
	else if (b->ctx)
		TIMED(&teardown[RB_B_CLOSE_DEVICE], ibv_close_device(b->ctx));
	b->cm_ctxs = NULL;
	if (b->ch)
		rdma_destroy_event_channel(b->ch);
	b->cq = NULL;
	b->pd = NULL;
	b->ctx = NULL;
	b->ch = NULL;
}
