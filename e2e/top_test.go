//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// topRow is an owner's row of top -b: its QPs, their states, its
// creates per second.
type topRow struct {
	qps     int
	states  string
	creates float64
}

// topFrames reads top -b's output: each frame's owner rows by label.
func topFrames(t *testing.T, out string) []map[string]topRow {
	t.Helper()
	var frames []map[string]topRow
	inOwners := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "rdmatrace top - "):
			frames = append(frames, map[string]topRow{})
			inOwners = false
		case strings.HasPrefix(l, "OWNER "):
			inOwners = true
		case l == "":
			inOwners = false
		case inOwners && len(f) >= 13:
			// The owner may hold a space ("ib_core (kernel)"): it ends
			// where two spaces pad it.
			owner, rest, _ := strings.Cut(l, "  ")
			c := strings.Fields(rest)
			if len(c) < 9 {
				t.Fatalf("top -b: a row that does not read: %q", l)
			}
			qps, err1 := strconv.Atoi(c[0])
			cr, err2 := strconv.ParseFloat(c[8], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("top -b: a row that does not read: %q", l)
			}
			frames[len(frames)-1][strings.TrimSpace(owner)] = topRow{qps: qps, states: c[7], creates: cr}
		}
	}
	return frames
}

// TestTopBatch: rdmatrace top -b -n 3 -d 1 beside a connected rping pair
// (from the start listing: each rping's row with its QP in RTS) and an
// rping client started once top counts, to a port nobody listens on (its
// creates counted in the rates).
func TestTopBatch(t *testing.T) {
	needFullTier(t)
	needModuleBTF(t)
	w := &workload{t: t}
	t.Cleanup(w.stop)
	p := &pair{qps: 1, server: func(port string) []string { return []string{"rping", "-s", "-a", addr, "-p", port, "-C", "10000000"} },
		client: func(port string) []string { return []string{"rping", "-c", "-a", addr, "-p", port, "-C", "10000000"} }}
	w.startPair(p)

	ready := filepath.Join(t.TempDir(), "ready")
	began := time.Now()
	top := exec.Command(*rdmatraceBin, "top", "-b", "-n", "3", "-d", "1", "--ready-file", ready)
	var out, stderr bytes.Buffer
	top.Stdout, top.Stderr = &out, &stderr
	if err := top.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = top.Process.Kill(); _ = top.Wait() }()
	waitFor(t, 60*time.Second, "rdmatrace top to start counting", func() bool {
		_, err := os.Stat(ready)
		return err == nil || exited(top)
	})
	attached := time.Since(began)
	late := w.start("rping", "-c", "-a", addr, "-p", "7998", "-C", "1")
	if err := top.Wait(); err != nil {
		t.Fatalf("rdmatrace top -b -n 3 -d 1: %v\n%s", err, stderr.String())
	}
	t.Logf("kernel %s: attached in %v, ran %v; stderr:\n%s", release(t), attached.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), stderr.String())
	keep(t, "top/"+t.Name()+".txt", out.Bytes())

	frames := topFrames(t, out.String())
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3 (-n 3):\n%s", len(frames), out.String())
	}
	if !strings.Contains(out.String(), "source: BPF (") {
		t.Errorf("the header does not say BPF:\n%s", out.String())
	}
	for i, fr := range frames {
		for _, c := range []*exec.Cmd{p.s, p.c} {
			label := fmt.Sprintf("rping[%d]", c.Process.Pid)
			r, ok := fr[label]
			if !ok || r.qps != 1 || r.states != "RTS=1" {
				t.Errorf("frame %d: %s is %+v (listed %v), want one QP in RTS:\n%s", i+1, label, r, ok, out.String())
			}
		}
	}
	label := fmt.Sprintf("rping[%d]", late.Process.Pid)
	created := 0.0
	for _, fr := range frames {
		created += fr[label].creates
	}
	if created == 0 {
		t.Errorf("the rping client started once top counted (%s) has no creates in any frame:\n%s", label, out.String())
	}
}
