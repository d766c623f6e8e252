package qplife

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/gid"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/procexit"
)

// Out takes a node's identity records: the OTLP sink (otlp.Sink) is one.
// Neither method may block.
type Out interface {
	WriteQP(*rdma.QPIdentity)
	WriteGID(e *rdma.GIDEntry, read time.Time)
}

// RunOptions are what Start needs: the node's name and where the records
// go; the sources default to the host's.
type RunOptions struct {
	Node string
	Out  Out
	// Tracker tunes the QPs' records (its Node and Out are set from the above).
	Tracker Options
	// GIDs reads the node's GID tables (default: sysfs, package gid).
	GIDs func() ([]rdma.GIDEntry, error)
	// RemoteQPNs reads the remote QPN of the given devices' QPs (default:
	// one netlink dump per device that has a QP waiting).
	RemoteQPNs func(devs map[string][]uint32) (map[string]map[uint32]uint32, error)
	// Exits starts reading processes' exits into emit (default: the
	// kernel's process events, package procexit); its result stops it.
	Exits func(emit func(rdma.ExitStatus)) (stop func(), err error)
	// GIDEvery is how often the GID tables are read for changes
	// (default 10 s); GIDRefresh how often every entry is sent again,
	// changed or not, so that a store's retention keeps them (default 1 h).
	GIDEvery, GIDRefresh time.Duration
	// Warn says what cannot be done (no process events: exit statuses
	// will be missing), once each.
	Warn func(string)
}

// Runner follows a node's QPs and GID tables and sends their identity
// records: feed it every traced event (Event), close it at the end.
type Runner struct {
	t        *Tracker
	o        RunOptions
	stop     chan struct{}
	done     sync.WaitGroup
	stopExit func()
	// exitsErr is why exit statuses are not read (nil: they are).
	exitsErr   error
	gidRecords atomic.Uint64
}

