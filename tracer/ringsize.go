package tracer

import (
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The default ring buffer follows the number of CPUs: each CPU can run a
// process making events (a job's ranks connecting their QPs at once), the
// reader is one thread, and the ring holds what they make while it is
// behind. A burst of 4 × 10 000 QPs on 2 CPUs under the emulator needs
// 16 MiB (docs/benchmarks.md); more CPUs make events faster.
const (
	ringBytesPerCPU = 8 << 20
	minRingBytes    = 16 << 20
	// maxDefaultRingBytes bounds the default: the ring is kernel memory,
	// locked, whether or not a burst ever fills it.
	maxDefaultRingBytes = 64 << 20
)

// DefaultRingBytes is the ring buffer size for cpus online CPUs:
// ringBytesPerCPU each, rounded up to a power of two, from minRingBytes
// to maxDefaultRingBytes.
func DefaultRingBytes(cpus int) int {
	n := minRingBytes
	for n < cpus*ringBytesPerCPU && n < maxDefaultRingBytes {
		n <<= 1
	}
	return n
}

// OnlineCPUs counts the CPUs that /sys/devices/system/cpu/online lists
// (e.g. "0-3,6"), in sys (the root of /sys); where it cannot be read,
// the CPUs this process may run on.
func OnlineCPUs(sys fs.FS) int {
	b, err := fs.ReadFile(sys, "devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := a, error(nil)
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	if n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// ringBytes is the ring buffer size Open makes: asked, or the default
// for this machine's CPUs.
func ringBytes(asked int) int {
	if asked != 0 {
		return asked
	}
	return DefaultRingBytes(OnlineCPUs(os.DirFS("/sys")))
}
