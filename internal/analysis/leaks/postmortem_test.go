package leaks

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// replayed gives a `trace -j` recording's events to a post-mortem of reps.
func replayed(t *testing.T, recording string, reps []*rdma.KernelReport, limits PostMortemLimits) (*PostMortem, Lost) {
	t.Helper()
	pm := NewPostMortem(reps, nil, limits)
	r := replay.NewReader(strings.NewReader(recording), "rec")
	var ev rdma.Event
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("recording: %v", err)
		}
		pm.Add(&ev)
	}
	return pm, pm.Finish()
}

func stamp(i int) string {
	return time.Unix(1_800_000_000, int64(i)*1000).UTC().Format(time.RFC3339Nano)
}

// A recording whose device was unregistered again and again with many
// objects alive named every object at every beginning, and all of it was
// kept: a 1.2 MB recording took 7.4 GB (D8). Only what the log's reports
// are about is kept now.
func TestPostMortemKeepsOnlyWhatTheLogNames(t *testing.T) {
	var b strings.Builder
	n := 0
	for i := 0; i < 500; i++ {
		n++
		fmt.Fprintf(&b, `{"time":%q,"event":"create","res":"pd","ifname":"rxe0","id":%d,"pid":100,"comm":"app"}`+"\n", stamp(n), i)
	}
	for i := 0; i < 2000; i++ {
		n++
		fmt.Fprintf(&b, `{"time":%q,"event":"dev_unregister","ifname":"rxe0","actor-pid":%d,"actor-comm":"rdma"}`+"\n", stamp(n), 1000+i)
	}
	// A hung task (pid 1500) and a WARNING (pid 1501) of the log.
	pm, lost := replayed(t, b.String(), []*rdma.KernelReport{
		{Kind: rdma.KernHungUnregister, PID: 1500}, {Kind: rdma.KernRestrackWarning, PID: 1501}}, PostMortemLimits{})
	if lost != (Lost{}) {
		t.Errorf("lost %+v", lost)
	}
	// The hung task's unregistration began with the 500 PDs alive; the
	// WARNING's task has no finding (it did not finish).
	if kept, tasks := pm.Kept(); kept != 500 || tasks != 1 || len(pm.byPID[1500]) != 500 {
		t.Errorf("kept %d findings of %d tasks, want the 500 of pid 1500 only", kept, tasks)
	}
}

// Past MaxFindings, findings are counted as lost, not kept.
func TestPostMortemCountsFindingsPastTheLimit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, `{"time":%q,"event":"create","res":"pd","ifname":"rxe0","id":%d,"pid":100,"comm":"app"}`+"\n", stamp(i), i)
	}
	fmt.Fprintf(&b, `{"time":%q,"event":"dev_unregister","ifname":"rxe0","actor-pid":7,"actor-comm":"rdma"}`+"\n", stamp(20))
	pm, lost := replayed(t, b.String(), []*rdma.KernelReport{{Kind: rdma.KernHungUnregister, PID: 7}}, PostMortemLimits{MaxFindings: 4})
	if kept, _ := pm.Kept(); kept != 4 || lost.Findings != 6 {
		t.Errorf("kept %d, lost %+v; want 4 kept and 6 lost", kept, lost)
	}
}

