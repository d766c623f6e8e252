package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plant makes dir/name a symbolic link to a file of root's, as anyone who
// can write dir could, and returns a check that the file is untouched.
func plant(t *testing.T, dir, name string) (path string, untouched func()) {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name)
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		if b, _ := os.ReadFile(victim); string(b) != "root's secret\n" {
			t.Errorf("written through the link planted at %s: the victim holds %q", name, b)
		}
	}
}

func wantMode(t *testing.T, path string) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o600 {
		t.Errorf("%s: mode %v, want -rw-------", filepath.Base(path), st.Mode())
	}
}

// Every file rdmatrace makes (trace -w: formats.EventOutput's test) refuses a symbolic link planted at its name
// (and names it), and is 0600 otherwise.
func TestOutputsRefusePlantedLinksAndAreOwnerOnly(t *testing.T) {
	t.Setenv("SUDO_UID", "") // the files stay the test's
	t.Run("leaks --report", func(t *testing.T) {
		dir := t.TempDir()
		link, untouched := plant(t, dir, "report")
		log := filepath.Join("..", "..", "testdata", "kernlog", "named-restrack.dmesg")
		_, stderr, code := rdmatrace(t, "leaks", "--log", log, "--report", link)
		if code == 0 || !strings.Contains(stderr, "symbolic link") {
			t.Errorf("leaks --report LINK: exit %d, %q; want a refusal", code, stderr)
		}
		untouched()
		p := filepath.Join(dir, "new-report")
		_, stderr, _ = rdmatrace(t, "leaks", "--log", log, "--report", p)
		if b, _ := os.ReadFile(p); len(b) == 0 {
			t.Fatalf("no report in %s: %s", p, stderr)
		}
		wantMode(t, p)
	})
}

// A trace -w FILE -C that fails before it traces (here: no RDMA stack, or
// not root) leaves the earlier recording as it was, FILE and every FILE.n;
// so does a usage error.
func TestFailingTraceLeavesTheEarlierRecording(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.ndjson")
	names := []string{"rec.ndjson", "rec.ndjson.1", "rec.ndjson.2", "rec.ndjson.9"}
	for _, n := range names {
		os.WriteFile(filepath.Join(dir, n), []byte("earlier "+n+"\n"), 0o600)
	}
	_, stderr, code := rdmatrace(t, "trace", "-w", rec, "-C", "1", "-W", "3", "--no-snapshot", "--duration", "1s")
	if code == 0 {
		t.Skip("this machine can trace RDMA: the run did not fail")
	}
	if _, _, code := rdmatrace(t, "trace", "-r", rec, "-w", filepath.Join(dir, "other")); code != 2 {
		t.Errorf("trace -r -w: exit %d, want a usage error", code)
	}
	for _, n := range names {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != "earlier "+n+"\n" {
			t.Errorf("%s holds %q after a failed run (%s)", n, b, strings.TrimSpace(stderr))
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "other")); err == nil {
		t.Error("trace -r -w, a usage error, created the -w file")
	}
}
