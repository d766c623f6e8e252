// The C half of package verbs: connection setup over rdma_cm and the timing
// loops. One call runs a whole series, or a chunk of a latency series, and
// writes its samples into an array the caller allocated, so a measurement
// never pays a cgo call or the Go scheduler per iteration. Every time is CLOCK_MONOTONIC in nanoseconds, the
// clock of the tracer's bpf_ktime_get_ns.
#ifndef RB_H
#define RB_H

#include <stdint.h>
#include <stddef.h>

enum rb_op { RB_WRITE = 0, RB_SEND = 1, RB_READ = 2 };
enum { RB_OVER_COUNT = 1, RB_OVER_DURATION = 2 };

// rb_sample has bench.Sample's layout (two int64), so Go passes its slice.
struct rb_sample {
	int64_t start, lat;
};

// rb_ep is one end of a latency connection.
struct rb_ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	char *buf; // [send area: size][receive area: size][stop word: 64]
	size_t buflen, size;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t max_inline;
	int op, iters, connected;
	int64_t duration_ns, timeout_ns;
	volatile int *abort; // set by the other thread of a one-process run
	int64_t lat_i, lat_end; // the initiator's iterations so far, its -D deadline
	int lat_over;           // why its series is over: RB_OVER_COUNT, RB_OVER_DURATION (0: not yet)
	int tid;
	int outstanding; // sends not yet retired by a completion
	int batch;       // sends since the last signalled one
	char dev[64];
	char err[256];
};

// Parameters the client sends to the server in its connect private data.
struct rb_params {
	uint64_t addr;
	uint32_t rkey, size, iters, op;
	uint64_t duration_ns;
};

int64_t rb_now(void);
int rb_gettid(void);
int rb_pin(int cpu);
double rb_clock_cost(int n);
double rb_empty_poll_cost(struct rb_ep *e, int n);

int rb_server_listen(struct rb_ep *e, const char *addr, int port);
int rb_server_accept(struct rb_ep *e, const char *want_dev);
int rb_client_connect(struct rb_ep *e, const char *addr, int port, const char *want_dev, int op, size_t size,
		      int iters, int64_t duration_ns);
// The latency loop. The responder (the server) runs its side in one call.
// The initiator (the client) runs in chunks, one cgo call each and none per
// iteration: rb_lat_start; rb_lat_chunk fills s with up to n samples and
// returns how many, until e->lat_over says the series reached its count
// (iters; 0 with a duration: no count) or its duration; then rb_lat_finish
// tells the responder a run for a duration is over. -1 on error (e->err
// says why).
int rb_lat_respond(struct rb_ep *e);
void rb_lat_start(struct rb_ep *e);
int rb_lat_chunk(struct rb_ep *e, struct rb_sample *s, int n);
int rb_lat_finish(struct rb_ep *e);
int rb_wait_disconnect(struct rb_ep *e);
void rb_disconnect(struct rb_ep *e);
void rb_close(struct rb_ep *e);

// Connection setup benchmark: client steps and server steps.
enum { RB_C_CREATE_ID, RB_C_RESOLVE_ADDR, RB_C_RESOLVE_ROUTE, RB_C_CREATE_QP, RB_C_CONNECT, RB_C_DISCONNECT,
       RB_C_DESTROY, RB_C_NSTEPS };
enum { RB_S_CREATE_QP, RB_S_ACCEPT, RB_S_DISCONNECT, RB_S_DESTROY, RB_S_NSTEPS };

struct rb_step {
	int64_t start, dur;
};

struct rb_conn_side {
	int tid;
	uint8_t src[16], dst[16]; // IPv6 or IPv4-mapped
	uint16_t sport, dport;
	struct rb_step steps[RB_C_NSTEPS];
};

int rb_conn_client(const char *addr, int port, int n, struct rb_conn_side *out, int64_t timeout_ns,
		   volatile int *abort, char *err, size_t errlen);
