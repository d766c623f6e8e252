package topview

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay/replaytest"
)

// frames folds the events into an aggregator and takes a frame at each
// of at, each with the events before it.
func frames(evs []rdma.Event, by top.By, start time.Time, at ...time.Time) []*top.Frame {
	a := top.New(by, 0, 0)
	a.Start(start)
	var out []*top.Frame
	i := 0
	for _, t := range at {
		for ; i < len(evs) && evs[i].Time.Before(t); i++ {
			a.Add(&evs[i])
		}
		f := a.Frame(t)
		f.Source = top.Source{BPF: true, Hooks: 41}
		f.DropsKnown = true
		f.Ports = []rdma.Port{{DevName: "rxe0", Port: 1, State: 4, Netdev: "veth0"}, {DevName: "siw0", Port: 1, State: 1}}
		out = append(out, f)
	}
	return out
}

var rpingStart = time.Date(2026, 11, 22, 14, 43, 9, 490_000_000, time.UTC)

// An rping pair on 6.12 (testdata/tracer/6.12), seen by top -b at two
// refreshes: connected (both QPs in RTS), then ended and rxe1 removed.
func TestBatchGoldenRping(t *testing.T) {
	evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", "tracer", "6.12", "trace.ndjson"))
	var b bytes.Buffer
	v := NewBatch(&b, top.SortCreates)
	for _, f := range frames(evs, top.ByProcess, rpingStart, rpingStart.Add(time.Second), rpingStart.Add(3*time.Second)) {
		if err := v.Show(f); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "top", "rping-6.12.txt"), b.Bytes())
	first := strings.Split(b.String(), "\n\n\n")[0]
	for _, want := range []string{"rping[213]", "rping[216]", "RTS=1"} {
		if !strings.Contains(first, want) {
			t.Errorf("first frame without %q:\n%s", want, first)
		}
	}
}

// Failures: rping against a peer that refuses or is not there, with the
// last failure in words, sorted by failures.
func TestBatchGoldenFailures(t *testing.T) {
	evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", "why", "rping-failures.ndjson"))
	start := evs[0].Time.Truncate(time.Second)
	var b bytes.Buffer
	v := NewBatch(&b, top.SortFailures)
	for _, f := range frames(evs, top.ByProcess, start, evs[len(evs)-1].Time.Add(time.Second).Truncate(time.Second)) {
		if err := v.Show(f); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "top", "failures.txt"), b.Bytes())
}

// Names from the kernel and from processes are escaped: no control
// character reaches the terminal.
func TestBatchEscapesNames(t *testing.T) {
	a := top.New(top.ByProcess, 0, 0)
	a.Start(rpingStart)
	e := rdma.Event{Kind: rdma.EvCreate, Time: rpingStart, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	e.Type, e.DevName, e.PDN, e.ID = rdma.ResPD, "rxe\x1b[2J0", 1, 1
	e.Owner = rdma.Owner{PID: 7, Comm: "evil\x1b]0;pwned\x07"}
	a.Add(&e)
	var b bytes.Buffer
	if err := NewBatch(&b, top.SortCreates).Show(a.Frame(rpingStart.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Errorf("control characters written:\n%q", b.String())
	}
}

// screenText is the simulated screen's lines.
func screenText(s tcell.SimulationScreen) []string {
	cells, w, h := s.GetContents()
	lines := make([]string, h)
	for y := range h {
		var b strings.Builder
		for x := range w {
			c := cells[y*w+x]
			if len(c.Runes) == 0 {
				b.WriteByte(' ')
				continue
			}
			b.WriteString(string(c.Runes))
		}
		lines[y] = strings.TrimRight(b.String(), " ")
	}
	return lines
}

// ownerColumn is the owner rows' first words on the screen, in order.
func ownerColumn(lines []string) []string {
	var out []string
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "OWNER "):
			in = true
		case in && (l == "" || strings.HasPrefix(l, " q quit")):
			return out
		case in:
			out = append(out, strings.Fields(l)[0])
		}
	}
	return out
}

// The full screen: a frame drawn with the keys shown; s and the column
// letters sort the owners; q quits (the run's stop is called).
func TestScreenKeys(t *testing.T) {
	evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", "tracer", "6.12", "trace.ndjson"))
	f := frames(evs, top.ByProcess, rpingStart, rpingStart.Add(time.Second))[0]
	sim := tcell.NewSimulationScreen("UTF-8")
	stopped := make(chan struct{})
	sc, err := NewScreen(sim, top.SortCreates, func() { close(stopped) })
	if err != nil {
		t.Fatal(err)
	}
	sim.SetSize(160, 30)
	f.Notes = []string{"rdmatrace: a line of the tracer's"}
	if err := sc.Show(f); err != nil {
		t.Fatal(err)
	}
	lines := screenText(sim)
	if !strings.HasPrefix(lines[0], "rdmatrace top - 14:43:10") || !strings.HasPrefix(lines[29], " q quit  s next sort") ||
		lines[28] != "rdmatrace: a line of the tracer's" {
		t.Errorf("screen:\n%s", strings.Join(lines, "\n"))
	}
	// By creates: rping[213] made more in the interval than rping[216]
	// (the same on both sides: the name breaks the tie). By name, the
	// kernel's ib_core goes after the rpings.
	byCreates := ownerColumn(lines)
	if len(byCreates) != 3 {
		t.Fatalf("owners %v:\n%s", byCreates, strings.Join(lines, "\n"))
	}
	wait := func(cond func([]string) bool) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			l := screenText(sim)
			if cond(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("screen never changed as expected:\n%s", strings.Join(l, "\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sim.InjectKey(tcell.KeyRune, 'n', tcell.ModNone)
	lines = wait(func(l []string) bool { return strings.Contains(strings.Join(l, "\n"), "sorted by name") })
	if got := strings.Join(ownerColumn(lines), " "); got != "ib_core rping[213] rping[216]" {
		t.Errorf("sorted by name: %s", got)
	}
	sim.InjectKey(tcell.KeyRune, 's', tcell.ModNone) // name → creates, the first again
	wait(func(l []string) bool { return strings.Contains(strings.Join(l, "\n"), "sorted by creates") })
	if sc.Sort() != top.SortCreates {
		t.Errorf("s after name: sort %v, want creates", sc.Sort())
	}
	select {
	case <-stopped:
		t.Fatal("stopped before q")
	default:
	}
	sim.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("q did not stop the run")
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
}
