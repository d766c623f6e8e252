package tracer

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCallSiteProbe is what --stacks costs a program per call of a
// probed function: testdata/callsite/loop.c calls one b.N times, with the
// probes attached and without; ns/op is the probed call's, bare-ns/op
// the bare one's. The probes' reader runs beside it, as in a trace.
func BenchmarkCallSiteProbe(b *testing.B) {
	lib, loop := buildLoop(b)
	bare := runLoop(b, loop, b.N)
	c := openCallSitesOrSkipB(b, lib)
	defer c.Close()
	probed := runLoop(b, loop, b.N)
	b.ReportMetric(float64(probed)/float64(b.N), "ns/op")
	b.ReportMetric(float64(bare)/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(c.Drops()), "dropped")
}

func buildLoop(b *testing.B) (lib, loop string) {
	b.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Skip("no cc")
	}
	dir := b.TempDir()
	src, _ := filepath.Abs("testdata/callsite")
	lib, loop = filepath.Join(dir, "libfakeverbs.so"), filepath.Join(dir, "loop")
	for _, args := range [][]string{
		{cc, "-shared", "-fPIC", "-O1", "-o", lib, filepath.Join(src, "fakeverbs.c")},
		{cc, "-O1", "-fno-omit-frame-pointer", "-o", loop, filepath.Join(src, "loop.c"), "-L" + dir, "-lfakeverbs", "-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return lib, loop
}

func runLoop(b *testing.B, loop string, n int) int64 {
	b.Helper()
	out, err := exec.Command(loop, strconv.Itoa(n)).Output()
	if err != nil {
		b.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return ns
}
