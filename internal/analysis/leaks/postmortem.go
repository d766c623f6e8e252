package leaks

import (
	"fmt"
	"maps"
	"slices"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The post-mortem (`rdmatrace leaks --log FILE --recording FILE`): the
// kernel's own leak and hang reports, read from its log, joined with what a
// `trace -j` recording of the same boot says about each. The recording is
// replayed through the live table and Watcher, so its findings are those
// `rdmatrace leaks` would have made live; of them, only what a report asks
// about is kept.

// DefaultMaxTable is the resources of a recording tracked at once when
// PostMortemLimits.MaxTable is 0 (as live, --max-table's default).
const DefaultMaxTable = 1 << 18

// DefaultMaxFindings bounds the findings kept from a recording (each a
// few hundred bytes) when PostMortemLimits.MaxFindings is 0: a recording
// of a device unregistered again and again with many objects alive names
// millions.
const DefaultMaxFindings = 1 << 16

// DefaultMaxReports bounds the logs' reports held until a recording is
// read (a few hundred bytes each) when PostMortemLimits.MaxReports is 0:
// a kernel names a leaked object a line, and a log can hold millions.
const DefaultMaxReports = 1 << 18

// PostMortemLimits bound what a recording may take.
type PostMortemLimits struct {
	MaxTable    int    // resources tracked at once; DefaultMaxTable when 0
	MaxFindings int    // findings kept; DefaultMaxFindings when 0
	MaxReports  int    // the logs' reports held (ReadLogs); DefaultMaxReports when 0
	Window      uint64 // the reorder window, ns; restable.NewReorder's
}

// PostMortem replays a recording against a log's reports: give it the
// recording's events in the order read with Add, call Finish, then Join.
type PostMortem struct {
	reps    []*rdma.KernelReport
	want    *wanted
	table   *restable.Table
	watcher *Watcher
	reorder *restable.Reorder
	limits  PostMortemLimits
	byPID   map[uint32][]rdma.Finding
	kept    int
	dropped int // wanted, but past MaxFindings
}

// NewPostMortem prepares the replay of a recording for the reports reps
// (all the logs' reports, in order); keep selects the resources findings
// may name (the filters).
func NewPostMortem(reps []*rdma.KernelReport, keep func(*rdma.Event) bool, limits PostMortemLimits) *PostMortem {
	if limits.MaxTable <= 0 {
		limits.MaxTable = DefaultMaxTable
	}
	if limits.MaxFindings <= 0 {
		limits.MaxFindings = DefaultMaxFindings
	}
	pm := &PostMortem{reps: reps, want: wantedBy(reps), limits: limits, byPID: map[uint32][]rdma.Finding{},
		table: restable.New(limits.MaxTable), reorder: restable.NewReorder(limits.Window)}
	pm.watcher = New(pm.table, pm.found)
	if keep != nil {
		pm.watcher.Keep = keep
	}
	return pm
}

func (pm *PostMortem) found(fd *rdma.Finding) {
	if fd.By.PID == 0 || !pm.want.keeps(fd) {
		return
	}
	if pm.kept >= pm.limits.MaxFindings {
		pm.dropped++
		return
	}
	pm.kept++
	pm.byPID[fd.By.PID] = append(pm.byPID[fd.By.PID], *fd)
}

// Add applies one event of the recording; ev may be reused after.
func (pm *PostMortem) Add(ev *rdma.Event) {
	if ev.Kind == rdma.EvDevUnregister && !pm.want.pids[ev.Actor.PID] {
		// What was alive when it began is kept only for the tasks the
		// log names: naming it for every beginning costs the whole
		// device's table each time.
		return
	}
	pm.reorder.Push(ev, pm.watcher.Handle)
}

// Lost is what a replay could not keep, for the caller to tell.
type Lost struct {
	// Reordered events left the reorder window early (more than
	// restable.DefaultMaxHeld within it): their order may be wrong.
	Reordered uint64
	// Findings about the reports past MaxFindings were not kept.
	Findings int
	// Untracked resources did not fit the table (MaxTable): what the
	// reports' objects left may be missing.
	Untracked uint64
}

// Finish applies the events still held for reordering, and says what was
// lost.
func (pm *PostMortem) Finish() Lost {
	pm.reorder.Flush(pm.watcher.Handle)
	return Lost{Reordered: pm.reorder.Overflowed(), Findings: pm.dropped, Untracked: pm.table.Untracked()}
}

// Kept is how many findings the replay kept, and of how many tasks.
func (pm *PostMortem) Kept() (findings, tasks int) { return pm.kept, len(pm.byPID) }

// Explained is a kernel report and what the recording says about it.
type Explained struct {
	Report   *rdma.KernelReport
	Findings []rdma.Finding
	// SameAs is "SOURCE:LINE" of the report with which the findings of
	// the same unregistration were given; Findings is then empty.
	SameAs string
}

// Join gives each report, in order, with the recording's findings about
// it: each unregistration's findings once, with its first report.
//
// A named report names one object, and a leak of many objects of one
// owner and type is as many lines: their findings (the same: the
// recording cannot tell those objects apart) come with the first.
func (pm *PostMortem) Join() []Explained {
	out := make([]Explained, 0, len(pm.reps))
	shown := map[unregKey]string{}
	named := map[namedKey]string{}
	for _, rep := range pm.reps {
		if rep.Kind == rdma.KernRestrackNamed {
			k := namedKey{rep.Device, rep.Res, reportOwner(rep.Owner)}
			if first := named[k]; first != "" {
				out = append(out, Explained{Report: rep, SameAs: first})
				continue
			}
			x := Explained{Report: rep, Findings: pm.matches(rep)}
			if len(x.Findings) > 0 {
				named[k] = fmt.Sprintf("%s:%d", rep.Source, rep.Line)
			}
			out = append(out, x)
			continue
		}
		x := Explained{Report: rep, Findings: pm.matches(rep)}
		key := unregKey{rep.Kind == rdma.KernHungUnregister, rep.PID}
		switch {
		case len(x.Findings) == 0:
		case shown[key] != "":
			x.Findings, x.SameAs = nil, shown[key]
		default:
			shown[key] = fmt.Sprintf("%s:%d", rep.Source, rep.Line)
		}
		out = append(out, x)
	}
	return out
}

// unregKey is an unregistration as reports name it: by its task, and
// whether it was alive when it began (a hung task) or left at its end.
type unregKey struct {
	hung bool
	pid  int
}

// wanted is what a log's reports ask of a recording: the findings of the
// unregistrations by the tasks its WARNINGs and hung tasks name, and what
// was left of the objects its named reports name. Nothing else of a
// recording is kept.
type wanted struct {
	pids  map[uint32]bool // the tasks of WARNINGs and hung tasks
	hung  map[uint32]bool // of hung tasks: what was alive when they began
	named map[namedKey]bool
}

// namedKey is a named report's object: device ("" when the log does not
// say), type and owner.
type namedKey struct {
	dev   string
	res   rdma.ResType
	owner rdma.Owner
}

func wantedBy(reps []*rdma.KernelReport) *wanted {
	w := &wanted{pids: map[uint32]bool{}, hung: map[uint32]bool{}, named: map[namedKey]bool{}}
	for _, r := range reps {
		switch {
		case r.Kind == rdma.KernRestrackNamed:
			w.named[namedKey{r.Device, r.Res, reportOwner(r.Owner)}] = true
		case r.PID > 0:
			w.pids[uint32(r.PID)] = true
			w.hung[uint32(r.PID)] = w.hung[uint32(r.PID)] || r.Kind == rdma.KernHungUnregister
		}
	}
	return w
}

// reportOwner is an owner as a named report gives it: a module, or a
// process by its name alone.
func reportOwner(o rdma.Owner) rdma.Owner {
	if o.Kernel() {
		return rdma.Owner{KernName: o.KernName}
	}
	return rdma.Owner{Comm: o.Comm}
}

func (w *wanted) keeps(f *rdma.Finding) bool {
	switch f.Report {
	case rdma.LeakUnregister:
		return w.hung[f.By.PID]
	case rdma.LeakUnregistered:
		return w.pids[f.By.PID]
	case rdma.LeakLeft:
		if w.pids[f.By.PID] {
			return true
		}
		owner := reportOwner(f.Res.Owner)
		return w.named[namedKey{f.Res.DevName, f.Res.Type, owner}] || w.named[namedKey{"", f.Res.Type, owner}]
	}
	return false
}

// namesFinding reports whether a named report is about the resource of f.
func namesFinding(r *rdma.KernelReport, f *rdma.Finding) bool {
	return (r.Device == "" || f.Res.DevName == r.Device) && f.Res.Type == r.Res &&
		reportOwner(f.Res.Owner) == reportOwner(r.Owner)
}

// matches picks what the recording says about a kernel report.
func (pm *PostMortem) matches(r *rdma.KernelReport) []rdma.Finding {
	var out []rdma.Finding
	switch r.Kind {
	case rdma.KernRestrackWarning, rdma.KernDriverWarning:
		// What the unregistration left: the objects behind the WARNING.
		for _, f := range pm.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakLeft || f.Report == rdma.LeakUnregistered {
				out = append(out, f)
			}
		}
	case rdma.KernHungUnregister:
		// What was alive when it began: what it waits for.
		for _, f := range pm.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakUnregister && f.Res.Has(rdma.EvHasOwner) {
				out = append(out, f)
			}
		}
	case rdma.KernRestrackNamed:
		// Any unregistration's: in the order of their tasks, so that the
		// answer is the same each time.
		for _, pid := range slices.Sorted(maps.Keys(pm.byPID)) {
			for _, f := range pm.byPID[pid] {
				if f.Report == rdma.LeakLeft && namesFinding(r, &f) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}
