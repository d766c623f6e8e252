package formats

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func ms(d time.Duration) uint64 {
	if d < 0 {
		return 0
	}
	return uint64(d / time.Millisecond)
}

// FindingObject lays out a leak finding for `rdmatrace leaks -j`: "report"
// says what it is, then the tracer's keys for the resource (res, ifname,
// id/lqpn, pid, comm, kern-name) and "age" in seconds.
func FindingObject(f *rdma.Finding) Object {
	o := FindingFields(f)
	if f.By.PID != 0 {
		o = o.num("by-pid", uint64(f.By.PID)).str("by-comm", f.By.Comm)
	}
	return o
}

// FindingFields is FindingObject without the unregistering task.
func FindingFields(f *rdma.Finding) Object {
	o := Object{}.str("report", f.Report.String())
	o = append(o, timeField("time", f.Time))
	e := &f.Res
	switch f.Report {
	case rdma.LeakWaiting:
		o = o.str("ifname", e.DevName).append(Field{Key: "blocked", Kind: Secs, Num: ms(f.Blocked)})
		switch {
		case e.Has(rdma.EvHasOwner):
			o = o.num("pid", uint64(e.Owner.PID)).str("comm", e.Owner.Comm).place(e.Owner.Place)
		case e.Owner.KernName != "":
			o = o.str("comm", e.Owner.KernName) // as iproute2 writes a kernel owner: comm without pid
		default:
			return o
		}
		o = o.num("resources", uint64(f.Resources))
		for _, h := range f.Held {
			o = o.num("held-"+h.Res.String(), uint64(h.N))
		}
		if e.Has(rdma.EvHasOwner) {
			o = o.list("files", append([]string{}, f.Files...))
		}
		return o
	case rdma.LeakUnregistered:
		o = o.str("ifname", e.DevName)
		if f.Took > 0 {
			o = o.append(Field{Key: "took", Kind: Secs, Num: ms(f.Took)})
		}
		return o.num("freed", uint64(f.Freed)).num("freed-at-exit", uint64(f.FreedAtExit)).
			num("freed-by-unregister", uint64(f.FreedByUnregister)).num("left", uint64(f.Left))
	case rdma.LeakPortBusy:
		// The event's own keys (func, src-addr, status, holders...).
		return append(o, AppendEventObject(nil, e)[1:]...)
	}
	for _, fl := range AppendEventObject(nil, e)[2:] { // without time and event
		if fl.Key == "actor-pid" || fl.Key == "actor-comm" || (fl.Key == "cleanup" && f.Report != rdma.LeakExitCleanup) ||
			(fl.Key == "id" && e.Type == rdma.ResQP) { // a QP is named by its lqpn
			continue
		}
		o = append(o, fl)
	}
	if unbound(e) {
		o = o.boolean("unbound", true)
	}
	o = o.append(Field{Key: "age", Kind: Secs, Num: ms(f.Age)})
	if f.AgeAtLeast {
		o = o.boolean("pre-existing", true)
	}
	if n := diedInError(e); n != "" {
		o = o.str("note", n)
	}
	return o
}

// diedInError is the note of a QP left behind in an error state: the
// live table saw it moved to ERR or SQE before it was left, so the
// program may have given up on it after a failure rather than forgotten
// it. "" for the rest.
func diedInError(e *rdma.Event) string {
	if e.Type != rdma.ResQP || !e.Given(rdma.HasState) {
		return ""
	}
	switch e.QPState {
	case rdma.QPStateErr, rdma.QPStateSQE:
		return "died in error: last state " + e.QPState.String()
	}
	return ""
}

func (o Object) append(f Field) Object { return append(o, f) }

// unbound tells whether a finding is about an rdma_cm ID bound to no
// device: a wildcard listener, an ID before its address is resolved.
func unbound(e *rdma.Event) bool { return e.Type == rdma.ResCMID && !e.Has(rdma.EvHasDev) }

// NoLeaksObject is the last object of a clean `leaks -- CMD` run:
// {"report":"no-leaks","created":N,"destroyed":N}.
func NoLeaksObject(t time.Time, created, destroyed int) Object {
	return Object{}.str("report", "no-leaks").append(timeField("time", t)).num("created", uint64(created)).num("destroyed", uint64(destroyed))
}

// NoLeaksLine is its human form, the one line of a clean run.
func NoLeaksLine(created, destroyed int) string {
	return fmt.Sprintf("no leaks: %d created, %d destroyed", created, destroyed)
}

