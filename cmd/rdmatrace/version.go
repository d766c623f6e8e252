package main

import (
	"runtime/debug"
	"strings"
)

// version is stamped by the Makefile: -ldflags '-X main.version=...'.
var version string

// versionString is the stamped version, else what the Go toolchain
// recorded of the source: the VCS revision (and "-dirty" for uncommitted
// changes) of a `go build` in a checkout, the module version of a
// `go install ...@v1.2.3`.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return buildInfoVersion(bi)
}

func buildInfoVersion(bi *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return "devel-" + rev + dirty
	}
	return "devel"
}

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
