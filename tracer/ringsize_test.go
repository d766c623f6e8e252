package tracer

import (
	"runtime"
	"testing"
	"testing/fstest"
)

func TestDefaultRingBytesFollowsCPUs(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{
		{1, 16 << 20}, {2, 16 << 20}, {3, 32 << 20}, {4, 32 << 20}, {5, 64 << 20}, {8, 64 << 20}, {256, 64 << 20},
	} {
		got := DefaultRingBytes(c.cpus)
		if got != c.want {
			t.Errorf("DefaultRingBytes(%d) = %d MiB, want %d MiB", c.cpus, got>>20, c.want>>20)
		}
		if err := CheckRingSize(got); err != nil {
			t.Errorf("DefaultRingBytes(%d) = %d: %v", c.cpus, got, err)
		}
	}
}

func TestOnlineCPUs(t *testing.T) {
	for _, c := range []struct {
		online string
		want   int
	}{
		{"0\n", 1}, {"0-1\n", 2}, {"0-3,6\n", 5}, {"0-3,8-11\n", 8},
		// Unreadable: the CPUs this process may use.
		{"", runtime.NumCPU()}, {"0-x\n", runtime.NumCPU()}, {"3-1\n", runtime.NumCPU()},
	} {
		sys := fstest.MapFS{}
		if c.online != "" {
			sys["devices/system/cpu/online"] = &fstest.MapFile{Data: []byte(c.online)}
		}
		if got := OnlineCPUs(sys); got != c.want {
			t.Errorf("online %q: %d CPUs, want %d", c.online, got, c.want)
		}
	}
}
