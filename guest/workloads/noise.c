// noise: the correlation test's disturbance, at known times. Prints each
// action's interval in CLOCK_MONOTONIC ns (the clock of the samples and of
// the tracer), one line each:
//   noise DEV MB COUNT GAP_MS   register COUNT MRs of MB MiB of untouched
//                               memory and create a QP with each, GAP_MS apart
//                               ("reg START END" per registration + QP)
//   noise hog CPU MS COUNT GAP_MS   spin on CPU for MS, COUNT times, SCHED_FIFO
//                               ("hog START END")
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static long long start0;

static int hog(int cpu, int ms, int count, int gap)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("noise: sched_setaffinity");
		return 1;
	}
	/* Real-time, so that each spin takes the CPU from the benchmark for
	 * its whole length: as an ordinary task it shared the CPU as the
	 * scheduler saw fit, which under TCG was often not at all. 100 ms is
	 * well inside the kernel's real-time budget (950 ms a second). */
	struct sched_param sp = {.sched_priority = 1};
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("noise: sched_setscheduler SCHED_FIFO");
		return 1;
	}
	printf("setup %lld %lld\n", start0, now()); /* exec and pinning */
	fflush(stdout);
	for (int i = 0; i < count; i++) {
		sleep_ms(gap);
		long long start = now(), end = start + ms * 1000000LL;
		while (now() < end)
			;
		printf("hog %lld %lld\n", start, now());
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	start0 = now();
	if (argc == 6 && !strcmp(argv[1], "hog"))
		return hog(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc != 5) {
		fprintf(stderr, "usage: noise DEV MB COUNT GAP_MS | noise hog CPU MS COUNT GAP_MS\n");
		return 2;
	}
	const char *devname = argv[1];
	size_t len = (size_t)atoi(argv[2]) << 20;
	int count = atoi(argv[3]), gap = atoi(argv[4]);
	long long setup = now(); /* opening the device is noise too */
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), devname))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "noise: cannot open %s\n", devname);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq) {
		fprintf(stderr, "noise: PD/CQ allocation failed\n");
		return 1;
	}
	printf("setup %lld %lld\n", setup, now());
	fflush(stdout);
	for (int i = 0; i < count; i++) {
		sleep_ms(gap);
		long long start = now(); /* the whole burst, free included */
		char *buf = malloc(len); /* untouched: registration faults every page in */
		struct ibv_mr *mr = buf ? ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
		struct ibv_qp_init_attr attr = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &attr);
		if (!mr || !qp) {
			fprintf(stderr, "noise: reg_mr of %zu bytes or create_qp failed (ulimit -l?)\n", len);
			return 1;
		}
		ibv_destroy_qp(qp);
		ibv_dereg_mr(mr);
		free(buf);
		printf("reg %lld %lld\n", start, now());
		fflush(stdout);
	}
	long long teardown = now();
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("teardown %lld %lld\n", teardown, now());
	return 0;
}
