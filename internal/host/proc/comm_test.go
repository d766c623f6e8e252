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

func TestStatusUID(t *testing.T) {
	for _, c := range []struct {
		in   string
		uid  uint32
		okay bool
	}{
		{"Name:\tx\nUid:\t65534\t0\t0\t0\nGid:\t0\n", 65534, true},
		{"Name:\tx\n", 0, false},
		{"Uid:\n", 0, false},
		{"Uid:\tx\t1\n", 0, false},
	} {
		uid, ok := statusUID([]byte(c.in))
		if uid != c.uid || ok != c.okay {
			t.Errorf("statusUID(%q) = %d, %v; want %d, %v", c.in, uid, ok, c.uid, c.okay)
		}
	}
}
