package doctor

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

const qpTrace = "../../../testdata/doctor/qp-trace.ndjson"

func liveQP(lqpn uint32) rdma.Resource {
	return rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: lqpn, RQPN: lqpn ^ 3, QPType: rdma.QPType(2), QPState: rdma.QPState(3),
		SQPSN: 0, PathMig: rdma.PathMigState(0), Has: rdma.HasPort | rdma.HasLQPN | rdma.HasRQPN | rdma.HasQPType | rdma.HasState | rdma.HasSQPSN | rdma.HasPathMig}
}

// The recording's settings are merged per QP, modify after modify, and
// start afresh when a QP number is created again; a bad line is an error
// naming its line, and the lines after it are read.
func TestReadQPSettingsMergesModifiesPerQPLife(t *testing.T) {
	f, err := os.Open(qpTrace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadQPSettings(f, "qp-trace.ndjson")
	if err == nil || !strings.Contains(err.Error(), "qp-trace.ndjson:5:") {
		t.Errorf("the bad line: %v", err)
	}
	a := s[QPKey{"rxe0", 17}]
	if !a.Sets(rdma.QPMaskMinRNRTimer|rdma.QPMaskRNRRetry|rdma.QPMaskTimeout) || a.MinRNRTimer != 0 || a.RNRRetry != 7 || a.SGIDIndex != 1 || !a.HasGRH {
		t.Errorf("lqpn 17: %+v", a)
	}
	if r := strings.Join(a.Risks(), " "); r != "rnr-infinite rnr-wait link-local-gid" {
		t.Errorf("lqpn 17's risks: %s", r)
	}
	if b := s[QPKey{"rxe0", 18}]; b.Timeout != 14 || b.Sets(rdma.QPMaskRetryCnt) || len(b.Risks()) != 0 {
		t.Errorf("lqpn 18 (its first life had timeout 0): %+v, risks %v", b, b.Risks())
	}
}

// The QP settings check, golden: risky QPs warn with a fix per risk;
// without a recording it says where the settings are not (netlink) and
// how to get them; a QPN that is not live fails.
func TestQPSettingsCheckGolden(t *testing.T) {
	f, err := os.Open(qpTrace)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := ReadQPSettings(f, "qp-trace.ndjson")
	f.Close()
	var out bytes.Buffer
	for _, tc := range []struct {
		name   string
		tg     Target
		v      View
		status Status
	}{
		{"a risky QP and a sound one, from a recording", Target{QPTrace: "trace.ndjson"},
			View{QPs: []rdma.Resource{liveQP(18), liveQP(17)}, QPSettings: settings, QPTrace: "trace.ndjson"}, Warn},
		{"--qpn 18, sound", Target{QPN: 18, QPAnyOwner: true, QPTrace: "trace.ndjson"},
			View{QPs: []rdma.Resource{liveQP(18)}, QPSettings: settings, QPTrace: "trace.ndjson"}, Pass},
		{"a QP the recording did not see", Target{QPTrace: "trace.ndjson"},
			View{QPs: []rdma.Resource{liveQP(18), liveQP(19)}, QPSettings: settings, QPTrace: "trace.ndjson"}, Pass},
		{"no recording", Target{}, View{QPs: []rdma.Resource{liveQP(17)}}, Skip},
		{"--qpn 99, not live", Target{QPN: 99, QPAnyOwner: true}, View{}, Fail},
	} {
		tc.tg.PID, tc.tg.Comm = 4242, "ib_write_lat"
		f := qpSettings(tc.tg, tc.v)
		out.WriteString("--- " + tc.name + "\n" + render([]Finding{f}))
		if f.Status != tc.status {
			t.Errorf("%s: %s, want %s", tc.name, f.Status, tc.status)
		}
	}
	golden.Check(t, "../../../testdata/doctor/qp-settings.golden", out.Bytes())
}

// Check adds the QP settings check only where there is something to say:
// the checks of a process without QPs are as they were.
func TestCheckAddsQPSettingsOnlyWithQPs(t *testing.T) {
	tg, v := healthy(t)
	for _, f := range Check(tg, v) {
		if f.Check == "qp-settings" {
			t.Errorf("a process without QPs got %+v", f)
		}
	}
	v.QPs = []rdma.Resource{liveQP(17)}
	if fs := Check(tg, v); fs[len(fs)-1].Check != "qp-settings" {
		t.Errorf("a process with a QP: %v", fs)
	}
}
