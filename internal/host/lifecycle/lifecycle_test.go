package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