// owner names who holds a resource: comm[pid] or [module].
func owner(e *rdma.Event) string {
	switch {
	case e.Has(rdma.EvHasOwner):
		return Sanitize(e.Owner.Comm) + "[" + strconv.FormatUint(uint64(e.Owner.PID), 10) + "]"
	case e.Owner.KernName != "" && e.SMC.HasLGR:
		// an [smc] QP whose link the trace saw created
		return fmt.Sprintf("[%s] lgr %s link %d (%s)", Sanitize(e.Owner.KernName), rdma.LGRID(e.SMC.LGR), e.SMC.ID, Sanitize(e.SMC.Role))
	case e.Owner.KernName != "":
		return "[" + Sanitize(e.Owner.KernName) + "]"
	}
	return "?"
}

// LeakWriter is the human view of a leak report: a heading and a table
// for each group of resources, one line for each status.
type LeakWriter struct {
	w     io.Writer
	group []*rdma.Finding
	err   error
}

// NewLeakWriter writes to w.
func NewLeakWriter(w io.Writer) *LeakWriter { return &LeakWriter{w: w} }

// Write adds a finding; findings of one report at one moment form a table.
func (lw *LeakWriter) Write(f *rdma.Finding) error {
	if len(lw.group) > 0 {
		g := lw.group[0]
		perDevice := f.Report == rdma.LeakUnregister || f.Report == rdma.LeakLeft
		if g.Report != f.Report || !f.Report.IsLeak() ||
			(perDevice && (!g.Time.Equal(f.Time) || g.Res.DevName != f.Res.DevName)) {
			lw.Flush()
		}
	}
	if !f.Report.IsLeak() {
		lw.line(statusLine(f))
		return lw.err
	}
	c := *f
	lw.group = append(lw.group, &c)
	return lw.err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (lw *LeakWriter) line(s string) {
	if lw.err == nil {
		_, lw.err = io.WriteString(lw.w, s+"\n")
	}
}

// byTask names the unregistering task: " by rdma[224]".
func byTask(f *rdma.Finding) string {
	if f.By.PID == 0 {
		return ""
	}
	return " by " + Sanitize(f.By.Comm) + "[" + strconv.FormatUint(uint64(f.By.PID), 10) + "]"
}

func statusLine(f *rdma.Finding) string {
	dev := Sanitize(f.Res.DevName)
	if f.Report == rdma.LeakPortBusy {
		return portBusyLine(&f.Res)
	}
	if f.Report == rdma.LeakWaiting {
		s := fmt.Sprintf("%s: unregister%s blocked for %s, ", dev, byTask(f), f.Blocked.Round(time.Second))
		if !f.Res.Has(rdma.EvHasOwner) && f.Res.Owner.KernName == "" {
			return s + "on nothing rdmatrace sees alive on it (kernel references)"
		}
		s += fmt.Sprintf("waiting for %s: %d resource%s", owner(&f.Res), f.Resources, plural(f.Resources))
		if len(f.Held) > 0 {
			held := make([]string, len(f.Held))
			for i, h := range f.Held {
				held[i] = strconv.Itoa(h.N) + " " + h.Res.String()
			}
			s += " (" + strings.Join(held, ", ") + ")"
		}
		if len(f.Files) > 0 {
			files := make([]string, len(f.Files))
			for i, p := range f.Files {
				files[i] = Sanitize(p)
			}
			s += "; open " + strings.Join(files, ", ")
		}
		return s
	}
	took := "finished"
	if f.Took > 0 {
		took = "finished after " + f.Took.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s: unregister%s %s: %d resources freed (%d by their owners' exit cleanup, %d by the unregistering task, %d by their owners), %d never freed",
		dev, byTask(f), took, f.Freed, f.FreedAtExit, f.FreedByUnregister, f.Freed-f.FreedAtExit-f.FreedByUnregister, f.Left)
}

var leakHeadings = map[rdma.LeakReport]string{
	rdma.LeakUnregister:  "%s: unregister%s began; %d resource%s alive:",
	rdma.LeakLeft:        "%s: unregister%s finished with %d resource%s never freed (the kernel dropped them):",
	rdma.LeakEnd:         "alive at the end of the run%s%s: %d resource%s:",
	rdma.LeakExitCleanup: "not destroyed by the program%s%s, freed by the kernel's cleanup: %d resource%s:",
	rdma.LeakAlive:       "created by the program%s%s and still alive: %d resource%s:",
}

// Flush writes the pending group.
func (lw *LeakWriter) Flush() error {
	if len(lw.group) == 0 {
		return lw.err
	}
	g := lw.group[0]
	where, by := "", ""
	if g.Report == rdma.LeakUnregister || g.Report == rdma.LeakLeft {
		where = Sanitize(g.Res.DevName)
		by = byTask(g)
	}
	lw.line(fmt.Sprintf(leakHeadings[g.Report], where, by, len(lw.group), plural(len(lw.group))))
	header := []string{"OWNER", "DEV", "RES", "ID", "LQPN", "TYPE", "STATE", "AGE"}
	if g.Report == rdma.LeakExitCleanup {
		header = append(header, "CLEANUP")
	}
	notes := false // a NOTE column only when a QP of the group died in error
	for _, f := range lw.group {
		notes = notes || diedInError(&f.Res) != ""
	}
	if notes {
		header = append(header, "NOTE")
	}
	t := NewTable(header...)
	for _, f := range lw.group {
		e := &f.Res
		var id, lqpn, typ, state string
		if e.Type != rdma.ResQP && !unbound(e) { // a QP is named by its lqpn; restrack numbers an ID once bound
			id = strconv.FormatUint(uint64(e.ID), 10)
		}
		if e.Given(rdma.HasLQPN) {
			lqpn, typ = strconv.FormatUint(uint64(e.LQPN), 10), e.QPType.String()
		}
		if e.Given(rdma.HasState) {
			state = e.StateName(false)
		}
		age := f.Age.Round(time.Millisecond).String()
		if f.AgeAtLeast {
			age = ">" + age
		}
		dev := e.DevName
		if unbound(e) {
			dev = "(unbound)"
		}
		row := []string{owner(e), dev, e.Type.String(), id, lqpn, typ, state, age}
		if g.Report == rdma.LeakExitCleanup {
			row = append(row, e.Cleanup())
		}
		if notes {
			row = append(row, diedInError(e))
		}
		t.Append(row...)
	}
	sites := rdma.ByCallSite(lw.group)
	lw.group = lw.group[:0]
	if lw.err == nil {
		lw.err = t.Render(lw.w)
	}
	for _, s := range sites {
		for _, l := range callSiteLines(g.Report, s) {
			lw.line(l)
		}
	}
	return lw.err
}

// callSiteVerbs say what became of a call site's resources, by report
// (plural, singular).
var callSiteVerbs = map[rdma.LeakReport][2]string{
	rdma.LeakUnregister:  {"were alive when the unregistration began", "was alive when the unregistration began"},
	rdma.LeakLeft:        {"were never freed", "was never freed"},
	rdma.LeakEnd:         {"were alive at the end of the run", "was alive at the end of the run"},
	rdma.LeakExitCleanup: {"were never destroyed", "was never destroyed"},
	rdma.LeakAlive:       {"are still alive", "is still alive"},
}

// maxCallers bounds the frames shown above a call site.
const maxCallers = 8

// callSiteLines sum up one call site, as valgrind does: "3 QPs created at
// setup_conn (leakqp.c:40) via ibv_create_qp were never destroyed", then
// the callers above it.
func callSiteLines(r rdma.LeakReport, s rdma.CallSiteLeaks) []string {
	res, verb := strings.ToUpper(s.Res.String()), callSiteVerbs[r][1]
	if s.N != 1 {
		res, verb = res+"s", callSiteVerbs[r][0]
	}
	line := fmt.Sprintf("%d %s created at %s", s.N, res, Sanitize(s.Stack.Site().String()))
	if s.Stack.Via != "" {
		line += " via " + Sanitize(s.Stack.Via)
	}
	out := []string{line + " " + verb}
	for i, f := range s.Stack.Frames[1:] {
		if i == maxCallers {
			out = append(out, fmt.Sprintf("    ... %d frames more", len(s.Stack.Frames)-1-i))
			break
		}
		out = append(out, "    called from "+Sanitize(f.String()))
	}
	if s.Stack.Partial != "" {
		out = append(out, "    (the walk stopped: "+Sanitize(s.Stack.Partial)+")")
	}
	return out
}

// portBusyLine is a port-busy finding in words: "port busy: rping[312]
// rdma_listen 10.99.1.1:7400 got EADDRINUSE; held by app[300] tcp LISTEN
// 10.99.1.1:7400".
func portBusyLine(e *rdma.Event) string {
	s := "port busy: " + owner(e) + " " + Sanitize(e.PortBusy.Op)
	if e.Has(rdma.EvHasDev) && e.DevName != "" {
		s += " on " + Sanitize(e.DevName)
	}
	s += " " + e.Src.String() + " got EADDRINUSE"
	switch {
	case e.PortBusy.Holders == nil:
		return s + " (who held the port was not looked up)"
	case len(e.PortBusy.Holders) == 0:
		return s + "; held by no one any more"
	}
	held := make([]string, len(e.PortBusy.Holders))
	for i, h := range e.PortBusy.Holders {
		held[i] = Sanitize(h)
	}
	return s + "; held by " + strings.Join(held, "; ")
}
