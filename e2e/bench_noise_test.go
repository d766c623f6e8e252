//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
)

// monoNow is CLOCK_MONOTONIC in ns, the clock of the intervals and samples.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

var noiseBin = filepath.Join("out", "noise")

// interval is one disturbance the noise program reports: [Start, End] ns.
type interval struct {
	what       string // "reg", "hog", or "life"; setup and teardown are their program's
	start, end int64
	edge       bool // a program's setup or teardown: it may disturb, it need not
}

func readIntervals(t *testing.T, prog string, out []byte) []interval {
	t.Helper()
	var iv []interval
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("noise printed %q, expected WHAT START END", l)
		}
		s, _ := strconv.ParseInt(f[1], 10, 64)
		e, _ := strconv.ParseInt(f[2], 10, 64)
		what, edge := f[0], false
		if what == "setup" || what == "teardown" {
			what, edge = prog, true // its own start and end disturb as well
		}
		iv = append(iv, interval{what, s, e, edge})
	}
	return iv
}

// waitForRTS waits until rdmabench's traced series runs: its tracer is
// up (a traced lat first runs the same series untraced, whose QPs are
// gone once the tracer starts), and its QPs are connected.
func waitForRTS(t *testing.T) {
	t.Helper()
	for i := 0; !followerRunning(); i++ {
		if i == 1200 { // after the untraced headline pass (-D) and its connection
			t.Fatal("rdmabench started no rdmatrace --follow-pid within 120 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 300 {
		out, _, _ := runStatus(*rdmatraceBin, "res", "qp", "comm", "rdmabench", "state", "RTS", "-j")
		if s := strings.TrimSpace(string(out)); s != "" && s != "[]" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("rdmabench lat did not connect within 30 s")
}

// followerRunning says whether an rdmatrace --follow-pid runs.
func followerRunning() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte("--follow-pid")) && bytes.Contains(b, []byte("trace")) {
			return true
		}
	}
	return false
}

// namedBy says whether one of o's events that names who (as its
// process, or as the task that ran in a spell) meets [lo, hi].
func namedBy(o *report.OutlierRecord, who string, lo, hi int64) bool {
	for _, e := range o.Events {
		if string(e.Comm) != who && string(e.NextComm) != who && string(e.LastComm) != who {
			continue
		}
		if ts := int64(e.TS); ts+int64(e.DurUS*1e3) >= lo && ts <= hi {
			return true
		}
	}
	return false
}

// TestOutliersNameTheNoise: while rdmabench lat runs traced, a program of
// ours registers 64 MiB of untouched memory and creates a QP, three times,
// and then spins pinned to the client's CPU as "hog", three times. Outliers
// inside a registration must name the noise program (its MR, its QP, or
// its taking the CPU) with its pid; those inside a spin must name the hog
// as a task that ran instead (longest or last); those outside must name
// neither. Each program's start-up and exit count as its disturbance too.
//
// The hog is SCHED_FIFO: as an ordinary task it shared the CPU as the
// scheduler saw fit, and in 6.12 under TCG runs often not at all (the
// timeline of a failing run: the series ran through all three spins, and
// no sample was slow). A run that names too few intervals is made once
// more, and said so. An outlier outside that names a cause fails at once.
func TestOutliersNameTheNoise(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	needModuleBTF(t)
	misses := outliersNameTheNoise(t)
	if len(misses) > 0 && !t.Failed() {
		t.Logf("run 1: %s; running it again", strings.Join(misses, "; "))
		misses = outliersNameTheNoise(t)
	}
	for _, m := range misses {
		t.Error(m)
	}
}

