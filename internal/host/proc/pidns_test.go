package proc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOwnPIDNamespace(t *testing.T) {
	// A file's inode is not the initial namespace's.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "self", "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "self", "ns", "pid"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !OwnPIDNamespace(root) {
		t.Error("a namespace whose inode is not PROC_PID_INIT_INO was taken for the host's")
	}
	if OwnPIDNamespace(t.TempDir()) {
		t.Error("no /proc/self/ns/pid was taken for a namespace of our own")
	}
	// The test itself runs in the host's pid namespace in CI and the guest.
	if OwnPIDNamespace("") {
		t.Log("this test runs in a pid namespace of its own")
	}
}
