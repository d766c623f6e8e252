// Calls the probed function from a helper and from main, then waits for
// its stdin to close: the test reads the stacks while it still runs.
#include <stdio.h>

void *ibv_create_qp(void *pd, void *attr);

__attribute__((noinline)) static void *setup_conn(void *pd)
{
	return ibv_create_qp(pd, NULL); /* SETUP_CONN_LINE */
}

int main(void)
{
	static int pd;
	setup_conn(&pd);
	ibv_create_qp(&pd, NULL); /* MAIN_LINE */
	while (getchar() != EOF)
		;
	return 0;
}
