// churn: create and destroy RDMA resources as fast as possible, to measure
// what the tracer delivers. Each round allocates a PD, a CQ and an MR and
// frees them again; it prints how many restrack events that makes. With
// "hold" after the round count it keeps what it allocates, until killed.
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	/* churn DEV N hold: allocate N PD+CQ+MR triples, say so, keep them
	 * until killed (the exporter's scrape at many live objects). */
	if (argc > 3 && !strcmp(argv[3], "hold")) {
		for (long r = 0; r < rounds; r++) {
			struct ibv_pd *pd = ibv_alloc_pd(ctx);
			struct ibv_cq *cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
			if (!pd || !cq || !ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) {
				fprintf(stderr, "churn: hold %ld: allocation failed\n", r);
				return 1;
			}
		}
		printf("holding %ld objects\n", rounds * 3);
		fflush(stdout);
		for (;;)
			pause();
	}
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
