package main

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/buildver"
)

// version is stamped by the Makefile: -ldflags '-X main.version=...'.
var version string

// versionString is the stamped version, else what the Go toolchain
// recorded of the source (buildver).
func versionString() string { return buildver.Version(version) }

// exitStatus is the EXIT STATUS section of a command's help: 0, then
// what 1 and 2 mean for it ("" for the usual), then the command's own
// statuses in extra, each "N  meaning".
func exitStatus(one, two string, extra ...string) string {
	if one == "" {
		one = "an error: no RDMA netlink, no permission, a part of the data could not be read"
	}
	if two == "" {
		two = "usage error: an unknown command, flag, argument or value"
	}
	var b strings.Builder
	b.WriteString("   0  success\n")
	b.WriteString("   1  " + one + "\n")
	b.WriteString("   2  " + two + "\n")
	for _, e := range extra {
		b.WriteString("   " + e + "\n")
	}
	return b.String()
}
