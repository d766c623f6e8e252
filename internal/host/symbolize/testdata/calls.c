// Symbolizer test program: a call in a helper and one in main.
int sink(int x);

__attribute__((noinline)) int sink(int x)
{
	return x + 1;
}

__attribute__((noinline)) static int helper(int x)
{
	return sink(x) * 2; /* HELPER_CALL */
}

int main(int argc, char **argv)
{
	(void)argv;
	return helper(argc) + sink(3); /* MAIN_CALL */
}
