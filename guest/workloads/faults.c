// faults makes one transport fault happen on purpose, on an RC pair of
// its own, and prints what the program saw, for the fault corpus:
//
//	faults DEV rnr            a send to a QP with no receive posted
//	                          (rnr_retry 0): RNR retries exhausted
//	faults DEV rkey           an RDMA write with a wrong rkey: remote access error
//	faults DEV lkey           an RDMA read into a buffer given a wrong lkey: local
//	                          protection error
//	faults DEV dereg          RDMA writes to an MR, the MR deregistered, one more
//	                          write: remote access error
//	faults DEV cqoverrun      more completions than the CQ holds, none polled:
//	                          the CQ's async CQ_ERR
//	faults DEV srqlimit       an SRQ armed with a limit, drained by sends: the
//	                          async SRQ_LIMIT_REACHED, then RNR retries
//	                          exhausted once it is empty
//	faults DEV retry ADDR     a QP connected to QP 1234 at ADDR, whose packets
//	                          nobody answers (the test gives ADDR a static
//	                          neighbour and drops what goes to it): transport
//	                          retries exhausted
//	faults DEV half writer|target
//	                          one end of a pair across two processes: it prints
//	                          "qpn N rkey R addr A", reads its peer's line on
//	                          stdin and connects to it; the writer RDMA-writes
//	                          to the target every 10 ms until a write fails
//	                          (the test kills the target): transport retries
//	                          exhausted; the target waits to be killed
//	faults reject ADDR PORT   an rdma_cm listener that rejects each connect
//	                          request with private data; it prints
//	                          "listening" and exits after one rejection
//
// Output: "qpn N" for the QP that failed, "wc STATUS" for its first error
// completion (ibv_wc_status_str's number), "event NAME" for an async event;
// exit 0 when the fault happened as asked.
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	int gid_index;
	char buf[4096];
};

static void die(const char *what)
{
	fprintf(stderr, "faults: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **devs = ibv_get_device_list(NULL);
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), name)) {
			struct ibv_context *ctx = ibv_open_device(devs[i]);
			if (!ctx)
				die("ibv_open_device");
			return ctx;
		}
	fprintf(stderr, "faults: no device %s\n", name);
	exit(2);
}

// ipv4_gid finds the port's GID of an IPv4 address (::ffff:a.b.c.d),
// RoCE v2 where there is one: the one rdma_cm would use.
static int ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	int found = -1;
	for (int i = 0; i < 64; i++) {
		union ibv_gid g;
		if (ibv_query_gid(ctx, 1, i, &g))
			break;
		if (memcmp(g.raw, mapped, 12) == 0) {
			*gid = g;
			found = i; // the last one: rxe lists RoCE v1 before v2
		}
	}
	if (found < 0) {
		fprintf(stderr, "faults: no IPv4 GID on %s\n", ibv_get_device_name(ctx->device));
		exit(2);
	}
	return found;
}

static void make_end(struct end *e, struct ibv_context *ctx, int cqe, int with_srq)
{
	e->ctx = ctx;
	e->gid_index = ipv4_gid(ctx, &e->gid);
	if (!(e->pd = ibv_alloc_pd(ctx)))
		die("ibv_alloc_pd");
	if (!(e->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0)))
		die("ibv_create_cq");
	if (with_srq) {
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
		if (!(e->srq = ibv_create_srq(e->pd, &sa)))
			die("ibv_create_srq");
	}
	struct ibv_qp_init_attr init = {
		.send_cq = e->cq, .recv_cq = e->cq, .srq = e->srq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	if (!(e->qp = ibv_create_qp(e->pd, &init)))
		die("ibv_create_qp");
	e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!e->mr)
		die("ibv_reg_mr");
}

