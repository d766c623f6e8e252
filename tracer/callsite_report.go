package tracer

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// stacksAttached says, once loaded, whether --stacks has its probes: why
// not always; what could not be probed always (each file refused, with
// why, the first few without verbose); what is probed with verbose.
func stacksAttached(t *Tracer, verbose bool, out io.Writer) {
	if t.StacksErr != nil {
		fmt.Fprintf(out, "rdmatrace: %s (objects are reported without their call sites)\n", termsafe.Sanitize(t.StacksErr.Error()))
		return
	}
	c := t.CallSites
	if c == nil {
		return
	}
	c.setOut(out)
	if verbose {
		for _, p := range c.Probed {
			fmt.Fprintf(out, "rdmatrace: --stacks probes %s\n", termsafe.Sanitize(p))
		}
	}
	shown := len(c.Problems)
	if !verbose {
		shown = min(shown, maxProblemsShown)
	}
	for _, p := range c.Problems[:shown] {
		fmt.Fprintf(out, "rdmatrace: --stacks: %s\n", termsafe.Sanitize(p))
	}
	if n := len(c.Problems) - shown; n > 0 {
		fmt.Fprintf(out, "rdmatrace: --stacks: %d more problems (-v lists them)\n", n)
	}
	c.flushWarnings()
}

// maxProblemsShown are the problems of the library scan said without -v.
const maxProblemsShown = 3

// stacksSummary says how many probed calls were lost, when any were, and
// what is left to say of the files.
func stacksSummary(t *Tracer, out io.Writer) {
	if t.CallSites == nil {
		return
	}
	t.CallSites.flushWarnings()
	if n := t.CallSites.unsaid(); n > 0 {
		fmt.Fprintf(out, "rdmatrace: --stacks: %d more files had problems (not listed)\n", n)
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

// warnings are what --stacks has to say while it runs (a file whose
// names were given up, or too slow), each once, a bounded number of
// lines. Any goroutine adds them; the event loop writes them out (on its
// next create, and at the end), as every other line of the session.
type warnings struct {
	wmu     sync.Mutex
	out     io.Writer
	queue   []string
	said    map[string]bool
	lines   []string // every line kept, for tests
	over    int      // lines past maxWarnings
	pending atomic.Bool
}

// maxWarnings bounds the lines said while running.
const maxWarnings = 20

// warn queues line, once for key.
func (w *warnings) warn(key, line string) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.said[key] {
		return
	}
	if w.said == nil {
		w.said = map[string]bool{}
	}
	w.said[key] = true
	if len(w.lines) >= maxWarnings {
		w.over++
		return
	}
	w.lines = append(w.lines, line)
	w.queue = append(w.queue, line)
	w.pending.Store(true)
}

// setOut is where the lines go from now on.
func (w *warnings) setOut(out io.Writer) {
	w.wmu.Lock()
	w.out = out
	w.wmu.Unlock()
}

// flushWarnings writes out the lines queued, when there is somewhere to.
func (w *warnings) flushWarnings() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.out == nil {
		return
	}
	for _, l := range w.queue {
		fmt.Fprintf(w.out, "rdmatrace: --stacks: %s\n", termsafe.Sanitize(l))
	}
	w.queue = w.queue[:0]
	w.pending.Store(false)
}

// unsaid is how many lines were past the bound.
func (w *warnings) unsaid() int {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.over
}

// Warnings are the lines said (or to be) while running.
func (w *warnings) Warnings() []string {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return append([]string(nil), w.lines...)
}
