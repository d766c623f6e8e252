package formats

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// SystemObject lays out the subsystem's settings with `rdma -j system
// show`'s keys: netns (shared or exclusive), privileged-qkey (when the
// kernel said) and copy-on-fork (off when it did not, as iproute2 prints
// it); monitor-mode is rdmatrace's own (whether the kernel sends device
// events).
func SystemObject(s *rdma.System) Object {
	var o Object
	o = o.strIf(s.NetNSMode != "", "netns", s.NetNSMode)
	if s.PrivilegedQKey != nil {
		o = o.boolean("privileged-qkey", *s.PrivilegedQKey)
	}
	// iproute2 prints copy-on-fork off where the kernel does not say (5.10
	// has no such attribute: no copy-on-fork either).
	o = o.boolean("copy-on-fork", s.CopyOnFork != nil && *s.CopyOnFork)
	if s.Monitor != nil {
		o = o.boolean("monitor-mode", *s.Monitor)
	}
	return o
}

// SystemText is iproute2's text: "netns shared copy-on-fork on".
func SystemText(s *rdma.System) string {
	var b strings.Builder
	for i, f := range SystemObject(s) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Key + " " + Sanitize(f.Text())) // booleans are on/off
	}
	return b.String() + "\n"
}
