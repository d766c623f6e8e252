package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// The ready file refuses a symbolic link planted at its name (and names
// it), and is 0600 otherwise, written whole.
func TestReadyFileRefusesPlantedLinksAndIsOwnerOnly(t *testing.T) {
	t.Setenv("SUDO_UID", "") // the file stays the test's
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "ready")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteReadyFile(link, "1\n"); err == nil || !strings.Contains(err.Error(), link) {
		t.Errorf("WriteReadyFile = %v, want a refusal naming %s", err, link)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's secret\n" {
		t.Errorf("written through the planted link: the victim holds %q", b)
	}
	p := filepath.Join(dir, "new-ready")
	if err := WriteReadyFile(p, "42\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "42\n" {
		t.Errorf("ready file holds %q", b)
	}
	if st, err := os.Lstat(p); err != nil || st.Mode() != 0o600 {
		t.Errorf("ready file: %v, %v; want -rw-------", st.Mode(), err)
	}
}

// ourselves runs a program as this test's user.
func ourselves(t *testing.T) *launch.Identity {
	t.Helper()
	id, err := launch.ChooseUser("", func(string) string { return "" }, os.Geteuid(), launch.SystemUsers{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A run with a program ends when it exits, and ends with its exit status;
// the ready file is written before, with the run's own first line.
func TestARunEndsWithItsProgramsStatus(t *testing.T) {
	t.Setenv("SUDO_UID", "")
	ready := filepath.Join(t.TempDir(), "ready")
	var stderr strings.Builder
	r, err := Start(context.Background(), Options{Argv: []string{"sh", "-c", "exit 3"}, User: ourselves(t),
		ReadyFile: ready, Ready: func() string { return "handle\n" }, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ready); string(b) != "handle\n" {
		t.Errorf("ready file %q, want the run's first line", b)
	}
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the program's exit did not stop the run")
	}
	r.Wait()
	var ee *ExitError
	if err := r.End(); !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("End = %v, want exit status 3", err)
	}
}

// Without a program, --duration stops the run, and its status is 0.
func TestDurationStopsARun(t *testing.T) {
	start := time.Now()
	r, err := Start(context.Background(), Options{Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Context().Done()
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("stopped after %v, before the duration", d)
	}
	r.Wait()
	if err := r.End(); err != nil {
		t.Errorf("End = %v", err)
	}
}

// A parent's stop (a command's own: its count reached) stops the run.
func TestParentStopsARun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-r.Context().Done()
	if err := r.End(); err != nil {
		t.Errorf("End = %v", err)
	}
}

// A command ready only later writes the ready file when it says so.
func TestReadyLaterWaitsForTheCommand(t *testing.T) {
	t.Setenv("SUDO_UID", "")
	ready := filepath.Join(t.TempDir(), "ready")
	r, err := Start(context.Background(), Options{ReadyFile: ready, ReadyLater: true, Ready: func() string { return "127.0.0.1:9879\n" }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	if _, err := os.Stat(ready); err == nil {
		t.Fatal("the ready file was written at Start")
	}
	if err := r.MarkReady(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ready); string(b) != "127.0.0.1:9879\n" {
		t.Errorf("ready file %q", b)
	}
}
