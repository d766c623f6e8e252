package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestMountInTheHybridLayout(t *testing.T) {
	dir := t.TempDir()
	mi := filepath.Join(dir, "mountinfo")
	os.WriteFile(mi, []byte("30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"+
		"31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n"+
		"40 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), 0o644)
	defer func(old string) { MountinfoPath = old }(MountinfoPath)
	MountinfoPath = mi
	if got, err := Mount(); got != "/sys/fs/cgroup/unified" || err != nil {
		t.Errorf("Mount = %q, %v", got, err)
	}
	os.WriteFile(mi, []byte(`31 30 0:27 / /run/my\040cgroups rw - cgroup2 cgroup2 rw`+"\n"), 0o644)
	if got, _ := Mount(); got != "/run/my cgroups" {
		t.Errorf("escaped mount point: %q", got)
	}
	os.WriteFile(mi, []byte("40 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), 0o644)
	if _, err := Mount(); err == nil {
		t.Error("no cgroup2 line, no error")
	}
}

// TestResolverNamesTheKernelsID makes a cgroup on this host and checks
// that the walk's id for it is the kernel's (name_to_handle_at), including
// for a cgroup made after the first walk.
func TestResolverNamesTheKernelsID(t *testing.T) {
	mnt, err := Mount()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	name := "rdmatrace-test-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join(mnt, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup (needs root): %v", err)
	}
	defer os.Remove(dir)
	id, err := ID(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(mnt)
	if p, ok := r.Path(id); !ok || p != "/"+name {
		t.Fatalf("Path(%d) = %q, %v; want /%s", id, p, ok, name)
	}
	rootID, err := ID(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := r.Path(rootID); !ok || p != "/" {
		t.Errorf("root: Path = %q, %v", p, ok)
	}

	child := filepath.Join(dir, "later")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(child)
	cid, _ := ID(child)
	r.MinRescan = time.Hour
	if _, ok := r.Path(cid); ok {
		t.Error("a cgroup made after the walk was found without a walk")
	}
	r.MinRescan = 0
	if p, ok := r.Path(cid); !ok || p != "/"+name+"/later" {
		t.Errorf("after a rescan: Path = %q, %v", p, ok)
	}
	os.Remove(child)
	if p, ok := r.Path(cid); !ok || p != "/"+name+"/later" {
		t.Errorf("a removed cgroup lost its last known path: %q, %v", p, ok)
	}
}

// TestResolverWalksAtMostOncePerPeriod: a flood of unknown ids is not a
// flood of walks.
func TestResolverWalksAtMostOncePerPeriod(t *testing.T) {
	r := NewResolver(t.TempDir())
	r.MinRescan = time.Hour
	for i := uint64(1); i < 1000; i++ {
		r.Path(i)
	}
	if r.Walks() != 1 {
		t.Errorf("%d walks for 999 unknown ids", r.Walks())
	}
	if _, ok := r.Path(0); ok {
		t.Error("id 0 (a kernel object) resolved")
	}
}