struct rb_conn_server {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
};
int rb_conn_listen(struct rb_conn_server *s, const char *addr, int port, int backlog, char *err, size_t errlen);
int rb_conn_serve(struct rb_conn_server *s, int n, struct rb_conn_side *out, int64_t timeout_ns, volatile int *abort,
		  char *err, size_t errlen);
void rb_conn_close(struct rb_conn_server *s);

// Control path.
enum { RB_OP_OPEN_DEVICE, RB_OP_ALLOC_PD, RB_OP_CREATE_CQ, RB_OP_CREATE_QP, RB_OP_MODIFY_INIT, RB_OP_MODIFY_RTR,
       RB_OP_MODIFY_RTS, RB_OP_DESTROY_QP, RB_OP_DESTROY_CQ, RB_OP_DEALLOC_PD, RB_OP_CLOSE_DEVICE, RB_OP_REG_MR,
       RB_OP_DEREG_MR };
struct rb_op_rec {
	int op, prefault;
	int64_t size, start, dur;
};
// rb_ctrl_objects runs the object lifecycle once and appends to out (at
// least 11 free entries); returns entries written or -1.
int rb_ctrl_objects(const char *dev, int port, int gid_index, struct rb_op_rec *out, char *err, size_t errlen);
// rb_ctrl_mr registers and deregisters size bytes once; returns 2 or -1.
int rb_ctrl_mr(const char *dev, size_t size, int prefault, struct rb_op_rec *out, char *err, size_t errlen);

// Device facts for checking the user's choices before anything is created.
struct rb_devinfo {
	int found, nports, port_ok, gid_ok;
	uint32_t max_msg_sz;
	int port_state, link_layer;
	char names[512]; // the devices there are, for the error
};
void rb_devinfo(const char *dev, int port, int gid_index, struct rb_devinfo *d);

// The connection burst (burst.c): one rank's device context, PD and CQ,
// and its QPs.
enum { RB_B_OPEN_DEVICE, RB_B_ALLOC_PD, RB_B_CREATE_CQ, RB_B_DESTROY_CQ, RB_B_DEALLOC_PD, RB_B_CLOSE_DEVICE,
       RB_B_NSETUP };
// The steps of one QP: over verbs (RB_BV_*), over rdma_cm (RB_BC_*, cmtime's).
enum { RB_BV_CREATE, RB_BV_INIT, RB_BV_RTR, RB_BV_RTS, RB_BV_DESTROY, RB_BV_NSTEPS };
enum { RB_BC_CREATE_ID, RB_BC_RESOLVE_ADDR, RB_BC_RESOLVE_ROUTE, RB_BC_CREATE_QP, RB_BC_CONNECT, RB_BC_DISCONNECT,
       RB_BC_DESTROY, RB_BC_NSTEPS };
#define RB_B_MAXSTEPS 8
struct rb_burst_qp {
	uint32_t qpn, pad;
	struct rb_step steps[RB_B_MAXSTEPS];
};
// rb_burst is opaque here (burst.c): Go holds a pointer from
// rb_burst_new and reads the error of a failed call with rb_burst_err.
struct rb_burst;
struct rb_burst *rb_burst_new(void);
const char *rb_burst_err(struct rb_burst *b);
int rb_burst_tid(struct rb_burst *b);
void rb_burst_free(struct rb_burst *b);
int rb_burst_open(struct rb_burst *b, const char *dev, int port, int gid_index, int nqp, int cm, struct rb_step *setup);
enum { RB_ORDER_NCCL, RB_ORDER_PAIRS, RB_ORDER_PHASES };
int rb_burst_connect(struct rb_burst *b, struct rb_burst_qp *out, int order);
int rb_burst_destroy(struct rb_burst *b, struct rb_burst_qp *out);
int rb_burst_cm_listen(struct rb_burst *b, const char *addr, int port);
int rb_burst_cm_connect(struct rb_burst *b, struct rb_burst_qp *out, int window, int64_t timeout_ns);
int rb_burst_cm_destroy(struct rb_burst *b, struct rb_burst_qp *out, int64_t timeout_ns);
void rb_burst_close(struct rb_burst *b, struct rb_step *teardown);

#endif
