package safeopen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// noHang fails the test if fn takes more than a few seconds (a FIFO's
// open waits for a writer forever).
func noHang(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting after 5 s", what)
	}
}

// A FIFO is refused without waiting for a writer, and never opened: a
// writer finds no reader.
func TestAFIFOIsRefusedAndNeverOpened(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libibverbs.so.1 (deleted)")
	if err := unix.Mkfifo(p, 0o666); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() (*os.File, error){
		"Path":    func() (*os.File, error) { return Path(p, Identity{}) },
		"Regular": func() (*os.File, error) { return Regular(p) },
	} {
		var err error
		noHang(t, name, func() { _, err = open() })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
			t.Errorf("%s: %v, want refused as a FIFO", name, err)
		}
	}
	if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK, 0); !errors.Is(err, unix.ENXIO) {
		unix.Close(fd)
		t.Errorf("a writer of the FIFO: %v, want ENXIO (no reader ever opened it)", err)
	}
}

// A link to a device, and a device itself: refused, the device never
// opened.
func TestADeviceIsNeverOpened(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "lib")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(link, Identity{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Path through a link: %v, want refused", err)
	}
	if _, err := Path("/dev/null", Identity{}); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("Path of a device: %v, want refused", err)
	}
	if _, err := Regular(link); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Regular through a link to a device: %v, want refused", err)
	}
}

// A link in a parent directory is refused too.
func TestALinkInAParentIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	os.WriteFile(filepath.Join(real, "f"), []byte("x"), 0o644)
	os.Symlink(real, filepath.Join(dir, "via"))
	if f, err := Path(filepath.Join(real, "f"), Identity{}); err != nil {
		t.Errorf("a plain path: %v", err)
	} else {
		f.Close()
	}
	if _, err := Path(filepath.Join(dir, "via", "f"), Identity{}); err == nil {
		t.Error("a path through a linked directory was opened")
	}
}

// mapSelf maps a file of this process executable and returns its maps
// range, device and inode.
func mapSelf(t *testing.T, p string) (start, end uint64, want Identity) {
	t.Helper()
	if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	f.Close()
	if err != nil {
		t.Skipf("mmap PROT_EXEC: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.Contains(l, filepath.Base(p)) {
			var ino uint64
			var dev, perms string
			var off uint64
			if _, err := fmt.Sscanf(l, "%x-%x %s %x %s %d", &start, &end, &perms, &off, &dev, &ino); err != nil {
				t.Fatal(err)
			}
			return start, end, Identity{Dev: dev, Ino: ino}
		}
	}
	t.Fatalf("no mapping of %s", p)
	return
}

// The mapped file is what Mapped opens, whatever is at its name now: a
// FIFO where it was deleted is not reached.
func TestMappedOpensTheMappedInodeNotItsName(t *testing.T) {
	if _, err := os.Stat("/proc/self/map_files"); err != nil {
		t.Skip("no /proc/self/map_files")
	}
	p := filepath.Join(t.TempDir(), "libibverbs.so.1")
	start, end, want := mapSelf(t, p)
	os.Remove(p)
	if err := unix.Mkfifo(p+" (deleted)", 0o666); err != nil {
		t.Fatal(err)
	}
	var f *os.File
	var err error
	noHang(t, "Mapped", func() { f, err = Mapped("/proc", uint32(os.Getpid()), start, end, want) })
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		t.Skipf("map_files needs CAP_SYS_ADMIN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	if st.Ino != want.Ino || st.Size != 4096 {
		t.Errorf("opened inode %d of %d bytes, want the mapped %d", st.Ino, st.Size, want.Ino)
	}
	other := want
	other.Ino++
	if _, err := Mapped("/proc", uint32(os.Getpid()), start, end, other); err == nil || !strings.Contains(err.Error(), "another file") {
		t.Errorf("another inode expected: %v, want refused", err)
	}
	other = want
	other.Dev = "ff:ff"
	if _, err := Mapped("/proc", uint32(os.Getpid()), start, end, other); err == nil && !overlayAt(p) {
		t.Error("another device expected: opened")
	}
}

func overlayAt(p string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(filepath.Dir(p), &fs) == nil && fs.Type == unix.OVERLAYFS_SUPER_MAGIC
}
