// Package buildver says which build a binary is: the version the Makefile
// stamped, else what the Go toolchain recorded of the source. rdmatrace
// and rdmabench print it with --version; the exporter serves it.
package buildver

import "runtime/debug"

// Version is stamped when it is set, else the build information's:
// the module version of a `go install ...@v1.2.3`, or the VCS revision
// (and "-dirty" for uncommitted changes) of a `go build` in a checkout.
func Version(stamped string) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo is Version's answer from bi.
func FromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := revision(bi)
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return "devel-" + rev + dirty
	}
	return "devel"
}

// Revision is the VCS revision the Go toolchain recorded, "" when none
// (a build outside a checkout).
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, _ := revision(bi)
	return rev
}

func revision(bi *debug.BuildInfo) (rev, dirty string) {
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
	return rev, dirty
}
