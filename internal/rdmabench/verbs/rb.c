#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rb.h"

#define SQ_DEPTH 128
#define RQ_DEPTH 128
#define STOP_AREA 64
// Every CQ_MOD-th send is signalled, as perftest signals every cq_mod-th:
// a completion per message would add the provider's and (on soft-RoCE) the
// kernel's completion work to every sample.
#define CQ_MOD 32
// Spins between looks at the clock, the abort flag and the CQ for errors:
// often enough to notice a dead peer in well under a millisecond of extra
// spinning, rarely enough not to show in the samples.
#define SPIN_CHECK 4096

int64_t rb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int rb_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

int rb_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

// rb_clock_cost is the mean cost of one clock_gettime(CLOCK_MONOTONIC), in ns.
double rb_clock_cost(int n)
{
	int64_t t0 = rb_now(), x = 0;
	for (int i = 0; i < n; i++)
		x += rb_now() & 1;
	int64_t t1 = rb_now();
	(void)x;
	return (double)(t1 - t0) / n;
}

// rb_empty_poll_cost is the mean cost of an ibv_poll_cq that finds nothing.
double rb_empty_poll_cost(struct rb_ep *e, int n)
{
	struct ibv_wc wc;
	struct ibv_cq *cq = e->op == RB_SEND ? e->rcq : e->scq;
	if (cq == NULL)
		return -1;
	int found = 0;
	int64_t t0 = rb_now();
	for (int i = 0; i < n; i++)
		found += ibv_poll_cq(cq, 1, &wc);
	int64_t t1 = rb_now();
	return found ? -1 : (double)(t1 - t0) / n;
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}
#define EFAIL(e, ...) fail((e)->err, sizeof (e)->err, __VA_ARGS__)

static const char *status_cause(int event, int status)
{
	if (event == RDMA_CM_EVENT_REJECTED && status == 8) // IB_CM_REJ_INVALID_SERVICE_ID
		return "no server listens on that port";
	if (event == RDMA_CM_EVENT_REJECTED && status == 28) // IB_CM_REJ_CONSUMER_DEFINED
		return "the server refused";
	if (status < 0)
		return strerror(-status);
	return "";
}

// wait_event waits for the next event on ch (at most timeout_ns, checking
// abort) and returns it unacknowledged in *ev, or -1 with err set.
static int wait_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev, int64_t timeout_ns,
		      volatile int *abort, const char *what, char *err, size_t errlen)
{
	int64_t deadline = rb_now() + timeout_ns;
	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int64_t left = deadline - rb_now();
		if (left <= 0)
			return fail(err, errlen, "%s: no answer within %.1f s", what, timeout_ns / 1e9);
		if (abort && *abort)
			return fail(err, errlen, "%s: aborted", what);
		int ms = left / 1000000 + 1;
		if (ms > 100)
			ms = 100; // look at the abort flag now and then
		int r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR)
			return fail(err, errlen, "%s: poll: %s", what, strerror(errno));
		if (r > 0)
			break;
	}
	if (rdma_get_cm_event(ch, ev))
		return fail(err, errlen, "%s: rdma_get_cm_event: %s", what, strerror(errno));
	return 0;
}