// Start reads the GID tables once (their records go out at once), starts
// the process events and the loop that sends what waits, and returns the
// Runner.
func Start(o RunOptions) *Runner {
	if o.GIDs == nil {
		src := gid.Source{Root: "/", NetNS: gid.OurNetNS()}
		o.GIDs = func() ([]rdma.GIDEntry, error) { return src.Read(gid.Filter{}) }
	}
	if o.RemoteQPNs == nil {
		o.RemoteQPNs = netlinkRemoteQPNs
	}
	if o.Exits == nil {
		o.Exits = kernelExits
	}
	if o.GIDEvery <= 0 {
		o.GIDEvery = 10 * time.Second
	}
	if o.GIDRefresh <= 0 {
		o.GIDRefresh = time.Hour
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	to := o.Tracker
	to.Node = o.Node
	to.Out = o.Out.WriteQP
	r := &Runner{t: New(to), o: o, stop: make(chan struct{})}
	stop, err := o.Exits(r.t.Exit)
	if err != nil {
		r.exitsErr = err
		o.Warn("identity records: owners' exit statuses and signals will be missing: " + err.Error())
	} else {
		r.stopExit = stop
	}
	gids := r.sendGIDs(nil, true)
	r.done.Add(1)
	go r.loop(gids)
	return r
}

// Event takes the tracer's next event.
func (r *Runner) Event(e *rdma.Event) { r.t.Event(e) }

// Stats are the tracker's counts.
func (r *Runner) Stats() Stats { return r.t.Stats() }

// ExitsMissing says why owners' exit statuses are not read (nil: they are).
func (r *Runner) ExitsMissing() error { return r.exitsErr }

// Close stops the loop and the process events, and sends what waited.
// The owners' exits that come after Close are not waited for.
func (r *Runner) Close() {
	close(r.stop)
	r.done.Wait()
	if r.stopExit != nil {
		r.stopExit()
	}
	r.t.Flush()
}

func (r *Runner) loop(gids []rdma.GIDEntry) {
	defer r.done.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastGID, lastRefresh, lastRemote := time.Now(), time.Now(), time.Time{}
	for {
		select {
		case <-r.stop:
			r.fillRemote()
			return
		case now := <-tick.C:
			// One netlink dump a second at most, when a QP waits.
			if now.Sub(lastRemote) >= time.Second {
				if r.fillRemote() {
					lastRemote = now
				}
			}
			r.t.Tick(now)
			if now.Sub(lastGID) >= r.o.GIDEvery {
				refresh := now.Sub(lastRefresh) >= r.o.GIDRefresh
				gids = r.sendGIDs(gids, refresh)
				lastGID = now
				if refresh {
					lastRefresh = now
				}
			}
		}
	}
}

// fillRemote reads the remote QPN of the QPs that wait for it; it says
// whether it read.
func (r *Runner) fillRemote() bool {
	need := r.t.NeedRemote()
	if len(need) == 0 {
		return false
	}
	got, err := r.o.RemoteQPNs(need)
	if err != nil {
		r.o.Warn("identity records: remote QPNs from netlink: " + err.Error())
	}
	now := time.Now()
	for dev, m := range got {
		for qpn, rqpn := range m {
			r.t.RemoteQPN(dev, qpn, rqpn, now)
		}
	}
	return true
}

// sendGIDs reads the GID tables and sends the entries that changed since
// old (all with all), returning the new tables.
func (r *Runner) sendGIDs(old []rdma.GIDEntry, all bool) []rdma.GIDEntry {
	cur, err := r.o.GIDs()
	if err != nil {
		r.o.Warn("identity records: GID tables: " + err.Error())
		if cur == nil {
			return old
		}
	}
	now := time.Now()
	if all || old == nil {
		for i := range cur {
			r.o.Out.WriteGID(&cur[i], now)
		}
		r.gidRecords.Add(uint64(len(cur)))
		return cur
	}
	for _, c := range gid.Diff(old, cur) {
		if c.What != "removed" {
			e := c.Entry
			r.o.Out.WriteGID(&e, now)
			r.gidRecords.Add(1)
		}
	}
	return cur
}

// netlinkRemoteQPNs dumps the QPs of the devices that have one waiting.
func netlinkRemoteQPNs(need map[string][]uint32) (map[string]map[uint32]uint32, error) {
	c, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	var want []rdma.Device
	for _, d := range devs {
		if _, ok := need[d.Name]; ok {
			want = append(want, d)
		}
	}
	qps, err := c.Resources(rdma.ResQP, want)
	out := map[string]map[uint32]uint32{}
	for i := range qps {
		q := &qps[i]
		if !q.Given(rdma.HasLQPN) || !q.Given(rdma.HasRQPN) {
			continue
		}
		if out[q.DevName] == nil {
			out[q.DevName] = map[uint32]uint32{}
		}
		out[q.DevName][q.LQPN] = q.RQPN
	}
	return out, err
}

// kernelExits reads exits from the kernel's process events.
func kernelExits(emit func(rdma.ExitStatus)) (func(), error) {
	rd, err := procexit.Open()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rd.Run(emit, func(err error) {
			if errors.Is(err, procexit.ErrLost) {
				return // counted by the reader
			}
		})
	}()
	return func() { rd.Close(); <-done }, nil
}

// Summary says what the identity records were, for the end of a run:
// "identity records: 12 of QPs (1 freed at an exit whose status did not
// come), 4 of GID table entries; owners' exit statuses unavailable: ...".
func (r *Runner) Summary() string {
	st := r.t.Stats()
	s := "identity records: " + itoa(st.Records) + " of QPs"
	var notes []string
	if st.NoStatus > 0 {
		notes = append(notes, itoa(st.NoStatus)+" freed at an exit whose status did not come")
	}
	if st.NoRemote > 0 {
		notes = append(notes, itoa(st.NoRemote)+" connected without their remote QPN")
	}
	if st.Untracked > 0 {
		notes = append(notes, itoa(st.Untracked)+" QPs not followed (too many at once)")
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	s += ", " + itoa(r.gidRecords.Load()) + " of GID table entries"
	if r.exitsErr != nil {
		s += "; owners' exit statuses unavailable: " + r.exitsErr.Error()
	}
	return s
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
