//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	replayreader "github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// The burst: several processes × thousands of QPs, the most this test can
// afford under the emulator (the untraced burst takes about 4 s; the run,
// the tracer's start and stop and rdma res at the hold included, about a
// minute).
const (
	burstRanks = 4
	burstQPs   = 2500
)

var lifecyclePhases = []string{"create", "INIT", "RTR", "RTS", "destroy"}

// phaseOfEvent is a QP event's lifecycle phase (-1: none).
func phaseOfEvent(e *rdma.Event) int {
	switch e.Kind {
	case rdma.EvCreate:
		return 0
	case rdma.EvDestroy:
		return 4
	case rdma.EvModify:
		if e.Given(rdma.HasState) {
			switch e.QPState {
			case rdma.QPStateInit:
				return 1
			case rdma.QPStateRTR:
				return 2
			case rdma.QPStateRTS:
				return 3
			}
		}
	}
	return -1
}

// TestTraceLosesNoLifecycleEventInABurst runs rdmabench burst (4
// processes × 2500 RC QPs created, moved to INIT, RTR and RTS, held and
// destroyed, all at once as at a job's start) with `rdmatrace trace -j` and
// its default flags beside it, and compares the burst's QPs with the trace:
// the burst's own count, its own list of QP numbers per process, and
// `rdma res show qp` at the hold must agree, and the trace must show every
// one of those QPs created, moved to INIT, RTR and RTS, and destroyed, each
// event with the process that owns the QP. The trace is stopped once it
// has caught up (a ring that held the burst may take a while to read
// under the emulator; a stop passes over what is still queued 2 s after
// it). A failure says what was lost, phase by phase, and what the tracer
// said it dropped.
func TestTraceLosesNoLifecycleEventInABurst(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	tr := startTraceToFile(t)
	held := filepath.Join(t.TempDir(), "held")
	start := time.Now()
	cmd := exec.Command(*rdmabenchBin, "burst", "--no-trace", "-j", "-d", device, "-P", fmt.Sprint(burstRanks),
		"-n", fmt.Sprint(burstQPs), "--hold-file", held)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	waitFor(t, 5*time.Minute, "every QP of the burst in RTS (its hold file)", func() bool {
		_, err := os.Stat(held)
		return err == nil || cmd.ProcessState != nil
	})
	holdFile, err := os.ReadFile(held)
	if err != nil {
		t.Fatalf("the burst ended before its hold: %v\n%s", err, stderr.String())
	}
	resAtHold := run(t, "rdma", "-j", "res", "show", "qp")
	if err := os.Remove(held); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("rdmabench burst: %v\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("rdmabench burst did not end 5 minutes after its hold\n%s", stderr.String())
	}
	burstTook := time.Since(start)
	behind := tr.settle(t)
	evs := qpEvents(t, tr)

	// The burst's own account: its count, and its QPs per rank.
	sums := records[report.BurstSummary](t, stdout.Bytes(), "summary")
	ranks := records[report.BurstRankRecord](t, stdout.Bytes(), "rank")
	if len(sums) != 1 || sums[0].Untraced.QPs != burstRanks*burstQPs || len(ranks) != burstRanks {
		t.Fatalf("rdmabench burst reported %d summaries, %d ranks, %v QPs; want 1, %d and %d\n%s",
			len(sums), len(ranks), sums, burstRanks, burstRanks*burstQPs, stdout.String())
	}
	type life struct {
		pid, tid int
		got      [5]int
	}
	qps := map[uint32]*life{}
	for _, r := range ranks {
		if len(r.QPNs) != burstQPs {
			t.Errorf("rank %d (pid %d) lists %d QPs, want %d", r.Index, r.PID, len(r.QPNs), burstQPs)
		}
		if !strings.Contains(string(holdFile), fmt.Sprintf("pid %d tid %d qps %d", r.PID, r.TID, burstQPs)) {
			t.Errorf("rank %d is pid %d tid %d, its hold file says:\n%s", r.Index, r.PID, r.TID, holdFile)
		}
		for _, n := range r.QPNs {
			if qps[n] != nil {
				t.Fatalf("QP %d listed twice, by pids %d and %d", n, qps[n].pid, r.PID)
			}
			qps[n] = &life{pid: r.PID, tid: r.TID}
		}
	}

	// rdma res at the hold: the same QPs, each in RTS, each named by the
	// thread of its rank that created it (the kernel's RES_PID).
	inRes := map[uint32]bool{}
	for _, o := range rdmaResources(t, "rdma -j res show qp", resAtHold) {
		l := qps[o.LQPN]
		if o.DevName != device || l == nil {
			continue
		}
		inRes[o.LQPN] = true
		if int(o.Owner.PID) != l.tid || o.QPState != rdma.QPStateRTS {
			t.Errorf("rdma res at the hold: QP %d pid %d %v, want pid %d (rank pid %d's thread) in RTS", o.LQPN, o.Owner.PID, o.QPState, l.tid, l.pid)
		}
	}
	if len(inRes) != len(qps) {
		t.Errorf("rdma res at the hold lists %d of the burst's %d QPs", len(inRes), len(qps))
	}

	// The trace: every phase of every QP, with its process.
	wrong := make([]int, 5)
	var wrongSeen []string
	for i := range evs {
		e := &evs[i]
		l := qps[e.LQPN]
		ph := phaseOfEvent(e)
		if l == nil || ph < 0 {
			continue
		}
		if !e.Has(rdma.EvHasOwner) || int(e.Owner.PID) != l.pid {
			wrong[ph]++
			if len(wrongSeen) < 5 {
				wrongSeen = append(wrongSeen, fmt.Sprintf("QP %d %s by pid %d, want %d", e.LQPN, lifecyclePhases[ph], e.Owner.PID, l.pid))
			}
			continue
		}
		l.got[ph]++
	}
	lost := make([]int, 5)
	gaps := 0
	var firstGaps []string
	for _, n := range slices.Sorted(maps.Keys(qps)) {
		var missing []string
		for ph := range lifecyclePhases {
			if qps[n].got[ph] == 0 {
				lost[ph]++
				missing = append(missing, lifecyclePhases[ph])
			}
		}
		if len(missing) > 0 {
			gaps++
			if len(firstGaps) < 5 {
				firstGaps = append(firstGaps, fmt.Sprintf("pid %d QP %d: no %s", qps[n].pid, n, strings.Join(missing, ", ")))
			}
		}
	}
	var per []string
	total := 0
	for ph, name := range lifecyclePhases {
		per = append(per, fmt.Sprintf("%s %d", name, lost[ph]))
		total += lost[ph] + wrong[ph]
	}
	t.Logf("burst of %d×%d QPs in %v (hold and rdma res included), the tracer's last line %v after it; %d QP events traced; the tracer said: %s",
		burstRanks, burstQPs, burstTook.Round(time.Millisecond), behind.Round(time.Millisecond), len(evs), tracerCounts(tr.stderr.String()))
	if total > 0 {
		t.Errorf("the trace lacks %d of the burst's lifecycle events: lost per phase: %s of %d QPs each; %d QPs with a gap (%s); events with another pid per phase: %v %s; the tracer said: %s",
			total-sumInts(wrong), strings.Join(per, ", "), len(qps), gaps, strings.Join(firstGaps, "; "), wrong, strings.Join(wrongSeen, "; "), tracerCounts(tr.stderr.String()))
	}
}

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// tracerCounts is the tracer's last line of counts and its drop warnings'
// total, from its stderr.
func tracerCounts(stderr string) string {
	var counts string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "events:") && strings.Contains(l, "dropped") {
			counts = strings.TrimPrefix(l, "rdmatrace: ")
		}
	}
	if counts == "" {
		return "no counts line"
	}
	return counts
}