// expect waits for the event want; anything else is an error naming it.
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want, struct rdma_cm_event **out,
		  int64_t timeout_ns, volatile int *abort, const char *what, char *err, size_t errlen)
{
	struct rdma_cm_event *ev;
	if (wait_event(ch, &ev, timeout_ns, abort, what, err, errlen))
		return -1;
	if (ev->event != want) {
		fail(err, errlen, "%s: got %s (status %d%s%s) instead of %s", what, rdma_event_str(ev->event),
		     ev->status, *status_cause(ev->event, ev->status) ? ": " : "", status_cause(ev->event, ev->status),
		     rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

static int resolve(const char *addr, int port, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *res;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int r = getaddrinfo(addr, ps, &hints, &res);
	if (r)
		return fail(err, errlen, "address %s: %s", addr, gai_strerror(r));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int check_dev(struct rdma_cm_id *id, const char *want, char *err, size_t errlen)
{
	if (!id->verbs)
		return fail(err, errlen, "rdma_cm bound no device");
	const char *got = ibv_get_device_name(id->verbs->device);
	if (want && *want && strcmp(want, got))
		return fail(err, errlen, "the address is on device %s, not %s (-d)", got, want);
	return 0;
}

// setup creates the PD, CQs, buffer, MR and QP of a latency endpoint on id.
static int setup(struct rb_ep *e, struct rdma_cm_id *id)
{
	snprintf(e->dev, sizeof e->dev, "%s", ibv_get_device_name(id->verbs->device));
	long page = sysconf(_SC_PAGESIZE);
	e->buflen = (2 * e->size + STOP_AREA + page - 1) / page * page;
	e->buf = mmap(NULL, e->buflen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		return EFAIL(e, "mmap %zu bytes: %s", e->buflen, strerror(errno));
	}
	memset(e->buf, 0, e->buflen);
	if (!(e->pd = ibv_alloc_pd(id->verbs)))
		return EFAIL(e, "ibv_alloc_pd on %s: %s", e->dev, strerror(errno));
	if (!(e->scq = ibv_create_cq(id->verbs, SQ_DEPTH, NULL, NULL, 0)) ||
	    !(e->rcq = ibv_create_cq(id->verbs, RQ_DEPTH, NULL, NULL, 0)))
		return EFAIL(e, "ibv_create_cq on %s: %s", e->dev, strerror(errno));
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (!(e->mr = ibv_reg_mr(e->pd, e->buf, e->buflen, access))) {
		int en = errno;
		struct rlimit rl;
		if (en == ENOMEM && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur < e->buflen)
			return EFAIL(e, "ibv_reg_mr of %zu bytes: the memlock limit (%llu bytes) is too small: raise it with ulimit -l",
				     e->buflen, (unsigned long long)rl.rlim_cur);
		return EFAIL(e, "ibv_reg_mr of %zu bytes on %s: %s", e->buflen, e->dev, strerror(en));
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = e->scq,
		.recv_cq = e->rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.sq_sig_all = 0,
	};
	if (rdma_create_qp(id, e->pd, &qa)) {
		// Some devices take no inline data: ask again without.
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(id, e->pd, &qa))
			return EFAIL(e, "rdma_create_qp on %s: %s", e->dev, strerror(errno));
	}
	e->max_inline = qa.cap.max_inline_data;
	if (e->op == RB_SEND) {
		for (int i = 0; i < RQ_DEPTH; i++) {
			struct ibv_sge sge = { (uintptr_t)(e->buf + e->size), e->size, e->mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
			if (ibv_post_recv(id->qp, &wr, &bad))
				return EFAIL(e, "ibv_post_recv: %s", strerror(errno));
		}
	}
	return 0;
}

int rb_server_listen(struct rb_ep *e, const char *addr, int port)
{
	struct sockaddr_storage ss;
	if (resolve(addr, port, &ss, e->err, sizeof e->err))
		return -1;
	if (!(e->ch = rdma_create_event_channel()))
		return EFAIL(e, "rdma_create_event_channel: %s (is rdma_ucm loaded?)", strerror(errno));
	if (rdma_create_id(e->ch, &e->listen_id, e, RDMA_PS_TCP))
		return EFAIL(e, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(e->listen_id, (struct sockaddr *)&ss))
		return EFAIL(e, "rdma_bind_addr %s:%d: %s (no RDMA device has that address?)", addr, port, strerror(errno));
	if (rdma_listen(e->listen_id, 4))
		return EFAIL(e, "rdma_listen %s:%d: %s", addr, port, strerror(errno));
	return 0;
}

int rb_server_accept(struct rb_ep *e, const char *want_dev)
{
	struct rdma_cm_event *ev;
	e->tid = rb_gettid();
	if (expect(e->ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev, e->timeout_ns, e->abort, "wait for a client", e->err,
		   sizeof e->err))
		return -1;
	e->id = ev->id;
	struct rb_params p = { 0 };
	if (ev->param.conn.private_data_len >= sizeof p)
		memcpy(&p, ev->param.conn.private_data, sizeof p);
	rdma_ack_cm_event(ev);
	if (check_dev(e->id, want_dev, e->err, sizeof e->err))
		return -1;
	e->raddr = be64toh(p.addr);
	e->rkey = ntohl(p.rkey);
	e->size = ntohl(p.size);
	e->iters = ntohl(p.iters);
	e->op = ntohl(p.op);
	e->duration_ns = be64toh(p.duration_ns);
	if (e->size == 0 || e->rkey == 0)
		return EFAIL(e, "the client sent no buffer (not an rdmabench client?)");
	if (setup(e, e->id))
		return -1;
	struct rb_params mine = { .addr = htobe64((uintptr_t)e->buf), .rkey = htonl(e->mr->rkey) };
	struct rdma_conn_param cp = { .private_data = &mine, .private_data_len = sizeof mine,
				      .responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7 };
	if (rdma_accept(e->id, &cp))
		return EFAIL(e, "rdma_accept: %s", strerror(errno));
	if (expect(e->ch, RDMA_CM_EVENT_ESTABLISHED, NULL, e->timeout_ns, e->abort, "accept", e->err, sizeof e->err))
		return -1;
	e->connected = 1;
	return 0;
}

int rb_client_connect(struct rb_ep *e, const char *addr, int port, const char *want_dev, int op, size_t size,
		      int iters, int64_t duration_ns)
{
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	char what[128];
	e->tid = rb_gettid();
	e->op = op;
	e->size = size;
	e->iters = iters;
	e->duration_ns = duration_ns;
	if (resolve(addr, port, &ss, e->err, sizeof e->err))
		return -1;
	if (!(e->ch = rdma_create_event_channel()))
		return EFAIL(e, "rdma_create_event_channel: %s (is rdma_ucm loaded?)", strerror(errno));
	if (rdma_create_id(e->ch, &e->id, e, RDMA_PS_TCP))
		return EFAIL(e, "rdma_create_id: %s", strerror(errno));
	snprintf(what, sizeof what, "resolve address %s", addr);
	if (rdma_resolve_addr(e->id, NULL, (struct sockaddr *)&ss, 2000))
		return EFAIL(e, "%s: %s", what, strerror(errno));
	if (expect(e->ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, e->timeout_ns, e->abort, what, e->err, sizeof e->err))
		return -1;
	snprintf(what, sizeof what, "resolve route to %s", addr);
	if (rdma_resolve_route(e->id, 2000))
		return EFAIL(e, "%s: %s", what, strerror(errno));
	if (expect(e->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, e->timeout_ns, e->abort, what, e->err, sizeof e->err))
		return -1;
	if (check_dev(e->id, want_dev, e->err, sizeof e->err))
		return -1;
	if (setup(e, e->id))
		return -1;
	struct rb_params p = { .addr = htobe64((uintptr_t)e->buf), .rkey = htonl(e->mr->rkey),
			       .size = htonl(size), .iters = htonl(iters), .op = htonl(op),
			       .duration_ns = htobe64(duration_ns) };
	struct rdma_conn_param cp = { .private_data = &p, .private_data_len = sizeof p, .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7 };
	snprintf(what, sizeof what, "connect to %s:%d", addr, port);
	if (rdma_connect(e->id, &cp))
		return EFAIL(e, "%s: %s", what, strerror(errno));
	if (expect(e->ch, RDMA_CM_EVENT_ESTABLISHED, &ev, e->timeout_ns, e->abort, what, e->err, sizeof e->err))
		return -1;
	struct rb_params sp = { 0 };
	if (ev->param.conn.private_data_len >= sizeof sp)
		memcpy(&sp, ev->param.conn.private_data, sizeof sp);
	rdma_ack_cm_event(ev);
	e->connected = 1;
	e->raddr = be64toh(sp.addr);
	e->rkey = ntohl(sp.rkey);
	if (e->rkey == 0)
		return EFAIL(e, "%s: the server sent no buffer (not an rdmabench server?)", what);
	return 0;
}

// reap polls the send CQ once (or, when all is set, until every signalled
// send has completed) and fails on an error completion: that is how a peer
// that died or went away shows.
static int reap(struct rb_ep *e, int all)
{
	struct ibv_wc wc[16];
	int64_t deadline = 0;
	unsigned spins = 0;
	do {
		int n = ibv_poll_cq(e->scq, 16, wc);
		if (n < 0)
			return EFAIL(e, "ibv_poll_cq failed");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return EFAIL(e, "the peer stopped answering: work completion %s",
					     ibv_wc_status_str(wc[i].status));
			e->outstanding -= wc[i].wr_id; // a signalled send retires its whole batch
		}
		if (!all || e->outstanding <= e->batch)
			break;
		if (++spins % SPIN_CHECK == 0) {
			int64_t t = rb_now();
			if (!deadline)
				deadline = t + e->timeout_ns;
			else if (t > deadline)
				return EFAIL(e, "the peer stopped answering: no completion within %.1f s",
					     e->timeout_ns / 1e9);
			if (*e->abort)
				return EFAIL(e, "aborted");
		}
	} while (1);
	return 0;
}

// post posts one send; sig forces a completion for it (and the unsignalled
// ones before it).
static int post(struct rb_ep *e, enum ibv_wr_opcode opc, uint64_t raddr, char *local, size_t len, int imm, int sig)
{
	struct ibv_sge sge = { (uintptr_t)local, len, e->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = opc }, *bad;
	if (++e->batch >= CQ_MOD || sig) {
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr_id = e->batch;
		e->batch = 0;
	}
	if (len <= e->max_inline && opc != IBV_WR_RDMA_READ)
		wr.send_flags |= IBV_SEND_INLINE;
	if (imm) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(imm);
	}
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = e->rkey;
	// Make room: completions can lag the peer's answers.
	if (e->outstanding >= SQ_DEPTH - 1 && reap(e, 1))
		return -1;
	int r = ibv_post_send(e->id->qp, &wr, &bad);
	if (r)
		return EFAIL(e, "ibv_post_send: %s", strerror(r));
	e->outstanding++;
	return 0;
}

// spin waits until the last byte of the receive area is v.
static int spin(struct rb_ep *e, char v)
{
	volatile char *b = e->buf + 2 * e->size - 1;
	int64_t deadline = 0;
	unsigned n = 0;
	while (*b != v) {
		if (++n % SPIN_CHECK)
			continue;
		int64_t t = rb_now();
		if (!deadline)
			deadline = t + e->timeout_ns;
		else if (t > deadline)
			return EFAIL(e, "the peer stopped answering: nothing arrived within %.1f s", e->timeout_ns / 1e9);
		if (*e->abort)
			return EFAIL(e, "aborted");
		if (reap(e, 0))
			return -1;
	}
	return 0;
}

// recv_one waits for one receive completion and posts the buffer again; *imm
// is its immediate data (0 without).
static int recv_one(struct rb_ep *e, uint32_t *imm)
{
	struct ibv_wc wc;
	int64_t deadline = 0;
	unsigned n = 0;
	int r;
	while ((r = ibv_poll_cq(e->rcq, 1, &wc)) == 0) {
		if (++n % SPIN_CHECK)
			continue;
		int64_t t = rb_now();
		if (!deadline)
			deadline = t + e->timeout_ns;
		else if (t > deadline)
			return EFAIL(e, "the peer stopped answering: nothing arrived within %.1f s", e->timeout_ns / 1e9);
		if (*e->abort)
			return EFAIL(e, "aborted");
		if (reap(e, 0))
			return -1;
	}
	if (r < 0)
		return EFAIL(e, "ibv_poll_cq failed");
	if (wc.status != IBV_WC_SUCCESS)
		return EFAIL(e, "the peer stopped answering: receive completion %s", ibv_wc_status_str(wc.status));
	*imm = (wc.wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc.imm_data) : 0;
	struct ibv_sge sge = { (uintptr_t)(e->buf + e->size), e->size, e->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	if ((r = ibv_post_recv(e->id->qp, &wr, &bad)))
		return EFAIL(e, "ibv_post_recv: %s", strerror(r));
	return 0;
}

// over tells whether the initiator's series is over, and notes why in
// e->lat_over: its count reached (-n), or its duration (-D). The clock is
// read every 16 iterations, as before.
static int over(struct rb_ep *e)
{
	if (e->iters > 0 && e->lat_i >= e->iters)
		e->lat_over = RB_OVER_COUNT;
	else if (e->duration_ns && (e->lat_i & 15) == 0 && rb_now() >= e->lat_end)
		e->lat_over = RB_OVER_DURATION;
	return e->lat_over;
}

/*
 * perftest's write_lat: each side spins on the last byte of its receive area
 * and answers with an RDMA WRITE whose last byte is the iteration number. The
 * initiator stamps every post; sample i is half of the time from post i to
 * post i+1 (the last one ends when the last answer arrived), as perftest
 * reports it. SEND does the same with receive completions, READ waits for its
 * own completion and reports whole round trips.
 *
 * The responder (rb_lat_respond) runs its whole side in one call. The
 * initiator runs in chunks: rb_lat_start, then rb_lat_chunk until
 * e->lat_over, then rb_lat_finish. A chunk's last sample ends when its answer
 * arrived (the clock read after the loop), so the time the caller spends
 * between chunks is in no sample.
 */
int rb_lat_respond(struct rb_ep *e)
{
	char *last = e->buf + e->size - 1;
	uint64_t rrecv = e->raddr + e->size;
	volatile uint64_t *stop = (volatile uint64_t *)(e->buf + 2 * e->size);
	uint32_t imm;
	// A run for a duration ends when the initiator says so, however long.
	int64_t limit = e->duration_ns ? INT64_MAX : e->iters;
	for (int64_t i = 0; i < limit; i++) {
		if (e->op == RB_WRITE) {
			if (spin(e, (char)(i + 1)))
				return -1;
			if (*stop)
				break;
			*last = (char)(i + 1);
			if (post(e, IBV_WR_RDMA_WRITE, rrecv, e->buf, e->size, 0, 0))
				return -1;
		} else if (e->op == RB_SEND) {
			if (recv_one(e, &imm))
				return -1;
			if (imm)
				break;
			if (post(e, IBV_WR_SEND, 0, e->buf, e->size, 0, 0))
				return -1;
		} else {
			return rb_wait_disconnect(e);
		}
		if ((i & 63) == 0 && reap(e, 0))
			return -1;
	}
	return reap(e, 1) ? -1 : 0;
}

void rb_lat_start(struct rb_ep *e)
{
	e->lat_i = 0;
	e->lat_over = 0;
	e->lat_end = e->duration_ns ? rb_now() + e->duration_ns : 0;
}

int rb_lat_chunk(struct rb_ep *e, struct rb_sample *s, int n)
{
	char *last = e->buf + e->size - 1;
	uint64_t rrecv = e->raddr + e->size;
	uint32_t imm;
	int k;

	for (k = 0; k < n && !over(e); k++, e->lat_i++) {
		s[k].start = rb_now();
		switch (e->op) {
		case RB_WRITE:
			*last = (char)(e->lat_i + 1);
			if (post(e, IBV_WR_RDMA_WRITE, rrecv, e->buf, e->size, 0, 0) || spin(e, (char)(e->lat_i + 1)))
				return -1;
			break;
		case RB_SEND:
			if (post(e, IBV_WR_SEND, 0, e->buf, e->size, 0, 0) || recv_one(e, &imm))
				return -1;
			break;
		case RB_READ:
			if (post(e, IBV_WR_RDMA_READ, e->raddr, e->buf + e->size, e->size, 0, 1) || reap(e, 1))
				return -1;
			break;
		}
		if (reap(e, 0))
			return -1;
	}
	int64_t t_end = rb_now();
	for (int j = 0; j < k; j++) {
		int64_t next = j + 1 < k ? s[j + 1].start : t_end;
		s[j].lat = e->op == RB_READ ? next - s[j].start : (next - s[j].start) / 2;
	}
	return k;
}

int rb_lat_finish(struct rb_ep *e)
{
	char *last = e->buf + e->size - 1;
	uint64_t rrecv = e->raddr + e->size;
	// A run for a duration tells the responder it is over.
	if (e->duration_ns) {
		if (e->op == RB_WRITE) {
			uint64_t *one = (uint64_t *)(e->buf + 2 * e->size);
			*one = 1;
			if (post(e, IBV_WR_RDMA_WRITE, e->raddr + 2 * e->size, (char *)one, 8, 0, 0))
				return -1;
			*last = (char)(e->lat_i + 1);
			if (post(e, IBV_WR_RDMA_WRITE, rrecv, e->buf, e->size, 0, 1))
				return -1;
		} else if (e->op == RB_SEND) {
			if (post(e, IBV_WR_SEND, 0, e->buf, e->size, 1, 1))
				return -1;
		}
	}
	return reap(e, 1) ? -1 : 0;
}

// rb_wait_disconnect waits for the peer to disconnect (READ's passive side).
int rb_wait_disconnect(struct rb_ep *e)
{
	struct rdma_cm_event *ev;
	int64_t t = e->duration_ns ? e->duration_ns + e->timeout_ns : e->timeout_ns * 10;
	for (;;) {
		if (wait_event(e->ch, &ev, t, e->abort, "wait for the client to finish", e->err, sizeof e->err))
			return -1;
		int what = ev->event;
		rdma_ack_cm_event(ev);
		if (what == RDMA_CM_EVENT_DISCONNECTED) {
			e->connected = 0;
			return 0;
		}
	}
}

void rb_disconnect(struct rb_ep *e)
{
	if (e->id && e->connected)
		rdma_disconnect(e->id);
	e->connected = 0;
}

void rb_close(struct rb_ep *e)
{
	if (e->id && e->connected)
		rdma_disconnect(e->id);
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->buf)
		munmap(e->buf, e->buflen);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->listen_id)
		rdma_destroy_id(e->listen_id);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	e->id = e->listen_id = NULL;
	e->mr = NULL;
	e->scq = e->rcq = NULL;
	e->pd = NULL;
	e->buf = NULL;
	e->ch = NULL;
}

/* ---- rdma_cm connection setup ---- */

static void addrs(struct rdma_cm_id *id, struct rb_conn_side *c)
{
	struct sockaddr *s = rdma_get_local_addr(id), *d = rdma_get_peer_addr(id);
	struct sockaddr *sa[2] = { s, d };
	uint8_t *out[2] = { c->src, c->dst };
	uint16_t *port[2] = { &c->sport, &c->dport };
	for (int k = 0; k < 2; k++) {
		memset(out[k], 0, 16);
		if (sa[k]->sa_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)sa[k];
			out[k][10] = out[k][11] = 0xff;
			memcpy(out[k] + 12, &in->sin_addr, 4);
			*port[k] = ntohs(in->sin_port);
		} else if (sa[k]->sa_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa[k];
			memcpy(out[k], &in6->sin6_addr, 16);
			*port[k] = ntohs(in6->sin6_port);
		}
	}
}