// connect_one moves e's QP to RTS, connected to QP qpn at gid.
static void connect_one(struct end *e, uint32_t qpn, union ibv_gid gid, int timeout, int retry, int rnr_retry)
{
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				   .qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(e->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = qpn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = gid, .sgid_index = e->gid_index, .hop_limit = 64}},
	};
	if (ibv_modify_qp(e->qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = retry,
				  .rnr_retry = rnr_retry, .max_rd_atomic = 1};
	if (ibv_modify_qp(e->qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

// connect_pair connects a's QP and b's to each other.
static void connect_pair(struct end *a, struct end *b, int timeout, int retry, int rnr_retry)
{
	connect_one(a, b->qp->qp_num, b->gid, timeout, retry, rnr_retry);
	connect_one(b, a->qp->qp_num, a->gid, timeout, retry, rnr_retry);
}

static void post_recv(struct end *e)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;
	int err = e->srq ? ibv_post_srq_recv(e->srq, &wr, &bad) : ibv_post_recv(e->qp, &wr, &bad);
	if (err) {
		errno = err;
		die("post recv");
	}
}

static void post(struct end *e, enum ibv_wr_opcode op, uint32_t lkey, struct end *to, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED}, *bad;
	if (to) {
		wr.wr.rdma.remote_addr = (uintptr_t)to->buf;
		wr.wr.rdma.rkey = rkey;
	}
	int err = ibv_post_send(e->qp, &wr, &bad);
	if (err) {
		errno = err;
		die("ibv_post_send");
	}
}

// wait_wc polls cq for a completion of qp, 10 s at most, and returns its status.
static int wait_wc(struct ibv_cq *cq, struct ibv_qp *qp)
{
	for (int i = 0; i < 10000; i++) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1 && wc.qp_num == qp->qp_num)
			return wc.status;
		if (n == 0)
			usleep(1000);
	}
	fprintf(stderr, "faults: no completion in 10 s\n");
	exit(1);
}

// fails waits for a's first completion, which must be an error, and says so.
static int fails(struct end *a)
{
	int st = wait_wc(a->cq, a->qp);
	printf("qpn %u\nwc %d %s\n", a->qp->qp_num, st, ibv_wc_status_str(st));
	fflush(stdout);
	return st == IBV_WC_SUCCESS;
}

// async waits 10 s at most for an async event of ctx named want.
static int async(struct ibv_context *ctx, enum ibv_event_type want)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	for (int left = 10000; left > 0; left -= 100) {
		if (poll(&p, 1, 100) == 1) {
			struct ibv_async_event ev;
			if (ibv_get_async_event(ctx, &ev))
				die("ibv_get_async_event");
			enum ibv_event_type got = ev.event_type;
			ibv_ack_async_event(&ev);
			printf("event %s\n", ibv_event_type_str(got));
			fflush(stdout);
			if (got == want)
				return 0;
		}
	}
	fprintf(stderr, "faults: no %s in 10 s\n", ibv_event_type_str(want));
	return 1;
}

