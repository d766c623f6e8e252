package gid

import (
	"bytes"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fakeView records what Run writes; at the flushes'th flush it sends
// SIGTERM, which ends a watch as Ctrl-C does.
type fakeView struct {
	tables  [][]rdma.GIDEntry
	changes []string
	flushes int
	stopAt  int
}

func (v *fakeView) Table(gs []rdma.GIDEntry) error { v.tables = append(v.tables, gs); return nil }
func (v *fakeView) Change(_ time.Time, what string, g *rdma.GIDEntry) error {
	v.changes = append(v.changes, what+" "+g.DevName)
	return nil
}
func (v *fakeView) Flush() error {
	if v.flushes++; v.flushes == v.stopAt {
		return syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	}
	return nil
}

// gid without urfave/cli: the table, then a read's error (exit status 1
// for the command) after what could be read.
func TestRunWritesTheTableThenTheError(t *testing.T) {
	v := &fakeView{}
	if err := (Source{Root: "../../../testdata/gid"}).Run(RunOptions{Filter: Filter{Dev: "rxe0"}}, v); err != nil {
		t.Fatal(err)
	}
	if len(v.tables) != 1 || len(v.tables[0]) == 0 || v.tables[0][0].DevName != "rxe0" {
		t.Errorf("tables %v, want rxe0's once", v.tables)
	}
	v = &fakeView{}
	err := (Source{Root: "../../../testdata/gid-bad"}).Run(RunOptions{}, v)
	if err == nil || !strings.HasPrefix(err.Error(), "gid: ") || !strings.Contains(err.Error(), "gids/0: expected a GID") {
		t.Errorf("bad tree: %v, want the read's error", err)
	}
	if len(v.tables) != 1 || len(v.tables[0]) != 2 {
		t.Errorf("bad tree: tables %v, want the two good entries first", v.tables)
	}
}

// gid -w: a read's error is said on slog and the watch goes on, until a
// signal ends it without an error.
func TestRunWatchWarnsAndGoesOnUntilASignal(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	v := &fakeView{stopAt: 2}
	done := make(chan error, 1)
	go func() {
		done <- (Source{Root: "../../../testdata/gid-bad"}).Run(RunOptions{Watch: true, Every: time.Millisecond}, v)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end at SIGTERM")
	}
	if len(v.tables) != 1 || v.flushes < 2 || len(v.changes) != 0 {
		t.Errorf("tables %d, flushes %d, changes %v: want one table, the watch's flushes, no change", len(v.tables), v.flushes, v.changes)
	}
	if !strings.Contains(log.String(), "gid: ") || !strings.Contains(log.String(), "expected a GID") {
		t.Errorf("the read's error was not said: %q", log.String())
	}
}