static struct ibv_qp_init_attr conn_qp_attr(void)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	return qa;
}

#define STEP_BEGIN(c, k) ((c)->steps[k].start = rb_now())
#define STEP_END(c, k) ((c)->steps[k].dur = rb_now() - (c)->steps[k].start)

// rb_conn_client makes n connections one after the other, each step timed
// as cmtime times them: a call and, where rdma_cm answers with an event,
// until that event arrived. The PD and CQs are librdmacm's defaults, as
// cmtime's.
int rb_conn_client(const char *addr, int port, int n, struct rb_conn_side *out, int64_t timeout_ns,
		   volatile int *abort, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	if (resolve(addr, port, &ss, err, errlen))
		return -1;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		return fail(err, errlen, "rdma_create_event_channel: %s (is rdma_ucm loaded?)", strerror(errno));
	int tid = rb_gettid(), i, ret = -1;
	char what[128];
	for (i = 0; i < n; i++) {
		struct rb_conn_side *c = &out[i];
		struct rdma_cm_id *id = NULL;
		memset(c, 0, sizeof *c);
		c->tid = tid;
		STEP_BEGIN(c, RB_C_CREATE_ID);
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
			fail(err, errlen, "rdma_create_id: %s", strerror(errno));
			goto out;
		}
		STEP_END(c, RB_C_CREATE_ID);
		snprintf(what, sizeof what, "connection %d: resolve address %s", i + 1, addr);
		STEP_BEGIN(c, RB_C_RESOLVE_ADDR);
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000)) {
			fail(err, errlen, "%s: %s", what, strerror(errno));
			goto fail_id;
		}
		if (expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, timeout_ns, abort, what, err, errlen))
			goto fail_id;
		STEP_END(c, RB_C_RESOLVE_ADDR);
		snprintf(what, sizeof what, "connection %d: resolve route to %s", i + 1, addr);
		STEP_BEGIN(c, RB_C_RESOLVE_ROUTE);
		if (rdma_resolve_route(id, 2000)) {
			fail(err, errlen, "%s: %s", what, strerror(errno));
			goto fail_id;
		}
		if (expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, timeout_ns, abort, what, err, errlen))
			goto fail_id;
		STEP_END(c, RB_C_RESOLVE_ROUTE);
		addrs(id, c);
		struct ibv_qp_init_attr qa = conn_qp_attr();
		STEP_BEGIN(c, RB_C_CREATE_QP);
		if (rdma_create_qp(id, NULL, &qa)) {
			fail(err, errlen, "connection %d: rdma_create_qp: %s", i + 1, strerror(errno));
			goto fail_id;
		}
		STEP_END(c, RB_C_CREATE_QP);
		struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
					      .rnr_retry_count = 7 };
		snprintf(what, sizeof what, "connection %d: connect to %s:%d", i + 1, addr, port);
		STEP_BEGIN(c, RB_C_CONNECT);
		if (rdma_connect(id, &cp)) {
			fail(err, errlen, "%s: %s", what, strerror(errno));
			goto fail_qp;
		}
		if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, timeout_ns, abort, what, err, errlen))
			goto fail_qp;
		STEP_END(c, RB_C_CONNECT);
		snprintf(what, sizeof what, "connection %d: disconnect", i + 1);
		STEP_BEGIN(c, RB_C_DISCONNECT);
		if (rdma_disconnect(id)) {
			fail(err, errlen, "%s: %s", what, strerror(errno));
			goto fail_qp;
		}
		if (expect(ch, RDMA_CM_EVENT_DISCONNECTED, NULL, timeout_ns, abort, what, err, errlen))
			goto fail_qp;
		STEP_END(c, RB_C_DISCONNECT);
		STEP_BEGIN(c, RB_C_DESTROY);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		STEP_END(c, RB_C_DESTROY);
		continue;
