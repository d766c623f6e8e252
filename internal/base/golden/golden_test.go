package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder stands for a test: it notes failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheckPassesOnEqualAndFailsOnDifferentOrMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		got  string
		fail bool
	}{
		{path, "a\n", false},
		{path, "b\n", true},
		{path + ".missing", "a\n", true},
	} {
		r := &recorder{TB: t}
		Check(r, c.path, []byte(c.got))
		if r.failed != c.fail {
			t.Errorf("Check(%s, %q): failed %v, want %v", filepath.Base(c.path), c.got, r.failed, c.fail)
		}
	}
}

func TestUpdateWritesTheFileAndItsDirectory(t *testing.T) {
	*update = true
	defer func() { *update = false }()
	path := filepath.Join(t.TempDir(), "new", "out.golden")
	Check(t, path, []byte("x\n"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "x\n" {
		t.Fatalf("wrote %q, %v", b, err)
	}
}