// outliersNameTheNoise is one run of TestOutliersNameTheNoise; it returns
// the intervals it found too few outliers naming.
func outliersNameTheNoise(t *testing.T) (misses []string) {
	benchBin := filepath.Join(filepath.Dir(*rdmatraceBin), "rdmabench")
	hog := filepath.Join(t.TempDir(), "hog") // its comm is "hog"
	abs, _ := filepath.Abs(noiseBin)
	if err := os.Symlink(abs, hog); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	traceDir := t.TempDir() // what the tracer saw, to explain a miss
	// 22 s: under the emulator the series connects 12-25 s after start and
	// the noise and the hog take 8-11 s; with 12 s the last spin of a run
	// on 6.12 came after the series' last sample.
	bench := exec.Command(benchBin, "lat", "-j", "-D", "22", "--rdmatrace", *rdmatraceBin, "--trace-dir", traceDir)
	bench.Stdout, bench.Stderr = &stdout, &stderr
	benchStart := monoNow()
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRTS(t)
	connected := monoNow()
	time.Sleep(time.Second) // the tracer follows the timed threads by now
	noise := exec.Command(noiseBin, "rxe0", "64", "3", "600")
	// Each program's whole life is a disturbance too (exec, loading,
	// exit): outliers there may name it, and are asserted neither way.
	noiseStart := monoNow()
	nout, err := noise.Output()
	noiseLife := interval{"life", noiseStart, monoNow(), true}
	if err != nil {
		bench.Process.Kill()
		t.Fatalf("noise: %v", err)
	}
	// The client thread runs on CPU 1 (rdmabench prints its CPUs).
	hogStart := monoNow()
	hout, err := exec.Command(hog, "hog", "1", "100", "3", "500").Output()
	hogLife := interval{"life", hogStart, monoNow(), true}
	if err != nil {
		bench.Process.Kill()
		t.Fatalf("hog: %v", err)
	}
	if err := bench.Wait(); err != nil {
		t.Fatalf("rdmabench lat: %v\n%s", err, stderr.String())
	}
	benchEnd := monoNow()
	rel := func(ns int64) string { return fmt.Sprintf("+%.2fs", float64(ns-benchStart)/1e9) }
	// The lives first: an outlier in a registration or a spin is counted
	// there (the last interval that matches wins).
	iv := append([]interval{noiseLife, hogLife}, append(readIntervals(t, "reg", nout), readIntervals(t, "hog", hout)...)...)
	noisePID := noise.Process.Pid
	out := stdout.Bytes()
	for _, sum := range records[report.LatRecord](t, out, report.RecordLatTraced) {
		if sum.TracerRatio <= 0 {
			t.Errorf("the traced series' record has no tracer cost: %+v", sum)
		}
		t.Logf("tracer cost, soft-RoCE under qemu: t_typical %.2f µs traced (with the noise), %.2f µs untraced just before: x%.2f",
			sum.LatUS.Typical, sum.UntracedTypicalUS, sum.TracerRatio)
	}
	if n := len(records[report.LatRecord](t, out, report.RecordLat)); n != 1 {
		t.Errorf("%d headline (untraced) summaries, want 1", n)
	}
	outliers := records[report.OutlierRecord](t, out, "outlier")
	counts := map[string][2]int{} // what -> outliers inside, named
	caught := map[int]bool{}      // intervals with an outlier that names their cause
	inside := map[int][]string{}  // the outliers that overlap each interval
	outside, wrong := 0, 0
	for i := range outliers {
		o := &outliers[i]
		lat := int64(o.LatUS * 1e3)
		lo, hi := o.TS-lat, o.TS+2*lat
		in, at := "", -1
		for i, v := range iv {
			if hi >= v.start-1e6 && lo <= v.end+1e6 {
				in, at = v.what, i
			}
		}
		names := func(who string) bool {
			for _, c := range o.Causes {
				if strings.HasSuffix(string(c), ":"+who) {
					return true
				}
			}
			return false
		}
		if at >= 0 {
			inside[at] = append(inside[at], fmt.Sprintf("%.0fus %q", o.LatUS, o.Causes))
		}
		switch in {
		case "reg":
			c := counts[in]
			c[0]++
			ok := false
			for _, e := range o.Events {
				if e.Comm == "noise" && int(e.PID) == noisePID {
					ok = true
				}
			}
			if ok && names("noise") {
				c[1]++
				caught[at] = true
			}
			counts[in] = c
		case "hog":
			c := counts[in]
			c[0]++
			if names("hog") {
				c[1]++
				caught[at] = true
			}
			counts[in] = c
		case "life":
		default:
			outside++
			// A spell can outlast the disturbance in it (the thread waits
			// for its CPU after the hog's last spin, behind the tasks the
			// hog held back): an outlier after it may name the hog through
			// that spell. What must not be: a name from an event that met
			// no life of that program.
			for _, who := range []struct {
				comm string
				life interval
			}{{"noise", noiseLife}, {"hog", hogLife}} {
				if names(who.comm) && !namedBy(o, who.comm, who.life.start-1e6, who.life.end+1e6) {
					wrong++
					t.Errorf("outlier at %d (%.0f us) outside every disturbance names %s through an event outside its life: %q %+v", o.TS, o.LatUS, who.comm, o.Causes, o.Events)
				}
			}
		}
	}
	if n := len(outliers); n > 0 {
		t.Logf("timeline: rdmabench started, its traced series connected %s, noise %s-%s, hog %s-%s, outliers %s-%s, rdmabench exited %s",
			rel(connected), rel(noiseLife.start), rel(noiseLife.end), rel(hogLife.start), rel(hogLife.end), rel(outliers[0].TS), rel(outliers[n-1].TS), rel(benchEnd))
	}
	t.Logf("%d outliers: %d inside registrations (%d name the noise program, pid %d), %d inside spins (%d name the hog), %d outside (%d name either)",
		len(outliers), counts["reg"][0], counts["reg"][1], noisePID, counts["hog"][0], counts["hog"][1], outside, wrong)
	// Outliers come at a background rate too (6.1's 13 µs loop: 150-200 a
	// second, inside the intervals as well), so the share of outliers in
	// an interval that name it says more about the background than about
	// the correlation (6.1: 49-80%, 6.12 and sid: 82-100%). What is held
	// instead: most registrations and most spins are each named by an
	// outlier that overlaps them (a registration that ended in 3 ms on
	// 6.12 disturbed nothing), and no outlier outside names either. A
	// program's setup and teardown are not counted there: the hog's exec
	// and pinning (3-10 ms) did not spin, and a miss there failed a run
	// that named 2 of its 3 spins.
	for _, what := range []string{"reg", "hog"} {
		n, got := 0, 0
		for i, v := range iv {
			if v.what != what || v.edge {
				continue // a setup (exec, pinning, allocation) need not disturb
			}
			n++
			if caught[i] {
				got++
			} else {
				t.Logf("no outlier overlapping the %s of %.1f ms at %d names it; the %d that overlap it: %s",
					what, float64(v.end-v.start)/1e6, v.start, len(inside[i]), strings.Join(inside[i], ", "))
				if what == "hog" {
					t.Logf("the off-cpu spells of rdmabench's threads the tracer saw then: %s", spellsIn(traceDir, v))
				}
			}
		}
		if n == 0 || got*2 < n+1 {
			misses = append(misses, fmt.Sprintf("%d of %d %s intervals are named by an outlier that overlaps them, want most (%d of %d outliers inside them name it)",
				got, n, what, counts[what][1], counts[what][0]))
		}
	}
	if len(misses) > 0 {
		t.Logf("rdmabench's stderr: %s", stderr.String())
	}
	return misses
}