fail_qp:
		rdma_destroy_qp(id);
fail_id:
		rdma_destroy_id(id);
		goto out;
	}
	ret = n;
out:
	rdma_destroy_event_channel(ch);
	return ret;
}

int rb_conn_listen(struct rb_conn_server *s, const char *addr, int port, int backlog, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	if (resolve(addr, port, &ss, err, errlen))
		return -1;
	if (!(s->ch = rdma_create_event_channel()))
		return fail(err, errlen, "rdma_create_event_channel: %s (is rdma_ucm loaded?)", strerror(errno));
	if (rdma_create_id(s->ch, &s->listen_id, NULL, RDMA_PS_TCP))
		return fail(err, errlen, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(s->listen_id, (struct sockaddr *)&ss))
		return fail(err, errlen, "rdma_bind_addr %s:%d: %s (no RDMA device has that address?)", addr, port,
			    strerror(errno));
	if (rdma_listen(s->listen_id, backlog))
		return fail(err, errlen, "rdma_listen %s:%d: %s", addr, port, strerror(errno));
	return 0;
}

// rb_conn_serve accepts n connections on one thread, driven by events, so
// that concurrent clients are served as they come; out[k] is the k-th
// connection request.
int rb_conn_serve(struct rb_conn_server *s, int n, struct rb_conn_side *out, int64_t timeout_ns,
		  volatile int *abort, char *err, size_t errlen)
{
	int tid = rb_gettid(), got = 0, gone = 0;
	while (gone < n) {
		struct rdma_cm_event *ev;
		if (wait_event(s->ch, &ev, timeout_ns, abort, "serve connections", err, errlen))
			return -1;
		struct rdma_cm_id *id = ev->id;
		struct rb_conn_side *c = id->context;
		int64_t t = rb_now();
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			if (got >= n) {
				rdma_reject(id, NULL, 0);
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				continue;
			}
			c = &out[got++];
			memset(c, 0, sizeof *c);
			c->tid = tid;
			id->context = c;
			addrs(id, c);
			struct ibv_qp_init_attr qa = conn_qp_attr();
			STEP_BEGIN(c, RB_S_CREATE_QP);
			if (rdma_create_qp(id, NULL, &qa)) {
				fail(err, errlen, "rdma_create_qp for a connection request: %s", strerror(errno));
				rdma_ack_cm_event(ev);
				return -1;
			}
			STEP_END(c, RB_S_CREATE_QP);
			struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
						      .rnr_retry_count = 7 };
			STEP_BEGIN(c, RB_S_ACCEPT);
			if (rdma_accept(id, &cp)) {
				fail(err, errlen, "rdma_accept: %s", strerror(errno));
				rdma_ack_cm_event(ev);
				return -1;
			}
			rdma_ack_cm_event(ev);
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			if (c)
				c->steps[RB_S_ACCEPT].dur = t - c->steps[RB_S_ACCEPT].start;
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			if (c) {
				c->steps[RB_S_DISCONNECT].start = t;
				rdma_disconnect(id);
				STEP_END(c, RB_S_DISCONNECT);
				STEP_BEGIN(c, RB_S_DESTROY);
			}
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			if (c)
				STEP_END(c, RB_S_DESTROY);
			gone++;
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			rdma_ack_cm_event(ev);
			break;
		default:
			fail(err, errlen, "serve connections: unexpected %s (status %d)", rdma_event_str(ev->event),
			     ev->status);
			rdma_ack_cm_event(ev);
			return -1;
		}
	}
	return got;
}

