// qpattr: connects two RC QPs of one device to each other (a loopback
// pair) with the transport settings given, so that a test can see them at
// the modifies that set them:
//
//   qpattr [-d DEV] [-g SGID_INDEX] [-t TIMEOUT] [-c RETRY_CNT]
//          [-r RNR_RETRY] [-n MIN_RNR_TIMER] [-m PATH_MTU_BYTES] [-H]
//
// It prints "lqpn A B" once both QPs are in RTS, then exits, or with -H
// holds them until it is killed (a process for rdmatrace doctor --pid).
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum ibv_mtu mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	return IBV_MTU_1024;
}

int main(int argc, char **argv)
{
	const char *devname = "rxe0";
	int sgid = 0, timeout = 14, retry = 7, rnr_retry = 7, min_rnr = 12, mtu = 1024, hold = 0, opt;
	while ((opt = getopt(argc, argv, "d:g:t:c:r:n:m:H")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': sgid = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'c': retry = atoi(optarg); break;
		case 'r': rnr_retry = atoi(optarg); break;
		case 'n': min_rnr = atoi(optarg); break;
		case 'm': mtu = atoi(optarg); break;
		case 'H': hold = 1; break;
		default:
			fprintf(stderr, "usage: qpattr [-d DEV] [-g SGID_INDEX] [-t TIMEOUT] [-c RETRY_CNT] [-r RNR_RETRY] [-n MIN_RNR_TIMER] [-m PATH_MTU] [-H]\n");
			return 2;
		}
	}
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), devname))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "qpattr: cannot open %s\n", devname);
		return 1;
	}
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, sgid, &gid)) {
		fprintf(stderr, "qpattr: %s has no GID %d on port 1\n", devname, sgid);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp *qp[2] = {NULL, NULL};
	if (pd && cq) {
		qp[0] = ibv_create_qp(pd, &init);
		qp[1] = ibv_create_qp(pd, &init);
	}
	if (!qp[0] || !qp[1]) {
		fprintf(stderr, "qpattr: allocation failed\n");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
					.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
			perror("qpattr: modify to INIT");
			return 1;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = mtu_enum(mtu), .dest_qp_num = qp[1 - i]->qp_num,
			.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = min_rnr,
			.ah_attr = {.is_global = 1, .port_num = 1,
				    .grh = {.dgid = gid, .sgid_index = sgid, .hop_limit = 64}},
		};
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
			perror("qpattr: modify to RTR");
			return 1;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = retry,
					.rnr_retry = rnr_retry, .sq_psn = 0, .max_rd_atomic = 1};
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
			perror("qpattr: modify to RTS");
			return 1;
		}
	}
	printf("lqpn %u %u\n", qp[0]->qp_num, qp[1]->qp_num);
	fflush(stdout);
	if (hold)
		pause();
	for (int i = 0; i < 2; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
