// leaksites: leaks from three call sites, for the call-site tests and the
// docs: two RC QPs from a helper (setup_conn), a CQ from main, and an
// rdma_cm ID through librdmacm (make_id, bound to ADDR so it is on the
// device). Built with -g -fno-omit-frame-pointer (and a stripped copy).
// Usage: leaksites DEV ADDR
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static struct ibv_qp *setup_conn(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	return ibv_create_qp(pd, &attr); /* SITE setup_conn */
}

__attribute__((noinline)) static struct rdma_cm_id *make_id(const char *addr)
{
	struct rdma_cm_id *id = NULL;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) /* SITE make_id */
		return NULL;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1 || rdma_bind_addr(id, (struct sockaddr *)&sin))
		return NULL;
	return id;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: leaksites DEV ADDR\n");
		return 2;
	}
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), argv[1]))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "leaksites: cannot open %s\n", argv[1]);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0); /* SITE main */
	if (!pd || !cq || !setup_conn(pd, cq) || !setup_conn(pd, cq) || !make_id(argv[2])) {
		fprintf(stderr, "leaksites: allocation failed\n");
		return 1;
	}
	/* Half a second before it exits: rdmatrace reads a process's memory
	 * map while it runs, and on one emulated CPU a program that exits
	 * within milliseconds of its creates can be gone before (docs/leaks.md). */
	nanosleep(&(struct timespec){.tv_nsec = 500000000}, NULL);
	return 0; /* the kernel frees them at exit */
}
