package launch

import (
	"path/filepath"
	"strings"
	"testing"
)

// /proc/self/cgroup is the kernel's text, but a process can be in a cgroup
// whose name it chose: whatever the line says, the program's cgroup goes
// below the cgroup2 mount, never above it, and the root comes last.
func FuzzParentsIn(f *testing.F) {
	f.Add([]byte("0::/user.slice/user-0.slice/session-1.scope\n"))
	f.Add([]byte("12:memory:/x\n0::/\n"))
	f.Add([]byte("0::/a/../../etc\n"))
	f.Add([]byte("0::/a\n0::/b\n"))
	f.Add([]byte(""))
	const mnt = "/sys/fs/cgroup"
	f.Fuzz(func(t *testing.T, data []byte) {
		got := parentsIn(data, mnt)
		if len(got) == 0 || got[len(got)-1] != mnt {
			t.Fatalf("%q: %q, want the mount last", data, got)
		}
		for _, p := range got {
			if p != mnt && !strings.HasPrefix(p, mnt+"/") {
				t.Fatalf("%q: %q is not below %s", data, p, mnt)
			}
			if filepath.Clean(p) != p {
				t.Fatalf("%q: %q is not a clean path", data, p)
			}
		}
	})
}
