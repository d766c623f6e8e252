/* pdhog DEV N: allocates up to N protection domains and then up to N
 * completion queues on DEV (neither needs locked memory, so any user may),
 * prints "pdhog: holding P PDs and C CQs", and holds them until killed:
 * an inventory nobody in particular owns, for the exporter's and the
 * start snapshot's bounds. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: pdhog DEV N\n");
		return 2;
	}
	long n = atol(argv[2]), pds = 0, cqs = 0;
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	for (int i = 0; devs && devs[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), argv[1]))
			ctx = ibv_open_device(devs[i]);
	if (!ctx) {
		fprintf(stderr, "pdhog: cannot open %s\n", argv[1]);
		return 1;
	}
	while (pds < n && ibv_alloc_pd(ctx))
		pds++;
	while (cqs < n && ibv_create_cq(ctx, 1, NULL, NULL, 0))
		cqs++;
	printf("pdhog: holding %ld PDs and %ld CQs\n", pds, cqs);
	fflush(stdout);
	for (;;)
		pause();
}
