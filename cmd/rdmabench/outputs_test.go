package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"golang.org/x/sys/unix"
)

// An untraced lat run still writes --plot and --perfetto: its samples,
// without causes.
func TestUntracedRunWritesItsPlotAndPerfettoFile(t *testing.T) {
	dir := t.TempDir()
	svg, js := filepath.Join(dir, "lat.svg"), filepath.Join(dir, "lat.json")
	c := traceCtx(t, "--no-trace", "--plot", svg, "--perfetto", js)
	req := traceOptions(c, traceRequest{Bench: "lat", PID: 100, Dev: "rxe0"})
	if err := checkOutputs(req); err != nil {
		t.Fatal(err)
	}
	o := newOutputs(req)
	rec := bench.NewRecorder(bench.RecorderConfig{Series: keptSamples})
	var samples []bench.Sample
	for i := range 500 {
		samples = append(samples, bench.Sample{Start: int64(i) * 40_000, Lat: int64(20_000 + i%50*100)})
	}
	rec.Add(samples)
	o.addSeries(rec)
	if err := o.write(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "untraced") {
		t.Errorf("--plot wrote %d bytes (%v), want an SVG that says the run was untraced", len(b), err)
	}
	b, err = os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatalf("--perfetto wrote no JSON: %v", err)
	}
	n := 0
	for _, e := range tl.TraceEvents {
		if e.Name == "latency" && e.Ph == "C" {
			n++
		}
	}
	if n != 500 {
		t.Errorf("--perfetto has %d latency points, want the 500 samples", n)
	}
}

// What cannot be written is refused before the run, with why.
func TestOutputsThatCannotBeWrittenAreRefusedFirst(t *testing.T) {
	for _, tc := range []struct {
		bench string
		args  []string
		want  string
	}{
		{"lat", []string{"--plot", "x.pdf"}, "ending in .svg or .png"},
		{"conn", []string{"--plot", "x.svg"}, "--plot is for lat"},
		{"ctrl", []string{"--plot", "x.png"}, "--plot is for lat"},
		{"ctrl", []string{"--no-trace", "--perfetto", "x.json"}, "--no-trace turns tracing off"},
	} {
		err := checkOutputs(traceOptions(traceCtx(t, tc.args...), traceRequest{Bench: tc.bench}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want %q", tc.bench, tc.args, err, tc.want)
		}
	}
	for _, ok := range [][]string{{"--plot", "x.svg", "--no-trace"}, {"--perfetto", "x.json", "--no-trace"}} {
		if err := checkOutputs(traceOptions(traceCtx(t, ok...), traceRequest{Bench: "lat"})); err != nil {
			t.Errorf("lat %v: %v", ok, err)
		}
	}
	if err := checkOutputs(traceOptions(traceCtx(t, "--perfetto", "x.json", "--no-trace"), traceRequest{Bench: "conn"})); err != nil {
		t.Errorf("conn --perfetto untraced: %v", err)
	}
}

// A run with no series to draw says so rather than leaving no file.
func TestAPlotWithNoSamplesIsAnError(t *testing.T) {
	o := newOutputs(traceOptions(traceCtx(t, "--plot", filepath.Join(t.TempDir(), "x.svg")), traceRequest{PID: 1, Dev: "rxe0"}))
	if err := o.write(); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("error %v, want no samples", err)
	}
}

// The tracer goes where the timed threads are not; with no CPU of its
// own, nor pinned ends, it is left to the scheduler at the usual nice.
func TestTracerPlaceAvoidsTheBenchmarksCPUs(t *testing.T) {
	cpusOf := func(n int) *unix.CPUSet {
		var s unix.CPUSet
		for i := 0; i < n; i++ {
			s.Set(i)
		}
		return &s
	}
	for _, tc := range []struct {
		cpus  int
		bench []int
		want  []int
		nice  int
	}{
		{4, []int{0, 1}, []int{2, 3}, 19},
		{2, []int{0, 1}, nil, 0},
		{4, []int{-1, -1}, nil, 0},
		{3, []int{2, -1}, []int{0, 1}, 19},
	} {
		cpus, nice := placeTracer(cpusOf(tc.cpus), tc.bench)
		if fmt.Sprint(cpus) != fmt.Sprint(tc.want) || nice != tc.nice {
			t.Errorf("%d CPUs, ends on %v: tracer on %v at nice %d, want %v at %d", tc.cpus, tc.bench, cpus, nice, tc.want, tc.nice)
		}
	}
}

func TestTracerCPUsFlag(t *testing.T) {
	if cpus, nice, err := tracerCPUs("any", []int{0, 1}); cpus != nil || nice != 0 || err != nil {
		t.Errorf("any: %v %d %v", cpus, nice, err)
	}
	if cpus, nice, err := tracerCPUs("2, 3", []int{0, 1}); len(cpus) != 2 || cpus[1] != 3 || nice != 19 || err != nil {
		t.Errorf("2,3: %v %d %v", cpus, nice, err)
	}
	for _, bad := range []string{"x", "1,", "-1", "4096"} {
		if _, _, err := tracerCPUs(bad, nil); err == nil || !strings.Contains(err.Error(), "want a list of CPU numbers") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// conn untraced: --perfetto shows each connection from the program's own
// steps.
func TestUntracedConnWritesItsSteps(t *testing.T) {
	js := filepath.Join(t.TempDir(), "conn.json")
	o := newOutputs(traceOptions(traceCtx(t, "--no-trace", "--perfetto", js), traceRequest{PID: 100, Dev: "rxe0"}))
	o.conns = []bench.Conn{{Index: 1, Start: 1_000_000, End: 9_000_000, Client: bench.Side{PID: 100, TID: 101, Steps: []bench.Step{
		{Name: "connect", Start: 2_000_000, Dur: 3_000_000}, {Name: "disconnect", Start: 6_000_000, Dur: 1_000_000}}}}}
	if err := o.write(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatal(err)
	}
	track, phases := false, 0
	for _, e := range tl.TraceEvents {
		if e.Ph == "M" && e.Args["name"] == "connection 1" {
			track = true
		}
		if e.Ph == "X" {
			phases++
		}
	}
	if !track || phases == 0 {
		t.Errorf("connection track %v, %d phase slices: want the connection's steps\n%s", track, phases, b)
	}
}
