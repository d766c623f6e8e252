package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

func TestParseSizeReadsPerftestsSuffixes(t *testing.T) {
	for in, want := range map[string]int64{"2": 2, "4096": 4096, "4K": 4096, "4k": 4096, "1M": 1 << 20, "1G": 1 << 30, " 64 ": 64} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "K", "1T", "2x", "1.5M", "2000G"} {
		if _, err := parseSize(in); err == nil || !strings.Contains(err.Error(), "want a number of bytes") {
			t.Errorf("parseSize(%q): error %v, want one saying what is expected", in, err)
		}
	}
}

func TestParseSweepTakesARangeInStepsOfFourOrAList(t *testing.T) {
	got, err := parseSweep("4K-1G")
	want := []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("4K-1G: %v %v", got, err)
	}
	if got, _ := parseSweep("4K-100K"); !reflect.DeepEqual(got, []int64{4096, 16384, 65536, 102400}) {
		t.Errorf("4K-100K ends at 100K: %v", got)
	}
	if got, _ := parseSweep("4K,1M"); !reflect.DeepEqual(got, []int64{4096, 1 << 20}) {
		t.Errorf("list: %v", got)
	}
	if _, err := parseSweep("1M-4K"); err == nil {
		t.Error("a falling range was accepted")
	}
}

func TestEmulatedNamesASoftwareDevice(t *testing.T) {
	sys := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sys, "class/infiniband/rxe0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if e := emulated(sys, "rxe0"); !strings.Contains(e, "software RDMA device") || !strings.Contains(e, "not hardware") {
		t.Errorf("rxe0 without a PCI device: %q", e)
	}
	if err := os.MkdirAll(filepath.Join(sys, "class/infiniband/mlx5_0/device"), 0o755); err != nil {
		t.Fatal(err)
	}
	if e := emulated(sys, "mlx5_0"); strings.Contains(e, "software") {
		t.Errorf("mlx5_0 with a PCI device: %q", e)
	}
}

type fakeSession struct{}

func (fakeSession) Lat(*bench.Recorder, *bench.Summary, []int, int) (map[string]int, error) {
	return nil, nil
}
func (fakeSession) Conn([]bench.Conn) error     { return nil }
func (fakeSession) Ctrl([]bench.Op) error       { return nil }
func (fakeSession) Stop() error                 { return nil }
func (fakeSession) TracerSleeps() (int64, bool) { return 0, false }

func traceCtx(t *testing.T, args ...string) *cli.Context {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	for _, f := range append([]cli.Flag{traceFlag, noTraceFlag}, tracingFlags...) {
		if err := f.Apply(fs); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cli.NewContext(nil, fs, nil)
}

func TestTracingFollowsTheFlags(t *testing.T) {
	if traceOptions(traceCtx(t), traceRequest{}).Off {
		t.Error("tracing is the default")
	}
	if !traceOptions(traceCtx(t, "--trace", "--no-trace"), traceRequest{}).Off {
		t.Error("--no-trace wins")
	}
}

// A tracer that cannot start (a kernel without module BTF, no privileges)
// leaves a default run untraced and says why; --trace makes it an error.
func TestTracingThatCannotStartDegradesUnlessAskedFor(t *testing.T) {
	saved := startTracing
	defer func() { startTracing = saved }()
	startTracing = func(traceRequest) (traceSession, error) {
		return nil, errors.New("rdmatrace: kernel has no module BTF")
	}
	s, desc, err := startTrace(traceOptions(traceCtx(t), traceRequest{}))
	if s != nil || err != nil || desc != "unavailable: rdmatrace: kernel has no module BTF" {
		t.Errorf("default: %v %q %v", s, desc, err)
	}
	if _, _, err := startTrace(traceOptions(traceCtx(t, "--trace"), traceRequest{})); err == nil {
		t.Error("--trace with a tracer that cannot start: no error")
	}
}
