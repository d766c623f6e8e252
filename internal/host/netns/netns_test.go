package netns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoots makes /run/netns and /proc shapes: a namespace is a file, its
// inode the identity; two processes share ours, one is in "blue".
func fakeRoots(t *testing.T) Roots {
	t.Helper()
	r := Roots{Named: t.TempDir(), Proc: t.TempDir()}
	write := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	ours := filepath.Join(r.Proc, "1", "ns", "net")
	write(ours)
	link(ours, filepath.Join(r.Proc, "self", "ns", "net"))
	link(ours, filepath.Join(r.Proc, "20", "ns", "net"))
	write(filepath.Join(r.Named, "blue"))
	link(filepath.Join(r.Named, "blue"), filepath.Join(r.Proc, "300", "ns", "net"))
	write(filepath.Join(r.Proc, "4000", "ns", "net")) // a container's, not named
	if err := os.MkdirAll(filepath.Join(r.Proc, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

func names(nss []NS) string {
	var s []string
	for _, ns := range nss {
		s = append(s, ns.Name)
	}
	return strings.Join(s, ",")
}

func TestAllListsEachNamespaceOnceOursFirst(t *testing.T) {
	nss, err := fakeRoots(t).All()
	if err != nil {
		t.Fatal(err)
	}
	if got := names(nss); got != "self,blue,pid 4000" {
		t.Errorf("All = %s, want self,blue,pid 4000", got)
	}
}

func TestFindByNameAndPath(t *testing.T) {
	r := fakeRoots(t)
	nss, err := r.Find("blue")
	if err != nil || names(nss) != "blue" {
		t.Fatalf("Find(blue) = %v, %v", nss, err)
	}
	p := filepath.Join(r.Proc, "4000", "ns", "net")
	if nss, err := r.Find(p); err != nil || len(nss) != 1 || nss[0].Path != p {
		t.Fatalf("Find(%s) = %v, %v", p, nss, err)
	}
	if _, err := r.Find("red"); err == nil || !strings.Contains(err.Error(), `"red"`) || !strings.Contains(err.Error(), "ip netns list") {
		t.Errorf("Find(red) error = %v, want one naming red and how to list the names", err)
	}
	if _, err := r.Find(""); err == nil {
		t.Error("Find of nothing was accepted")
	}
}

// Our own namespace has at least the loopback address.
func TestAddrsOfOurNamespace(t *testing.T) {
	addrs, err := Addrs("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.IsLoopback() {
			return
		}
	}
	t.Errorf("no loopback address among %v", addrs)
}

func TestDecodeAddrRefusesShortMessages(t *testing.T) {
	if _, ok := decodeAddr([]byte{2, 24}); ok {
		t.Error("a message shorter than ifaddrmsg gave an address")
	}
}

func FuzzDecodeAddr(f *testing.F) {
	f.Add([]byte{2, 24, 0, 0, 1, 0, 0, 0, 8, 0, 2, 0, 10, 99, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, ok := decodeAddr(b); ok && !a.IsValid() {
			t.Fatalf("an invalid address reported as one: %v", a)
		}
	})
}
