// Calls the probed ibv_alloc_pd N times and prints the CPU time it took
// (user and kernel, so a busy machine does not count): the benchmark of
// --stacks' cost per call.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *ibv_alloc_pd(void *ctx);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		ibv_alloc_pd(&n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
