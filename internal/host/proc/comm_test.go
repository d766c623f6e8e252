package proc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommReadsAndCaches(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "42", "comm"), []byte("rping\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &CommCache{Root: root}
	if got := c.Comm(42); got != "rping" {
		t.Errorf("Comm(42) = %q, want rping", got)
	}
	os.RemoveAll(filepath.Join(root, "42"))
	if got := c.Comm(42); got != "rping" {
		t.Errorf("second Comm(42) = %q, want the cached rping", got)
	}
	if got := c.Comm(43); got != "" {
		t.Errorf("Comm of a missing pid = %q, want empty", got)
	}
	if got := c.Comm(0); got != "" {
		t.Errorf("Comm(0) = %q, want empty", got)
	}
}
