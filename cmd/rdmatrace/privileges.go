package main

// needsRoot is what a command that loads the tracer says to a user
// without the privileges: the command's name, what it needs them for, and
// how to get them. The tracer's own wording (tracer.ErrPrivileges) names
// trace alone.
func needsRoot(name string) string {
	const caps = "needs root: loading its BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), " +
		"and CAP_SYS_RESOURCE on kernels that charge BPF memory to RLIMIT_MEMLOCK; "
	if name == "exporter" {
		return name + ": " + caps + "run it with sudo, or with --no-trace for the resource counts alone"
	}
	return name + ": " + caps + "run it with sudo"
}
