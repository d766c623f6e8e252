package formats

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A kernel report or the no-leaks line comes after the findings written
// before it: the human report's table of them is written out first.
func TestLeakSinkKeepsTheOrderOfItsRecords(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 5, 0, time.UTC)
	f := &rdma.Finding{Report: rdma.LeakLeft, Time: at, Res: rdma.Event{Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResPD, DevName: "rxe0", Owner: rdma.Owner{KernName: "leakmod"}}, Flags: rdma.EvHasDev}}
	k := &KernelNote{Report: &rdma.KernelReport{Kind: rdma.KernRestrackNamed, Source: "dmesg.txt", Line: 7, Stamp: "[  5.1]", Res: rdma.ResPD, Owner: rdma.Owner{KernName: "leakmod"}}, WithRecording: true}
	recs := []LeakRecord{{Finding: f}, {Kernel: k}, {NoLeaks: &NoLeaks{Time: at, Created: 3, Destroyed: 3}}}
	for _, tc := range []struct {
		f    Format
		want []string // in this order
	}{
		{FormatText, []string{"leakmod", "dmesg.txt:7:", "(the recording says nothing more about it)", "no leaks: 3 created, 3 destroyed"}},
		{FormatNDJSON, []string{`"report":"left"`, `"recording-findings":0`, `"created":3`}},
	} {
		var b bytes.Buffer
		s := NewLeakSink(&b, tc.f)
		for _, r := range recs {
			if err := s.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		out, last := b.String(), -1
		for _, w := range tc.want {
			i := strings.Index(out, w)
			if i < 0 || i < last {
				t.Errorf("%s: %q missing or out of order in:\n%s", tc.f, w, out)
			}
			last = i
		}
	}
}

// TestCleanProgramEndsWithNoLeaks: the last line of a clean `leaks --
// CMD` says so with the counts, in both outputs, after what came before.
func TestCleanProgramEndsWithNoLeaks(t *testing.T) {
	at := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		json bool
		want string
	}{
		{false, "no leaks: 7 created, 7 destroyed\n"},
		{true, `{"report":"no-leaks","time":"2026-11-27T05:00:00Z","created":7,"destroyed":7}` + "\n"},
	} {
		var b strings.Builder
		s := NewLeakReport(&b, c.json)
		s.NoLeaks(at, 7, 7)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("json %v: %q, want %q", c.json, b.String(), c.want)
		}
	}
}
