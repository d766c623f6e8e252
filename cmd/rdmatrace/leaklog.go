package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmatrace/rdmatrace/kernlog"
	"github.com/rdmatrace/rdmatrace/leaks"
	"github.com/rdmatrace/rdmatrace/rdma"
	"github.com/rdmatrace/rdmatrace/replay"
	"github.com/rdmatrace/rdmatrace/restable"
)

// recorded is what a saved trace says about each device unregistration:
// the findings `rdmatrace leaks` would have made live, by the task that
// did the unregistration (the task a kernel WARNING or hung-task report
// names).
type recorded struct {
	byPID map[uint32][]rdma.Finding
}

// replayRecording rebuilds the resource table from a `trace -j` recording.
func replayRecording(path string, keep func(*rdma.Event) bool, stderr io.Writer) (*recorded, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	rec := &recorded{byPID: map[uint32][]rdma.Finding{}}
	w := leaks.New(restable.New(1<<20), func(fd *rdma.Finding) {
		if fd.By.PID != 0 {
			rec.byPID[fd.By.PID] = append(rec.byPID[fd.By.PID], *fd)
		}
	})
	w.Keep = keep
	reorder := restable.NewReorder(reorderWindow)
	r := replay.NewReader(f, path)
	bad := 0
	var ev rdma.Event
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		var le *replay.Error
		if errors.As(err, &le) {
			fmt.Fprintf(stderr, "rdmatrace: %v\n", err)
			bad++
			continue
		}
		if err != nil {
			return nil, bad, err
		}
		reorder.Push(&ev, w.Handle)
	}
	reorder.Flush(w.Handle)
	return rec, bad, nil
}

// matches picks what the recording says about a kernel report.
func (rec *recorded) matches(r *kernlog.Report) []rdma.Finding {
	var out []rdma.Finding
	switch r.Kind {
	case kernlog.RestrackWarning, kernlog.DriverWarning:
		// What the unregistration left: the objects behind the WARNING.
		for _, f := range rec.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakLeft || f.Report == rdma.LeakUnregistered {
				out = append(out, f)
			}
		}
	case kernlog.HungUnregister:
		// What was alive when it began: what it waits for.
		for _, f := range rec.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakUnregister && f.Res.Has(rdma.EvHasOwner) {
				out = append(out, f)
			}
		}
	case kernlog.RestrackNamed:
		for _, fs := range rec.byPID {
			for _, f := range fs {
				if f.Report == rdma.LeakLeft && f.Res.DevName == r.Device && f.Res.Res.String() == r.ResType &&
					(f.Res.Owner.KernName == r.Owner || f.Res.Owner.Comm == r.Owner) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// runLeakLog is `rdmatrace leaks --log FILE... [--recording FILE]`: the
// kernel's own leak and hang reports, each followed by what a recording of
// the same boot says about it.
func runLeakLog(logs []string, recording string, f *eventFilter, sink *findingSink, stderr io.Writer) error {
	var rec *recorded
	bad := 0
	if recording != "" {
		var err error
		if rec, bad, err = replayRecording(recording, f.match, stderr); err != nil {
			return exitWith(2, err)
		}
	}
	reports := 0
	shown := map[string]string{} // each unregistration's findings once: where they were
	for _, path := range logs {
		fh, err := os.Open(path)
		if err != nil {
			return exitWith(2, err)
		}
		r := kernlog.NewReader(fh, path)
		for {
			rep, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var le *kernlog.Error
			if errors.As(err, &le) {
				_ = sink.flush()
				fmt.Fprintf(stderr, "rdmatrace: %v\n", err)
				bad++
				continue
			}
			if err != nil {
				fh.Close()
				return exitWith(2, err)
			}
			reports++
			var named []rdma.Finding
			sameAs := ""
			if rec != nil {
				named = rec.matches(rep)
				key := fmt.Sprint(rep.Kind == kernlog.HungUnregister, rep.PID)
				switch {
				case rep.Kind == kernlog.RestrackNamed || len(named) == 0:
				case shown[key] != "":
					named, sameAs = nil, shown[key] // told with the first report of this unregistration
				default:
					shown[key] = fmt.Sprintf("%s:%d", rep.Source, rep.Line)
				}
			}
			sink.kernel(rep, rec != nil, len(named), sameAs)
			for i := range named {
				sink.write(&named[i])
			}
		}
		fh.Close()
	}
	if err := sink.flush(); err != nil {
		return err
	}
	switch {
	case reports > 0:
		return exitWith(exitLeaked, nil)
	case bad > 0:
		return exitWith(1, nil)
	}
	return nil
}
