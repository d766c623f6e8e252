//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// rdmaModules are the modules whose structures the hooks read.
var rdmaModules = []string{"ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm", "iw_cm", "ib_cm"}

// givenBTF is a directory for --btf. On a kernel with module BTF: copies
// of /sys/kernel/btf's vmlinux and RDMA modules, in another place. On one
// without (5.10): the RDMA modules' BTF that guest/modbtf.sh made from
// Debian's source of that kernel with its config (in -kmod's KVER/btf).
func givenBTF(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err != nil {
		dir := filepath.Join(*kmodDir, release(t), "btf")
		if _, err := os.Stat(filepath.Join(dir, "ib_core")); err != nil {
			if why, err := os.ReadFile(filepath.Join(*kmodDir, release(t), "unbuildable-btf")); err == nil {
				t.Skipf("kernel %s has no module BTF, and guest/modbtf.sh could not make it: %s", release(t), strings.TrimSpace(string(why)))
			}
			t.Fatalf("kernel %s has no module BTF, and %s has none: make it with guest/modbtf.sh", release(t), dir)
		}
		return dir
	}
	dir := t.TempDir()
	for _, n := range append([]string{"vmlinux"}, rdmaModules...) {
		b, err := os.ReadFile("/sys/kernel/btf/" + n)
		if os.IsNotExist(err) && n != "vmlinux" && n != "ib_core" {
			continue // not loaded
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTraceWithGivenBTF traces a program that creates a QP and exits
// with --btf DIR: the QP's create, owned by the program, and its destroy
// at the program's exit are seen. On 5.10, whose modules have no BTF,
// this is what lets the tracer read ib_core's structures at all.
func TestTraceWithGivenBTF(t *testing.T) {
	needDevice(t)
	dir := givenBTF(t)
	rec := filepath.Join(t.TempDir(), "rec.ndjson")
	leakqp := filepath.Join(*workloads, "leakqp")
	_, stderr, err := runStatus(*rdmatraceBin, "trace", "-v", "--no-snapshot", "--btf", dir, "-w", rec, "--", leakqp, device)
	t.Logf("kernel %s: rdmatrace trace --btf %s:\n%s", release(t), dir, stderr)
	if err != nil {
		t.Fatalf("rdmatrace trace --btf: %v", err)
	}
	out, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, "trace/"+t.Name()+".ndjson", out)
	var created, destroyed bool
	var lqpn uint32
	for _, e := range readTrace(t, out) {
		if e.Type != rdma.ResQP || e.DevName != device {
			continue
		}
		switch {
		case e.Kind == rdma.EvCreate && e.Owner.Comm == "leakqp":
			created, lqpn = true, e.LQPN
		case e.Kind == rdma.EvDestroy && created && e.LQPN == lqpn:
			destroyed = true
		}
	}
	if !created || !destroyed {
		why := ""
		if strings.Contains(string(stderr), "hook rdma_restrack_add not attached") {
			why = " (rdma_restrack_add is not attached: its reasons are above)"
		}
		t.Errorf("kernel %s: leakqp's QP: create seen %v, destroy seen %v; want both%s\n%s", release(t), created, destroyed, why, out)
	}
}
