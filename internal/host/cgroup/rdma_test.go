package cgroup

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseRDMAStat(t *testing.T) {
	got, err := ParseRDMAStat(strings.NewReader("rxe0 hca_handle=1 hca_object=max\nsiw0 hca_handle=max hca_object=8\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := RDMAStat{"rxe0": {"hca_handle": 1, "hca_object": -1}, "siw0": {"hca_handle": -1, "hca_object": 8}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"rxe0 hca_object\n", "rxe0 hca_object=-3\n", "rxe0 hca_object=x\n"} {
		if _, err := ParseRDMAStat(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: got %v, want an error naming line 1", bad, err)
		}
	}
}

// The limit reached is the nearest level whose use has reached its max:
// a child without a limit of its own is refused by its parent's.
func TestRDMALimitReached(t *testing.T) {
	root := t.TempDir()
	write := func(rel, max, cur string) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "rdma.max"), []byte(max), 0o644)
		os.WriteFile(filepath.Join(dir, "rdma.current"), []byte(cur), 0o644)
	}
	write("pod-b", "rxe0 hca_handle=max hca_object=8\n", "rxe0 hca_handle=1 hca_object=8\n")
	write("pod-b/app", "rxe0 hca_handle=max hca_object=max\n", "rxe0 hca_handle=1 hca_object=8\n")
	l, ok := RDMALimitReached(root, "/pod-b/app", "rxe0", "hca_object")
	if !ok || l != (RDMALimit{Path: "/pod-b", Max: 8, Current: 8}) {
		t.Fatalf("got %+v %v, want pod-b's 8 of 8", l, ok)
	}
	if _, ok := RDMALimitReached(root, "/pod-b/app", "siw0", "hca_object"); ok {
		t.Fatal("siw0 has no limit anywhere, got one")
	}
	// Freed since: the nearest limit still names the cgroup.
	write("pod-b", "rxe0 hca_object=8\n", "rxe0 hca_object=5\n")
	if l, ok := RDMALimitReached(root, "pod-b/app", "rxe0", "hca_object"); !ok || l.Current != 5 || l.Path != "/pod-b" {
		t.Fatalf("got %+v %v, want pod-b's 5 of 8", l, ok)
	}
}