// fileTracing is `rdmatrace trace -j` writing to a file, as a user keeping
// a trace of a job would: its size says when it has caught up.
type fileTracing struct {
	cmd    *exec.Cmd
	path   string
	stderr bytes.Buffer
}

func startTraceToFile(t *testing.T) *fileTracing {
	t.Helper()
	needModuleBTF(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	tr := &fileTracing{path: filepath.Join(dir, "trace.ndjson")}
	out, err := os.Create(tr.path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	tr.cmd = exec.Command(*rdmatraceBin, "trace", "-j", "--ready-file", ready)
	tr.cmd.Stdout, tr.cmd.Stderr = out, &tr.stderr
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tr.cmd.ProcessState == nil {
			_ = tr.cmd.Process.Kill()
			_ = tr.cmd.Wait()
		}
	})
	waitFor(t, 60*time.Second, "rdmatrace trace to attach", func() bool {
		_, err := os.Stat(ready)
		return err == nil || tr.cmd.ProcessState != nil
	})
	return tr
}

// settle waits until the trace has stopped growing for 2 s (at most 2
// minutes): the tracer has read what the burst queued. It returns how
// long after the call the trace last grew.
func (tr *fileTracing) settle(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	last, grew := int64(-1), start
	for time.Since(grew) < 2*time.Second {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("rdmatrace trace still writing 2 minutes after the burst: %s", tr.stderr.String())
		}
		st, err := os.Stat(tr.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != last {
			last, grew = st.Size(), time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return grew.Sub(start)
}

// qpEvents stops the trace and reads its QP lifecycle events only: the
// other lines (CQ, PD, the context, qp-attr) are not decoded, which keeps
// a trace of tens of thousands of events quick to read under the emulator.
func qpEvents(t *testing.T, tr *fileTracing) []rdma.Event {
	t.Helper()
	_ = tr.cmd.Process.Signal(os.Interrupt)
	if err := tr.cmd.Wait(); err != nil {
		t.Fatalf("rdmatrace trace: %v\n%s", err, tr.stderr.String())
	}
	f, err := os.Open(tr.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []rdma.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"res":"qp"`)) {
			continue
		}
		var e rdma.Event
		if err := replayreader.NewReader(bytes.NewReader(line), "trace -j").Next(&e); err != nil {
			t.Fatalf("trace -j line %q: %v", line, err)
		}
		if e.Type == rdma.ResQP && e.Given(rdma.HasLQPN) && e.DevName == device {
			evs = append(evs, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}
