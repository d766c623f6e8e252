// churn: create and destroy RDMA resources as fast as possible, to measure
// what the tracer delivers. Each round allocates a PD, a CQ and an MR and
// frees them again; it prints how many restrack events that makes.
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "rxe0";
	long rounds = argc > 2 ? atol(argv[2]) : 10000;
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), devname))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "churn: cannot open %s\n", devname);
		return 1;
	}
	static char buf[4096];
	for (long r = 0; r < rounds; r++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (!pd || !cq || !mr) {
			fprintf(stderr, "churn: round %ld: allocation failed\n", r);
			return 1;
		}
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
	}
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	/* Per round: PD and CQ create, begin_del, commit_del (3 each); MR
	 * create and del (2). The context: create and del (2). */
	printf("rounds %ld events %ld\n", rounds, rounds * 8 + 2);
	return 0;
}
