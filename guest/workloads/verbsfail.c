// verbsfail asks a device for what it refuses, one way a run, and prints
// what it asked, the device's limit and the errno on one line:
//
//	verbsfail DEV cq           ibv_create_cq with max_cqe+1 entries
//	verbsfail DEV qp           ibv_create_qp with max_qp_wr+1 send WRs
//	verbsfail DEV sge          ibv_create_qp with max_sge+1 send SGEs
//	verbsfail DEV mr BYTES     ibv_reg_mr of BYTES (under a small ulimit -l)
//	verbsfail DEV objects N    PDs, CQs and MRs in turn, up to N, until one
//	                           is refused (under an rdma cgroup's hca_object),
//	                           then holds them for 2 s
//
// Output: "refused OP errno=E asked=A limit=L" for the call refused, or
// "granted OP" when nothing was refused; exit 0 when a call was refused.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

static struct ibv_context *open_dev(const char *name)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			struct ibv_context *ctx = ibv_open_device(list[i]);
			if (!ctx) {
				printf("refused open_device errno=%d asked=1 limit=0\n", errno);
				fflush(stdout);
				sleep(2); /* as a program that failed does: alive while its failure is read */
				exit(0);
			}
			return ctx;
		}
	}
	fprintf(stderr, "verbsfail: no device %s\n", name);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: verbsfail DEV cq|qp|sge|mr BYTES|objects N\n");
		return 2;
	}
	struct ibv_context *ctx = open_dev(argv[1]);
	struct ibv_device_attr attr;
	if (ibv_query_device(ctx, &attr)) {
		perror("ibv_query_device");
		return 2;
	}
	const char *what = argv[2];
	if (strcmp(what, "cq") == 0) {
		int cqe = attr.max_cqe + 1;
		struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
		if (cq) {
			printf("granted create_cq\n");
			return 1;
		}
		printf("refused create_cq errno=%d asked=%d limit=%d\n", errno, cqe, attr.max_cqe);
		return 0;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd) {
		printf("refused alloc_pd errno=%d asked=1 limit=0\n", errno);
		return 0;
	}
	if (strcmp(what, "qp") == 0) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!cq) {
			perror("ibv_create_cq");
			return 2;
		}
		struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = attr.max_qp_wr + 1, .max_recv_wr = 16,
						      .max_send_sge = 1, .max_recv_sge = 1}};
		struct ibv_qp *qp = ibv_create_qp(pd, &qa);
		if (qp) {
			printf("granted create_qp\n");
			return 1;
		}
		printf("refused create_qp errno=%d asked=%d limit=%d\n", errno, attr.max_qp_wr + 1, attr.max_qp_wr);
		return 0;
	}
	if (strcmp(what, "sge") == 0) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!cq) {
			perror("ibv_create_cq");
			return 2;
		}
		struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 16, .max_recv_wr = 16,
						      .max_send_sge = attr.max_sge + 1, .max_recv_sge = 1}};
		struct ibv_qp *qp = ibv_create_qp(pd, &qa);
		if (qp) {
			printf("granted create_qp\n");
			return 1;
		}
		printf("refused create_qp errno=%d asked=%d limit=%d\n", errno, attr.max_sge + 1, attr.max_sge);
		return 0;
	}
	if (strcmp(what, "mr") == 0 && argc > 3) {
		size_t len = strtoull(argv[3], NULL, 0);
		void *buf = calloc(1, len);
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
		if (mr) {
			printf("granted reg_mr\n");
			return 1;
		}
		printf("refused reg_mr errno=%d asked=%zu limit=0\n", errno, len);
		return 0;
	}
	if (strcmp(what, "objects") == 0 && argc > 3) {
		int n = atoi(argv[3]);
		static char buf[4096];
		for (int i = 1; i < n; i++) { /* the PD above was the first */
			const char *op;
			int ok;
			switch (i % 3) {
			case 0:
				op = "alloc_pd";
				ok = ibv_alloc_pd(ctx) != NULL;
				break;
			case 1:
				op = "create_cq";
				ok = ibv_create_cq(ctx, 4, NULL, NULL, 0) != NULL;
				break;
			default:
				op = "reg_mr";
				ok = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) != NULL;
			}
			if (!ok) {
				printf("refused %s errno=%d asked=%d limit=0\n", op, errno, i + 1);
				fflush(stdout);
				sleep(2); /* holding what it made, as a program that failed does */
				return 0;
			}
		}
		printf("granted objects\n");
		return 1;
	}
	fprintf(stderr, "verbsfail: unknown request %s\n", what);
	return 2;
}
