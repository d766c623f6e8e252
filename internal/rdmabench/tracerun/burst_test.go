package tracerun

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// plainFake is an rdmatrace stand-in for a burst's tracer: it refuses
// --follow-pid and --poll (a user's trace has neither), wants the extra
// flag, writes three events and a bad line a while apart, and says its
// counts as it exits.
const plainFake = `#!/bin/sh
case "$*" in *--follow-pid*|*--poll*) echo "not plain: $*" >&2; exit 3;; esac
case "$*" in *"--ring-size 65536"*) ;; *) echo "no extra flag: $*" >&2; exit 3;; esac
while [ "$1" != "--ready-file" ]; do shift; done
trap 'echo "rdmatrace: 39 hooks attached, 9 skipped (-v lists them); events: 5 seen, 3 shown, 2 dropped" >&2; exit 0' INT
printf '1\nclock-offset 1000000000\n' > "$2"
echo '{"time":"1970-01-01T00:00:03Z","event":"create","res":"qp","ifname":"rxe0","id":17,"lqpn":17,"type":"RC","state":"RESET","pid":5,"comm":"b"}'
echo '{"time":"1970-01-01T00:00:03.1Z","event":"create","res":"cq","ifname":"rxe0","id":3,"pid":5,"comm":"b"}'
sleep 0.3
echo '{"res":"qp" but not json'
echo '{"time":"1970-01-01T00:00:04Z","event":"destroy","res":"qp","ifname":"rxe0","id":17,"lqpn":17,"type":"RC","pid":5,"comm":"b"}'
while :; do sleep 0.05; done
`

func TestAPlainTracerIsReadAsAUserRunsIt(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rdmatrace")
	if err := os.WriteFile(bin, []byte(plainFake), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Start(Options{Path: bin, Follow: []int{4242}, Plain: true, Extra: []string{"--ring-size", "65536"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := monoNow()
	last, err := r.Settle(400*time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if last < t0+250_000_000 {
		t.Errorf("the output last grew %v after Settle began, want after the fake's 0.3 s pause", time.Duration(last-t0))
	}
	u, err := r.Usage()
	if err != nil || u.PeakRSS <= 0 || u.RSS <= 0 {
		t.Errorf("usage %+v, %v: want its memory", u, err)
	}
	var got []rdma.Event
	lines, bad, err := r.EachLine(func(l []byte) bool { return bytes.Contains(l, []byte(`"res":"qp"`)) },
		func(e *rdma.Event) { got = append(got, *e) })
	if err != nil {
		t.Fatal(err)
	}
	if lines != 4 || len(got) != 2 || got[0].Kind != rdma.EvCreate || got[1].Kind != rdma.EvDestroy || got[1].Mono != 3_000_000_000 {
		t.Errorf("%d lines, events %+v: want 4 lines, the QP's create and destroy (the CQ's not decoded), on the monotonic clock", lines, got)
	}
	if len(bad) != 1 || !strings.Contains(bad[0].Error(), "trace.ndjson:3:") {
		t.Errorf("bad lines %v: want line 3", bad)
	}
	if again, _, _ := r.EachLine(func([]byte) bool { return true }, func(*rdma.Event) {}); again != 0 {
		t.Errorf("a second read gave %d lines again", again)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if s := r.Summary(); !s.OK || s.Seen != 5 || s.Shown != 3 || s.Dropped != 2 {
		t.Errorf("summary %+v: want 5 seen, 3 shown, 2 dropped", s)
	}
	if u, _ := r.Usage(); u.PeakRSS <= 0 {
		t.Errorf("usage at exit %+v: want its peak memory", u)
	}
}

func TestParseSummaryTakesTheLastCounts(t *testing.T) {
	in := "rdmatrace: WARNING: 10 events dropped\nrdmatrace: 3 hooks attached; events: 1 seen, 1 shown, 0 dropped\n" +
		"rdmatrace: 39 hooks attached, 9 skipped (-v lists them); events: 217036 seen, 217036 shown, 102996 dropped\n"
	if s := ParseSummary([]byte(in)); !s.OK || s.Seen != 217036 || s.Dropped != 102996 {
		t.Errorf("%+v", s)
	}
	if s := ParseSummary([]byte("rdmatrace: killed\n")); s.OK {
		t.Errorf("no counts line read as %+v", s)
	}
}

func TestProcUsageReadsThisProcess(t *testing.T) {
	u, err := ProcUsage("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS <= 0 || u.PeakRSS < u.RSS {
		t.Errorf("%+v: want RSS > 0 and a peak at least as large", u)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "stat"), []byte("42 (a) b) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\ta\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"), 0o644)
	u, err = ProcUsage(dir)
	if err != nil || u.CPU != 3*time.Second || u.RSS != 1<<20 || u.PeakRSS != 2<<20 {
		t.Errorf("%+v, %v: want 3 s of CPU (a command with a parenthesis in it), 1 MiB, 2 MiB", u, err)
	}
	os.WriteFile(filepath.Join(dir, "stat"), []byte("42 (a) S 1\n"), 0o644)
	if _, err := ProcUsage(dir); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Errorf("a short stat: %v", err)
	}
}
