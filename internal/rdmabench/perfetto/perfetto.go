// Package perfetto writes a benchmark run and what was traced beside it as
// Chrome trace JSON (the Trace Event Format), which ui.perfetto.dev and
// chrome://tracing open: a latency counter track, the outliers as slices,
// one track per connection with its phases, the traced events as instants
// and slices on their threads' tracks, and flow arrows from each client's
// REQ to the server's handling of it.
package perfetto

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// Timeline is what goes in the file. Times are CLOCK_MONOTONIC ns.
type Timeline struct {
	PID      int // the benchmark's process
	Samples  []bench.Sample
	Outliers []correlate.Outlier
	Conns    []bench.Conn
	Phases   *correlate.ConnResult
	Events   []rdma.Event
}

// Synthetic tracks (tids) of the benchmark's process.
const (
	latencyTID = 1         // the counter and the outlier slices
	connTID0   = 1_000_000 // + connection index: its phases
	maxSamples = 1_000_000 // counter points kept: the UI slows down beyond
)

type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   json.Number    `json:"ts"`
	Dur  json.Number    `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	S    string         `json:"s,omitempty"`
	ID   int            `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// us is ns as a JSON number of µs with three decimals: exact, no float.
func us(ns int64) json.Number {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	s := make([]byte, 0, 24)
	if neg {
		s = append(s, '-')
	}
	whole, frac := ns/1000, ns%1000
	s = append(s, []byte(itoa(whole))...)
	if frac != 0 {
		f := []byte(itoa(1000 + frac))[1:]
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		s = append(append(s, '.'), f...)
	}
	return json.Number(s)
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

// Write writes t as {"traceEvents":[...]}, one event per line.
func Write(w io.Writer, t *Timeline) error {
	bw := bufio.NewWriter(w)
	first := true
	emit := func(e event) {
		b, _ := json.Marshal(e)
		if first {
			bw.WriteString("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
			first = false
		} else {
			bw.WriteString(",\n")
		}
		bw.Write(b)
	}
	meta := func(name string, pid, tid int, value string) {
		emit(event{Name: name, Ph: "M", TS: "0", PID: pid, TID: tid, Args: map[string]any{"name": value}})
	}
	meta("process_name", t.PID, 0, "rdmabench")
	meta("thread_name", t.PID, latencyTID, "latency")
	for i, s := range t.Samples {
		if i >= maxSamples {
			break
		}
		emit(event{Name: "latency", Ph: "C", TS: us(s.Start), PID: t.PID, TID: latencyTID, Args: map[string]any{"us": us(s.Lat)}})
	}
	for _, o := range t.Outliers {
		causes := strings.Join(o.Causes, ", ")
		if causes == "" {
			causes = correlate.Nothing
		}
		emit(event{Name: "outlier", Cat: "outlier", Ph: "X", TS: us(o.Sample.Start), Dur: us(o.Sample.Lat), PID: t.PID, TID: latencyTID,
			Args: map[string]any{"sample": o.Index, "lat-us": us(o.Sample.Lat), "causes": causes}})
	}
	if t.Phases != nil {
		for _, c := range t.Phases.Conns {
			tid := connTID0 + c.Index
			meta("thread_name", t.PID, tid, "connection "+itoa(int64(c.Index)))
			prev := c.Start
			for i, end := range c.Ends {
				if end > prev {
					emit(event{Name: correlate.Phases[i], Cat: "phase", Ph: "X", TS: us(prev), Dur: us(end - prev), PID: t.PID, TID: tid})
				}
				prev = max(prev, end)
			}
		}
	}
	named := map[[2]int]bool{}
	for i := range t.Events {
		e := &t.Events[i]
		pid, tid := int(e.Owner.PID), int(e.Owner.TID)
		if !e.Has(rdma.EvHasOwner) {
			pid, tid = int(e.Actor.PID), int(e.Actor.TID)
		}
		if k := [2]int{pid, tid}; !named[k] && pid != t.PID {
			named[k] = true
			comm := e.Owner.Comm
			if !e.Has(rdma.EvHasOwner) {
				comm = e.Actor.Comm
			}
			meta("thread_name", pid, tid, comm)
		}
		args := map[string]any{}
		name := e.Kind.String()
		if e.Has(rdma.EvHasRes) {
			name += " " + e.Type.String()
		}
		switch e.Kind {
		case rdma.EvSpan:
			name = e.Span.Func
		case rdma.EvOffCPU:
			args["instead"] = e.OffCPU.Next.Comm + "[" + itoa(int64(e.OffCPU.Next.TID)) + "]"
			args["preempted"] = e.Has(rdma.EvPreempted)
		case rdma.EvCMEventHandler:
			name += " " + e.CMEvent.String()
		}
		if e.Has(rdma.EvHasSize) {
			args["size"] = e.Size
		}
		if e.Has(rdma.EvHasDev) {
			args["dev"] = e.DevName
		}
		if len(args) == 0 {
			args = nil
		}
		if e.Has(rdma.EvHasDur) {
			emit(event{Name: name, Cat: e.Kind.String(), Ph: "X", TS: us(int64(e.Mono)), Dur: us(int64(e.Length())), PID: pid, TID: tid, Args: args})
		} else {
			emit(event{Name: name, Cat: e.Kind.String(), Ph: "i", S: "t", TS: us(int64(e.Mono)), PID: pid, TID: tid, Args: args})
		}
	}
	// Flow arrows: the client's REQ (end of send-req) to the server's
	// handling (end of server-req), each on a 1 µs slice of its thread.
	if t.Phases != nil {
		for ci, c := range t.Phases.Conns {
			if ci >= len(t.Conns) || missing(c, "send-req") || missing(c, "server-req") {
				continue
			}
			conn := &t.Conns[ci]
			req, handled := c.Ends[3], c.Ends[4]
			emit(event{Name: "REQ sent", Cat: "cm", Ph: "X", TS: us(req), Dur: "1", PID: t.PID, TID: conn.Client.TID})
			emit(event{Name: "REQ handled", Cat: "cm", Ph: "X", TS: us(handled), Dur: "1", PID: t.PID, TID: conn.Server.TID})
			emit(event{Name: "REQ", Cat: "cm", Ph: "s", ID: c.Index, TS: us(req), PID: t.PID, TID: conn.Client.TID})
			emit(event{Name: "REQ", Cat: "cm", Ph: "f", BP: "e", ID: c.Index, TS: us(handled), PID: t.PID, TID: conn.Server.TID})
		}
	}
	if first {
		bw.WriteString("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

func missing(c correlate.ConnPhases, phase string) bool {
	for _, m := range c.Missing {
		if m == phase {
			return true
		}
	}
	return false
}
