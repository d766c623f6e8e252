//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/phases"
)

var rdmaUp = flag.String("rdma-up", "guest/rdma-up.sh", "script that creates rxe0 on the guest's veth")

func TestMain(m *testing.M) {
	if os.Getenv(bindFloodEnv) != "" { // a helper process of TestBindFloodDoesNotStarveLifecycleEvents
		os.Exit(bindFlood())
	}
	if os.Getenv(holdSlotsEnv) != "" { // a helper process of TestExporterIsNotLockedOutByHeldConnections
		os.Exit(holdSlots())
	}
	if spec := os.Getenv(mapperEnv); spec != "" { // a helper process of TestStacksWithstandTheFilesAUserMaps
		os.Exit(mapper(spec))
	}
	flag.Parse()
	leaveToOtherLanes()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: these tests run as root inside the guest: make e2e")
		os.Exit(2)
	}
	// The RDMA core without any device: the "no devices" case.
	out, err := exec.Command("modprobe", "-a", "ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: modprobe: %v\n%s", err, out)
		os.Exit(2)
	}
	if err := pinSchedTracepoints(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot keep sched_switch/sched_wakeup enabled (%v): traced runs will patch the scheduler's text under qemu\n", err)
	}
	// The order is explicit, not that of file names: the no-device case
	// needs the RDMA core before any test creates rxe0, and the leaking
	// module leaves the kernel warned and rxe1's objects behind.
	code := phases.Run(m,
		[]func(*testing.T){TestNoDevicesIsAnEmptyResultAndSuccess, TestExporterServesBeforeTheRDMAStackAndFollowsIt},
		[]func(*testing.T){TestLeaksNamesWhatAKernelModuleLeft})
	os.Exit(code)
}

// leaveToOtherLanes skips the tests the landing path runs on another
// kernel's lane (make's E2E_LANDING_SPREAD, RDMATRACE_E2E_ELSEWHERE: a
// pattern of test names), and says which: each of them runs on one kernel
// there, on every kernel under make e2e.
func leaveToOtherLanes() {
	elsewhere := os.Getenv("RDMATRACE_E2E_ELSEWHERE")
	if elsewhere == "" {
		return
	}
	skip := flag.Lookup("test.skip")
	pattern := "^(?:" + elsewhere + ")$"
	if cur := skip.Value.String(); cur != "" {
		pattern = cur + "|" + pattern
	}
	if err := skip.Value.Set(pattern); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: RDMATRACE_E2E_ELSEWHERE %q: %v\n", elsewhere, err)
		os.Exit(2)
	}
	fmt.Printf("== e2e: run on other kernels' lanes of the landing path, not here: %s\n", strings.ReplaceAll(elsewhere, "|", " "))
}

var deviceOnce sync.Once

// needDevice creates rxe0 the first time a test needs it.
func needDevice(t *testing.T) {
	t.Helper()
	var err error
	var out []byte
	deviceOnce.Do(func() {
		out, err = exec.Command(*rdmaUp).CombinedOutput()
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", *rdmaUp, err, out)
	}
}

// needModuleBTF skips a test that needs the tracer on a kernel without BTF
// for its modules: every hook that reads ib_core's or rdma_cm's structures
// (all but three) needs CO-RE relocations against it, and Linux 5.10
// (Debian bullseye) has vmlinux BTF only.
func needModuleBTF(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err != nil {
		t.Skipf("kernel %s has no module BTF (/sys/kernel/btf/ib_core; CONFIG_DEBUG_INFO_BTF_MODULES, Linux 5.11+): the tracer's hooks cannot read ib_core's structures", release(t))
	}
}

// needFullTier skips a test on the kernels make e2e runs in the
// compatibility tier (RDMATRACE_E2E_FULL=0: not in E2E_FULL_KERNELS):
// the benchmarks and Prometheus' scrape. Their kernel side (the hooks,
// the exporter's counts) is tested on every kernel by other tests.
func needFullTier(t *testing.T) {
	t.Helper()
	// The landing path runs some full-tier tests on a kernel of the
	// compatibility tier (make's E2E_LANDING_SPREAD): there and only there
	// (leaveToOtherLanes skips them on the others).
	if here := os.Getenv("RDMATRACE_E2E_HERE"); here != "" && regexp.MustCompile("^(?:"+here+")$").MatchString(t.Name()) {
		return
	}
	if os.Getenv("RDMATRACE_E2E_FULL") == "0" {
		t.Skipf("compatibility tier on %s: this test runs on E2E_FULL_KERNELS (6.1 and 6.12 by default)", release(t))
	}
}

// needBenchRun skips a measurement outside make bench (RDMATRACE_E2E_BENCH=1):
// a figure logged for docs/benchmarks.md, with no goal a noisy emulated guest
// could judge, has no place in the landing path.
func needBenchRun(t *testing.T) {
	t.Helper()
	if os.Getenv("RDMATRACE_E2E_BENCH") != "1" {
		t.Skip("a measurement: it runs under make bench (RDMATRACE_E2E_BENCH=1)")
	}
}

func release(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// needResDump skips a comparison for a resource type the kernel cannot
// dump: Linux 5.10 answers RDMA_NLDEV_CMD_RES_CTX_GET and _SRQ_GET with
// EINVAL (iproute2: "error: Invalid argument"). rdmatrace must say so too,
// not print an empty list.
func needResDump(t *testing.T, typ string) {
	t.Helper()
	_, stderr, err := runStatus("rdma", "res", "show", typ)
	if err == nil || !strings.Contains(string(stderr), "Invalid argument") {
		return
	}
	out, ourErr, ourStatus := runStatus(*rdmatraceBin, "res", typ)
	if ourStatus == nil || !strings.Contains(string(ourErr), "cannot dump "+typ) {
		t.Errorf("rdmatrace res %s where the kernel cannot dump it: %v, want an error saying so\n%s%s", typ, ourStatus, out, ourErr)
	}
	t.Skipf("kernel %s cannot dump %s resources (rdma res show %s: %s)", release(t), typ, typ, strings.TrimSpace(string(stderr)))
}
