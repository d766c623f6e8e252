package formats

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The report goes to stdout for "" and "-", which Close leaves alone; to
// a file made 0600 otherwise; and never through a planted symlink.
func TestLeakReportFileOpensWhereItIsTold(t *testing.T) {
	var stdout bytes.Buffer
	for _, name := range []string{"", "-"} {
		r := &LeakReportFile{Name: name, Stdout: &stdout}
		if _, err := r.Open(true); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		r.Close()
	}
	dir := t.TempDir()
	r := &LeakReportFile{Name: filepath.Join(dir, "report.ndjson"), Stdout: &stdout}
	if _, err := r.Open(true); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if st, err := os.Stat(filepath.Join(dir, "report.ndjson")); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("report file mode %v, want 0600", st.Mode().Perm())
	}
	target := filepath.Join(dir, "target")
	if err := os.Symlink(target, filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	r = &LeakReportFile{Name: filepath.Join(dir, "planted"), Stdout: &stdout}
	if _, err := r.Open(false); err == nil {
		t.Error("the report followed a planted symlink")
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the symlink's target was made")
	}
}
