package cgroup

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// hostMountinfo is the start of a real host's mountinfo (Debian 12, the
// hybrid layout's neighbours), with no cgroup2 line.
const hostMountinfo = `22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334460k,nr_inodes=3083615,mode=755
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 23 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
40 30 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
`

// mangle escapes a path as show_mountinfo does (mangle: " \t\n\\" in octal).
func mangle(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzMountIn: wherever root mounts cgroup2, under whatever name (any bytes
// but a NUL), the mountinfo the kernel writes gives that path back; from
// any text, a mount point found is on a cgroup2 line.
func FuzzMountIn(f *testing.F) {
	f.Add("/sys/fs/cgroup/unified", []byte(hostMountinfo+"31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n"))
	f.Add("/run/my cgroups\t\\040", []byte(`31 30 0:27 / /run/my\040cgroups rw - cgroup2 cgroup2 rw`))
	f.Add("/a\rb\vc\u00a0d\u0085", []byte("31 30 0:27 /sub /x rw - cgroup2 cgroup2 rw\n"))
	f.Fuzz(func(t *testing.T, path string, text []byte) {
		path = "/" + strings.ReplaceAll(path, "\x00", "")
		if len(path) > 4096 { // PATH_MAX
			path = path[:4096]
		}
		info := hostMountinfo + "31 30 0:27 / " + mangle(path) + " rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
		if got, err := mountIn(strings.NewReader(info)); err != nil || got != path {
			t.Fatalf("mounted at %q: found %q, %v", path, got, err)
		}
		got, err := mountIn(bytes.NewReader(text))
		if err != nil {
			if !strings.Contains(err.Error(), "cgroup v2") {
				t.Fatalf("error %q does not say it looked for the cgroup v2 mount", err)
			}
			return
		}
		if !bytes.Contains(text, []byte("- cgroup2 ")) && !bytes.HasSuffix(text, []byte("- cgroup2")) && !bytes.Contains(text, []byte("- cgroup2\n")) {
			t.Fatalf("found %q in a text without a cgroup2 line", got)
		}
	})
}

// FuzzParseRDMAStat: whatever an rdma.max or rdma.current holds, the
// parse ends, each value is a count or -1 (max), and a file that parses
// names no more devices than it has lines.
func FuzzParseRDMAStat(f *testing.F) {
	f.Add([]byte("rxe0 hca_handle=1 hca_object=max\nsiw0 hca_handle=max hca_object=8\n"))
	f.Add([]byte("mlx5_0 hca_handle=-1\n"))
	f.Add([]byte("x =\n\n y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseRDMAStat(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(st) > bytes.Count(b, []byte("\n"))+1 {
			t.Errorf("%d devices from %d lines", len(st), bytes.Count(b, []byte("\n"))+1)
		}
		for dev, res := range st {
			for r, v := range res {
				if v < -1 {
					t.Errorf("%s %s=%d", dev, r, v)
				}
			}
		}
	})
}