static int reject(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(atoi(port))};
	inet_pton(AF_INET, addr, &sin.sin_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)&sin) || rdma_listen(id, 1))
		die("rdma_bind_addr/rdma_listen");
	printf("listening\n");
	fflush(stdout);
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			static const char why[] = "busy: try later";
			if (rdma_reject(ev->id, why, sizeof(why)))
				die("rdma_reject");
			printf("rejected\n");
			fflush(stdout);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(id);
			rdma_destroy_event_channel(ch);
			return 0;
		}
		rdma_ack_cm_event(ev);
	}
	die("rdma_get_cm_event");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: faults DEV rnr|rkey|lkey|dereg|cqoverrun|srqlimit | faults DEV retry ADDR | faults reject ADDR PORT\n");
		return 2;
	}
	if (!strcmp(argv[1], "reject") && argc > 3)
		return reject(argv[2], argv[3]);
	const char *what = argv[2];
	struct ibv_context *ctx = open_dev(argv[1]);
	static struct end a, b;
	if (!strcmp(what, "retry") && argc > 3) {
		// A peer that is not there: its GID made of ADDR, QP 1234.
		make_end(&a, ctx, 16, 0);
		b.gid = a.gid;
		if (inet_pton(AF_INET, argv[3], &b.gid.raw[12]) != 1) {
			fprintf(stderr, "faults: %s is no IPv4 address\n", argv[3]);
			return 2;
		}
		// timeout 10 (4 ms) and one retry: the failure in tens of ms.
		connect_one(&a, 1234, b.gid, 10, 1, 1);
		post(&a, IBV_WR_SEND, a.mr->lkey, NULL, 0);
		return fails(&a);
	}
	if (!strcmp(what, "half") && argc > 3) {
		make_end(&a, ctx, 16, 0);
		printf("qpn %u rkey %u addr %llu\n", a.qp->qp_num, a.mr->rkey, (unsigned long long)(uintptr_t)a.buf);
		fflush(stdout);
		unsigned qpn, rkey;
		unsigned long long raddr;
		if (scanf("%u %u %llu", &qpn, &rkey, &raddr) != 3) {
			fprintf(stderr, "faults: no peer line on stdin\n");
			return 2;
		}
		connect_one(&a, qpn, a.gid, 10, 1, 1);
		printf("rts\n");
		fflush(stdout);
		if (strcmp(argv[3], "writer")) {
			pause();
			return 0;
		}
		for (;;) {
			struct ibv_sge sge = {.addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey};
			struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
						 .send_flags = IBV_SEND_SIGNALED}, *bad;
			wr.wr.rdma.remote_addr = raddr;
			wr.wr.rdma.rkey = rkey;
			if (ibv_post_send(a.qp, &wr, &bad))
				die("ibv_post_send");
			int st = wait_wc(a.cq, a.qp);
			if (st != IBV_WC_SUCCESS) {
				printf("qpn %u\nwc %d %s\n", a.qp->qp_num, st, ibv_wc_status_str(st));
				return 0;
			}
			usleep(10000);
		}
	}
	int srq = !strcmp(what, "srqlimit");
	make_end(&a, ctx, !strcmp(what, "cqoverrun") ? 1 : 16, 0);
	make_end(&b, ctx, 16, srq);
	connect_pair(&a, &b, 14, 7, 0);
	if (!strcmp(what, "rnr")) {
		post(&a, IBV_WR_SEND, a.mr->lkey, NULL, 0);
		return fails(&a);
	}
	if (!strcmp(what, "rkey")) {
		post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, &b, b.mr->rkey ^ 0x5a5a00);
		return fails(&a);
	}
	if (!strcmp(what, "lkey")) {
		post(&a, IBV_WR_RDMA_READ, a.mr->lkey ^ 0x5a5a00, &b, b.mr->rkey);
		return fails(&a);
	}
	if (!strcmp(what, "dereg")) {
		for (int i = 0; i < 3; i++) {
			post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, &b, b.mr->rkey);
			if (wait_wc(a.cq, a.qp) != IBV_WC_SUCCESS) {
				fprintf(stderr, "faults: a write failed before the deregistration\n");
				return 1;
			}
		}
		uint32_t rkey = b.mr->rkey;
		if (ibv_dereg_mr(b.mr))
			die("ibv_dereg_mr");
		post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, &b, rkey);
		return fails(&a);
	}
	if (!strcmp(what, "cqoverrun")) {
		// b's receives complete on b's CQ; a's sends fill a's CQ of one
		// entry, which nobody polls.
		for (int i = 0; i < 4; i++)
			post_recv(&b);
		for (int i = 0; i < 4; i++)
			post(&a, IBV_WR_SEND, a.mr->lkey, NULL, 0);
		printf("qpn %u\n", a.qp->qp_num);
		return async(ctx, IBV_EVENT_CQ_ERR);
	}
	if (srq) {
		struct ibv_srq_attr sa = {.srq_limit = 2};
		for (int i = 0; i < 3; i++)
			post_recv(&b);
		if (ibv_modify_srq(b.srq, &sa, IBV_SRQ_LIMIT))
			die("ibv_modify_srq");
		int st = IBV_WC_SUCCESS;
		for (int i = 0; i < 4 && st == IBV_WC_SUCCESS; i++) {
			post(&a, IBV_WR_SEND, a.mr->lkey, NULL, 0);
			st = wait_wc(a.cq, a.qp);
		}
		printf("qpn %u\nwc %d %s\n", a.qp->qp_num, st, ibv_wc_status_str(st));
		fflush(stdout);
		return async(ctx, IBV_EVENT_SRQ_LIMIT_REACHED) || st == IBV_WC_SUCCESS;
	}
	fprintf(stderr, "faults: unknown fault %s\n", what);
	return 2;
}
