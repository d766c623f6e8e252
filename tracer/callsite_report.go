package tracer

import (
	"fmt"
	"io"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// stacksAttached says, once loaded, whether --stacks has its probes: why
// not always, what they are with verbose.
func stacksAttached(t *Tracer, verbose bool, out io.Writer) {
	if t.StacksErr != nil {
		fmt.Fprintf(out, "rdmatrace: %s (objects are reported without their call sites)\n", termsafe.Sanitize(t.StacksErr.Error()))
		return
	}
	c := t.CallSites
	if c == nil || !verbose {
		return
	}
	for _, p := range c.Probed {
		fmt.Fprintf(out, "rdmatrace: --stacks probes %s\n", termsafe.Sanitize(p))
	}
	for _, p := range c.Problems {
		fmt.Fprintf(out, "rdmatrace: --stacks: %s\n", termsafe.Sanitize(p))
	}
}

// stacksSummary says how many probed calls were lost, when any were.
func stacksSummary(t *Tracer, out io.Writer) {
	if t.CallSites == nil {
		return
	}
	if n := t.CallSites.Drops(); n > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: --stacks lost %d calls (their ring was full): objects created in them have no call site\n", n)
	}
}

// followStacks limits the call-site probes to the program's cgroup, and
// notes its file, whose frames are then named even after it exits.
func (s *Session) followStacks(cgroup uint64, path string, out io.Writer) {
	if s.t == nil || s.t.CallSites == nil {
		return
	}
	s.t.CallSites.AddProgram(path)
	if cgroup == 0 {
		return
	}
	if err := s.t.CallSites.FollowCgroup(cgroup); err != nil {
		fmt.Fprintf(out, "rdmatrace: %s\n", termsafe.Sanitize(err.Error()))
	}
}