// The join: a WARNING gets what its task's unregistration left; a second
// WARNING of the same unregistration points at the first; a named report
// gets the object of its type and owner, a kernel owner by its module and
// a user owner by its process name, on any device when the log names none.
func TestPostMortemJoinsEachReportWithWhatTheRecordingSays(t *testing.T) {
	rec := strings.Join([]string{
		`{"time":%q,"event":"create","res":"qp","ifname":"rxe0","port":1,"id":17,"lqpn":17,"type":"RC","state":"RESET","pid":100,"comm":"rping"}`,
		`{"time":%q,"event":"create","res":"pd","ifname":"rxe0","id":3,"kern-name":"rping","actor-pid":5,"actor-comm":"modprobe"}`,
		`{"time":%q,"event":"create","res":"cq","ifname":"rxe0","id":4,"kern-name":"nvme_rdma","actor-pid":5,"actor-comm":"modprobe"}`,
		`{"time":%q,"event":"dev_unregister","ifname":"rxe0","actor-pid":9,"actor-comm":"rdma"}`,
		`{"time":%q,"event":"dev_unregistered","ifname":"rxe0","actor-pid":9,"actor-comm":"rdma"}`,
	}, "\n") + "\n"
	rec = fmt.Sprintf(rec, stamp(1), stamp(2), stamp(3), stamp(4), stamp(5))
	reps := []*rdma.KernelReport{
		{Kind: rdma.KernRestrackWarning, Source: "log", Line: 10, PID: 9},
		{Kind: rdma.KernRestrackWarning, Source: "log", Line: 20, PID: 9},
		{Kind: rdma.KernRestrackNamed, Source: "log", Line: 30, Device: "rxe0", Res: rdma.ResQP, Owner: rdma.Owner{Comm: "rping"}},
		{Kind: rdma.KernRestrackNamed, Source: "log", Line: 31, Res: rdma.ResCQ, Owner: rdma.Owner{KernName: "nvme_rdma"}},
		// A module named like the process: not the process's QP.
		{Kind: rdma.KernRestrackNamed, Source: "log", Line: 32, Res: rdma.ResQP, Owner: rdma.Owner{KernName: "rping"}},
		{Kind: rdma.KernRestrackNamed, Source: "log", Line: 33, Device: "rxe1", Res: rdma.ResCQ, Owner: rdma.Owner{KernName: "nvme_rdma"}},
	}
	pm, _ := replayed(t, rec, reps, PostMortemLimits{})
	var got []string
	for _, x := range pm.Join() {
		line := fmt.Sprintf("%d:", x.Report.Line)
		for _, f := range x.Findings {
			line += fmt.Sprintf(" %s/%s", f.Report, f.Res.Type)
		}
		if x.SameAs != "" {
			line += " same-as " + x.SameAs
		}
		got = append(got, line)
	}
	want := "10: left/qp left/cq left/pd unregistered/pd|20: same-as log:10|30: left/qp|31: left/cq|32:|33:"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// A leak of many objects of one owner and type is as many named lines,
// and each was given every one of the recording's findings for that owner
// and type: 2 000 lines and 2 000 QPs wrote four million findings. The
// first line gets them, the others point at it.
func TestManyNamedLinesOfOneOwnerGetItsFindingsOnce(t *testing.T) {
	const n = 2000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"time":%q,"event":"create","res":"qp","ifname":"rxe0","port":1,"lqpn":%d,"type":"RC","state":"RESET","pid":100,"comm":"rping"}`+"\n", stamp(i), 100+i)
	}
	fmt.Fprintf(&b, `{"time":%q,"event":"dev_unregister","ifname":"rxe0","actor-pid":9,"actor-comm":"rdma"}`+"\n", stamp(n))
	fmt.Fprintf(&b, `{"time":%q,"event":"dev_unregistered","ifname":"rxe0","actor-pid":9,"actor-comm":"rdma"}`+"\n", stamp(n+1))
	var reps []*rdma.KernelReport
	for i := range n {
		reps = append(reps, &rdma.KernelReport{Kind: rdma.KernRestrackNamed, Source: "log", Line: 10 + i, Device: "rxe0", Res: rdma.ResQP, Owner: rdma.Owner{Comm: "rping"}})
	}
	pm, _ := replayed(t, b.String(), reps, PostMortemLimits{})
	findings, sameAs := 0, 0
	for _, x := range pm.Join() {
		findings += len(x.Findings)
		if x.SameAs == "log:10" {
			sameAs++
		}
	}
	if findings != n || sameAs != n-1 {
		t.Errorf("%d findings and %d lines pointing at the first; want %d and %d", findings, sameAs, n, n-1)
	}
}