void rb_conn_close(struct rb_conn_server *s)
{
	if (s->listen_id)
		rdma_destroy_id(s->listen_id);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	s->listen_id = NULL;
	s->ch = NULL;
}

/* ---- control path ---- */

static struct ibv_context *open_dev(const char *name, char *err, size_t errlen)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	if (!l) {
		fail(err, errlen, "ibv_get_device_list: %s", strerror(errno));
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name)) {
			ctx = ibv_open_device(l[i]);
			if (!ctx)
				fail(err, errlen, "ibv_open_device %s: %s", name, strerror(errno));
			break;
		}
	if (!ctx && !*err)
		fail(err, errlen, "no RDMA device %s", name);
	ibv_free_device_list(l);
	return ctx;
}

#define OP(k, body)                                  \
	do {                                         \
		out[w].op = (k);                     \
		out[w].start = rb_now();             \
		body;                                \
		out[w].dur = rb_now() - out[w].start; \
		w++;                                 \
	} while (0)

// rb_ctrl_objects times one life of each object: the QP is connected to
// itself so that RTR and RTS are real transitions.
int rb_ctrl_objects(const char *dev, int port, int gid_index, struct rb_op_rec *out, char *err, size_t errlen)
{
	int n, w = 0, ret = -1;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_device *d = NULL;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	if (!l)
		return fail(err, errlen, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), dev))
			d = l[i];
	if (!d) {
		fail(err, errlen, "no RDMA device %s", dev);
		goto done;
	}
	OP(RB_OP_OPEN_DEVICE, ctx = ibv_open_device(d));
	if (!ctx) {
		fail(err, errlen, "ibv_open_device %s: %s", dev, strerror(errno));
		goto done;
	}
	struct ibv_port_attr pa;
	union ibv_gid gid;
	if (ibv_query_port(ctx, port, &pa)) {
		fail(err, errlen, "device %s has no port %d", dev, port);
		goto done;
	}
	if (ibv_query_gid(ctx, port, gid_index, &gid)) {
		fail(err, errlen, "device %s port %d has no GID at index %d", dev, port, gid_index);
		goto done;
	}
	OP(RB_OP_ALLOC_PD, pd = ibv_alloc_pd(ctx));
	if (!pd) {
		fail(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		goto done;
	}
	OP(RB_OP_CREATE_CQ, cq = ibv_create_cq(ctx, 16, NULL, NULL, 0));
	if (!cq) {
		fail(err, errlen, "ibv_create_cq: %s", strerror(errno));
		goto done;
	}
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	OP(RB_OP_CREATE_QP, qp = ibv_create_qp(pd, &qa));
	if (!qp) {
		fail(err, errlen, "ibv_create_qp: %s", strerror(errno));
		goto done;
	}
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int r;
	OP(RB_OP_MODIFY_INIT,
	   r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	if (r) {
		fail(err, errlen, "ibv_modify_qp to INIT: %s", strerror(r));
		goto done;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = port;
	a.ah_attr.dlid = pa.lid;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || gid.global.interface_id) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	OP(RB_OP_MODIFY_RTR, r = ibv_modify_qp(qp, &a,
					       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
						       IBV_QP_MIN_RNR_TIMER));
	if (r) {
		fail(err, errlen, "ibv_modify_qp to RTR: %s", strerror(r));
		goto done;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	OP(RB_OP_MODIFY_RTS, r = ibv_modify_qp(qp, &a,
					       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
	if (r) {
		fail(err, errlen, "ibv_modify_qp to RTS: %s", strerror(r));
		goto done;
	}
	OP(RB_OP_DESTROY_QP, r = ibv_destroy_qp(qp));
	qp = NULL;
	OP(RB_OP_DESTROY_CQ, r = ibv_destroy_cq(cq));
	cq = NULL;
	OP(RB_OP_DEALLOC_PD, r = ibv_dealloc_pd(pd));
	pd = NULL;
	OP(RB_OP_CLOSE_DEVICE, r = ibv_close_device(ctx));
	ctx = NULL;
	ret = w;
done:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(l);
	return ret;
}

// rb_ctrl_mr maps fresh memory (touched first when prefault is set, so that
// the registration only pins it) and times ibv_reg_mr and ibv_dereg_mr.
int rb_ctrl_mr(const char *dev, size_t size, int prefault, struct rb_op_rec *out, char *err, size_t errlen)
{
	int w = 0, ret = -1;
	struct ibv_context *ctx = open_dev(dev, err, errlen);
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	void *buf = MAP_FAILED;
	if (!ctx)
		return -1;
	if (!(pd = ibv_alloc_pd(ctx))) {
		fail(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		goto done;
	}
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fail(err, errlen, "mmap %zu bytes: %s", size, strerror(errno));
		goto done;
	}
	if (prefault)
		memset(buf, 1, size);
	out[w].size = out[w + 1].size = size;
	out[w].prefault = out[w + 1].prefault = prefault;
	int en = 0;
	OP(RB_OP_REG_MR, mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE); en = errno);
	if (!mr) {
		struct rlimit rl;
		if (en == ENOMEM && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur < size)
			fail(err, errlen,
			     "ibv_reg_mr of %zu bytes: the memlock limit (%llu bytes) is too small: raise it with ulimit -l",
			     size, (unsigned long long)rl.rlim_cur);
		else
			fail(err, errlen, "ibv_reg_mr of %zu bytes on %s: %s", size, dev, strerror(en));
		goto done;
	}
	int r;
	OP(RB_OP_DEREG_MR, r = ibv_dereg_mr(mr));
	(void)r;
	mr = NULL;
	ret = w;
done:
	if (mr)
		ibv_dereg_mr(mr);
	if (buf != MAP_FAILED)
		munmap(buf, size);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return ret;
}

void rb_devinfo(const char *dev, int port, int gid_index, struct rb_devinfo *d)
{
	int n;
	memset(d, 0, sizeof *d);
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l)
		return;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(l[i]);
		size_t used = strlen(d->names);
		snprintf(d->names + used, sizeof d->names - used, "%s%s", used ? " " : "", name);
		if (strcmp(name, dev))
			continue;
		d->found = 1;
		struct ibv_context *ctx = ibv_open_device(l[i]);
		if (!ctx)
			continue;
		struct ibv_device_attr da;
		if (!ibv_query_device(ctx, &da))
			d->nports = da.phys_port_cnt;
		struct ibv_port_attr pa;
		if (port >= 1 && port <= d->nports && !ibv_query_port(ctx, port, &pa)) {
			d->port_ok = 1;
			d->max_msg_sz = pa.max_msg_sz;
			d->port_state = pa.state;
			d->link_layer = pa.link_layer;
			union ibv_gid gid;
			static const union ibv_gid zero;
			if (gid_index >= 0 && gid_index < pa.gid_tbl_len && !ibv_query_gid(ctx, port, gid_index, &gid) &&
			    memcmp(&gid, &zero, sizeof gid))
				d->gid_ok = 1;
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(l);
}
