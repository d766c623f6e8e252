package health

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/failures"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// Report is health's answer.
type Report struct {
	Verdict  Status
	Findings []Finding
	// Source says where the window's events came from ("trace",
	// "netlink", "" without a window).
	Source string
	// Err is why the ready file could not be written: the caller that
	// waits for it was told nothing.
	Err error
}

// RunOptions are Options and how the window is watched.
type RunOptions struct {
	Options
	// Session is the tracer's, for the window.
	Session tracer.SessionOptions
	// Host is where the state is read (LocalHost when zero).
	Host Host
	// ReadyFile is created once the window is watched: the tracer's
	// hooks attached, or the ports' first poll read.
	ReadyFile string
}

// pollEvery is how often the ports' states are read in a window without
// the tracer.
const pollEvery = 200 * time.Millisecond

// maxWindowEvents bounds the events a window keeps (only those that
// report a failure are kept).
const maxWindowEvents = 1 << 16

// Run is `rdmatrace health`: the window (when Since), then the node's
// state read at its end, and every check over them.
func Run(o RunOptions) Report {
	if o.Host.Root == "" {
		o.Host = LocalHost()
	}
	var w *Window
	if o.Since > 0 {
		w = o.window()
	}
	s := o.Host.Gather(o.Dev)
	s.Window = w
	fs := Check(s, o.Options)
	r := Report{Verdict: Verdict(fs), Findings: fs}
	if w != nil {
		r.Source, r.Err = w.Source, w.readyErr
	}
	return r
}

// window watches for Since: the tracer's events where BPF can run, else
// the ports' states polled and the QPs in ERR that RDMA netlink lists.
func (o RunOptions) window() *Window {
	reason := o.NoBPF
	if reason == "" {
		reason = tracer.NoBPF(o.Session.Tracer.BTF)
	}
	if reason == "" {
		w, err := o.trace()
		if err == nil {
			return w
		}
		reason = "the tracer could not run: " + firstLine(err.Error())
	}
	return o.poll(reason)
}

func (o RunOptions) trace() (*Window, error) {
	so := o.Session
	var stderr bytes.Buffer
	so.Stderr, so.Duration, so.ReadyFile = &stderr, o.Since, o.ReadyFile
	w := &Window{Source: "trace", Length: o.Since}
	s, err := tracer.NewSession(so)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	err = s.Run(tracer.Loop{Consumer: tracer.Consumer{Event: func(e *rdma.Event) error {
		if o.Dev != "" && e.DevName != "" && e.DevName != o.Dev {
			return nil
		}
		if len(w.Events) < maxWindowEvents && wanted(e) {
			w.Events = append(w.Events, *e)
		}
		return nil
	}}})
	return w, err
}

// wanted are the events a window judges: failures, and what settles a
// QP's move to ERR (a disconnect, a QP's destroy).
func wanted(e *rdma.Event) bool {
	if _, ok := e.Failure(); ok {
		return true
	}
	return failures.Disconnects(e) || e.Type == rdma.ResQP && (e.Kind == rdma.EvDestroy || e.Kind == rdma.EvDestroyBegin)
}

func (o RunOptions) poll(reason string) *Window {
	w := &Window{Source: "netlink", Length: o.Since, Why: reason, PortStates: map[string][]string{}}
	note := func() {
		ps, _ := o.Host.ReadPorts(o.Dev)
		for _, p := range ps {
			k := portName(&p)
			st := w.PortStates[k]
			if len(st) == 0 || st[len(st)-1] != p.State {
				w.PortStates[k] = append(st, p.State)
			}
		}
	}
	note()
	if o.ReadyFile != "" {
		w.readyErr = lifecycle.WriteReadyFile(o.ReadyFile, strconv.Itoa(os.Getpid())+"\n")
	}
	end := time.Now().Add(o.Since)
	for time.Now().Before(end) {
		time.Sleep(min(pollEvery, time.Until(end)))
		note()
	}
	c, err := nldev.Dial()
	if err != nil {
		w.QPsErr = err
		return w
	}
	defer c.Close()
	devs, err := c.DevicesNamed(o.Dev)
	if err == nil {
		var qps []rdma.Resource
		qps, err = c.Resources(rdma.ResQP, devs)
		w.QPsInErr = qpsInErr(qps)
	}
	w.QPsErr = err
	return w
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