// spellsIn lists the off-cpu events in dir's trace.ndjson that meet v:
// start (CLOCK_MONOTONIC), thread, length, who ran instead and last.
func spellsIn(dir string, v interval) string {
	b, err := os.ReadFile(filepath.Join(dir, "ready"))
	if err != nil {
		return err.Error()
	}
	var offset int64
	for _, l := range strings.Split(string(b), "\n") {
		if o, ok := strings.CutPrefix(l, "clock-offset "); ok {
			fmt.Sscan(o, &offset)
		}
	}
	f, err := os.Open(filepath.Join(dir, "trace.ndjson"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Event   string    `json:"event"`
			Time    time.Time `json:"time"`
			TID     int       `json:"pid"`
			DurUS   float64   `json:"dur-us"`
			Next    string    `json:"next-comm"`
			Actor   string    `json:"actor-comm"`
			Preempt bool      `json:"preempted"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Event != "off-cpu" {
			continue
		}
		start := e.Time.UnixNano() - offset
		if end := start + int64(e.DurUS*1e3); end < v.start || start > v.end {
			continue
		}
		out = append(out, fmt.Sprintf("%+.1fms tid %d %.0fus preempted %v next %s last %s", float64(start-v.start)/1e6, e.TID, e.DurUS, e.Preempt, e.Next, e.Actor))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// TestBenchTracerCost runs lat traced with nothing else disturbing it and
// logs what the tracer cost (the run measures it: the same series untraced
// just before). The goal, traced/untraced <= 1.05 on the medians, is
// docs/benchmarks.md's; soft-RoCE under TCG, where the tracer's reader competes
// for the 2 vCPUs that both ends busy-poll on, is not where it is judged.
func TestBenchTracerCost(t *testing.T) {
	needBenchRun(t)
	needDevice(t)
	needModuleBTF(t)
	var ratios []float64
	for range 3 {
		ports += 10
		out := benchOut(t, "lat", "-d", device, "-p", strconv.Itoa(ports), "-n", "3000", "-j", "--rdmatrace", *rdmatraceBin)
		head := records[report.LatRecord](t, out, report.RecordLat)
		sum := records[report.LatRecord](t, out, report.RecordLatTraced)
		if len(head) != 1 || len(sum) != 1 {
			t.Fatalf("%d headline and %d traced summaries, want one each", len(head), len(sum))
		}
		if head[0].Tracing != "off" || head[0].TracerRatio != 0 {
			t.Errorf("the headline is not the untraced pass: %+v", head[0])
		}
		r := sum[0].TracerRatio
		if r <= 0 || !strings.HasPrefix(sum[0].Tracing, "rdmatrace") || sum[0].UntracedTypicalUS != head[0].LatUS.Typical {
			t.Fatalf("a traced series without its tracer cost against the headline: %+v", sum[0])
		}
		// The causes, most frequent first: is the tracer itself the top one?
		causes := slices.Collect(maps.Keys(sum[0].Causes))
		slices.SortFunc(causes, func(a, b string) int { return sum[0].Causes[b] - sum[0].Causes[a] })
		var top []string
		for _, c := range causes[:min(5, len(causes))] {
			top = append(top, fmt.Sprintf("%s %d", c, sum[0].Causes[c]))
		}
		wakeups := "unknown"
		if w := sum[0].TracerWakeups; w != nil && sum[0].TracedSec > 0 {
			wakeups = fmt.Sprintf("%d in %.2f s (%.1f a second)", *w, sum[0].TracedSec, float64(*w)/sum[0].TracedSec)
		}
		t.Logf("soft-RoCE under qemu: t_typical %.2f µs untraced (the headline), %.2f µs traced: x%.3f; tracer %q woke %s; top causes: %s",
			head[0].LatUS.Typical, sum[0].LatUS.Typical, r, sum[0].Tracing, wakeups, strings.Join(top, ", "))
		ratios = append(ratios, r)
	}
	t.Logf("tracer cost over 3 runs: median x%.3f %v", median(ratios), ratios)
}
