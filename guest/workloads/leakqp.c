// leakqp: creates a PD, a CQ and an RC QP and exits without destroying
// them (with "clean", it destroys them first). It prints the QP number, so
// a test can look for it in rdmatrace's leak report. With "hold", it keeps
// them until it is killed (a holder to place in a container).
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "rxe0";
	int clean = argc > 2 && !strcmp(argv[2], "clean");
	int hold = argc > 2 && !strcmp(argv[2], "hold");
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), devname))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "leakqp: cannot open %s\n", devname);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &attr) : NULL;
	if (!qp) {
		fprintf(stderr, "leakqp: allocation failed\n");
		return 1;
	}
	printf("lqpn %u\n", qp->qp_num);
	fflush(stdout);
	if (hold)
		pause();
	if (clean) {
		ibv_destroy_qp(qp);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
	}
	return 0; /* without "clean": the kernel frees them at exit */
}
