//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// refusal is what verbsfail printed of the call the kernel refused.
type refusal struct {
	pid          int
	op           string
	errno        int
	asked, limit int
}

var refusedLine = regexp.MustCompile(`refused (\w+) errno=(\d+) asked=(\d+) limit=(\d+)`)

// refuse runs verbsfail (argv after its path) and returns the refusal it
// printed; the program must have been refused.
func refuse(t *testing.T, wrap []string, args ...string) refusal {
	t.Helper()
	argv := append(append([]string(nil), wrap...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out.String())
	}
	m := refusedLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("%v was not refused: %s", argv, out.String())
	}
	r := refusal{pid: cmd.Process.Pid, op: m[1]}
	r.errno, _ = strconv.Atoi(m[2])
	r.asked, _ = strconv.Atoi(m[3])
	r.limit, _ = strconv.Atoi(m[4])
	return r
}

// TestFailedCallsNameTheirLimits makes the kernel refuse what the issue's
// users hit, one trace for all, and checks that each refusal is a
// call-fail event of the program with the sentence naming the limit and
// its numbers, as the program saw them:
//   - ibv_create_cq with rxe's max_cqe+1 entries (EINVAL, over max_cqe);
//   - ibv_create_qp with max_qp_wr+1 send WRs (EINVAL, over max_qp_wr);
//   - an unprivileged ibv_reg_mr of 1 MiB under ulimit -l 64 (ENOMEM,
//     RLIMIT_MEMLOCK);
//   - objects made in an rdma cgroup with hca_object=8 until one is
//     refused (EAGAIN, the cgroup's rdma.max and rdma.current);
//   - an address added to and removed from rxe0's netdev: the GID table's
//     changes, with the GID, its index, type and netdev;
//   - an rping pair that ends normally: `why` of its recording lists no
//     move to ERR (it is the disconnect's).
func TestFailedCallsNameTheirLimits(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	// verbsfail where an unprivileged user can run it, and the uverbs
	// device open to it (the guest's /dev is its own).
	bin := filepath.Join(t.TempDir(), "verbsfail")
	data, err := os.ReadFile(filepath.Join(*workloads, "verbsfail"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(bin), 0o755)
	uverbs, _ := filepath.Glob("/dev/infiniband/uverbs*")
	for _, u := range uverbs {
		os.Chmod(u, 0o666)
	}
	// The rdma cgroup: hca_object=8 on rxe0.
	cg := filepath.Join(mount, "rdmatrace-fail")
	if err := os.WriteFile(filepath.Join(mount, "cgroup.subtree_control"), []byte("+rdma"), 0o644); err != nil {
		t.Fatalf("enabling the rdma controller: %v", err)
	}
	if err := os.Mkdir(cg, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Limits back to max first: that frees the cgroup's resource pool
		// on rxe0 (rdmacg_resource_set_max, nothing charged). A pool left
		// to the cgroup's removal outlives it, and the device's next
		// unregister unlinks it from the freed cgroup: "list_del
		// corruption" in free_cg_rpool_locked, a kernel BUG that killed
		// `rdma link delete` (6.1; 6.12 too) and left ib_core unable to
		// register rxe0 again (-ENFILE).
		if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(device+" hca_handle=max hca_object=max"), 0o644); err != nil {
			t.Errorf("rdma.max back to max: %v", err)
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing the rdma cgroup: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(device+" hca_object=8"), 0o644); err != nil {
		t.Fatalf("rdma.max: %v", err)
	}

	start := time.Now()
	tr := startTrace(t, "--no-snapshot")
	t.Logf("trace attached in %v", time.Since(start).Round(time.Millisecond))
	cq := refuse(t, []string{bin}, device, "cq")
	qp := refuse(t, []string{bin}, device, "qp")
	mr := refuse(t, []string{"prlimit", "--memlock=65536", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin}, device, "mr", "1048576")
	objs := refuse(t, []string{"sh", "-c", `echo $$ > "$0"/cgroup.procs && exec "$@"`, cg, bin}, device, "objects", "20")

	// A GID added and removed with an address on rxe0's netdev.
	const gidAddr = "10.99.9.9"
	gidFile := "0000:0000:0000:0000:0000:ffff:0a63:0909"
	hasGID := func() bool {
		files, _ := filepath.Glob("/sys/class/infiniband/" + device + "/ports/1/gids/*")
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == gidFile {
				return true
			}
		}
		return false
	}
	run(t, "ip", "addr", "add", gidAddr+"/24", "dev", "veth0")
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", gidAddr+"/24", "dev", "veth0").Run() })
	waitFor(t, 20*time.Second, "the address's GID on "+device, hasGID)
	run(t, "ip", "addr", "del", gidAddr+"/24", "dev", "veth0")
	waitFor(t, 20*time.Second, "the address's GID to go from "+device, func() bool { return !hasGID() })

	bye := rpingToTheEnd(t)
	evs := tr.stop()
	t.Logf("the trace's %d events in %v", len(evs), time.Since(start).Round(time.Millisecond))

	var rec bytes.Buffer
	for _, e := range evs {
		rec.WriteString(e.line + "\n")
	}
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(path, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		r    refusal
		want string
	}{
		{"CQ over max_cqe", cq, fmt.Sprintf("create_cq failed (EINVAL): cqe %d > %s's max_cqe %d", cq.asked, device, cq.limit)},
		{"QP over max_qp_wr", qp, fmt.Sprintf("create_qp failed (EINVAL): max_send_wr %d > %s's max_qp_wr %d", qp.asked, device, qp.limit)},
		{"reg_mr over RLIMIT_MEMLOCK", mr, "reg_mr of 1 MiB failed (ENOMEM): RLIMIT_MEMLOCK 64 KiB, "},
		{"rdma cgroup's hca_object", objs, objs.op + " failed (EAGAIN): rdma cgroup /rdmatrace-fail's rdma.max hca_object=8, 8 in use on " + device},
	} {
		e := findEvent(evs, func(e *traced) bool {
			return e.Kind == rdma.EvCallFail && e.process() == strconv.Itoa(c.r.pid)
		})
		if e == nil {
			t.Errorf("%s: no call-fail event of verbsfail[%d], which printed %+v", c.what, c.r.pid, c.r)
			continue
		}
		f, _ := e.Failure()
		if e.CallFail.Op != c.r.op || int(e.CallFail.Errno) != c.r.errno || !strings.HasPrefix(f.Why, c.want) {
			t.Errorf("%s: %s\nwant %s, errno %d, and %q", c.what, e.line, c.r.op, c.r.errno, c.want)
		}
		// why of the recording, for that process, says the same.
		out := run(t, *rdmatraceBin, "why", "-r", path, "--pid", strconv.Itoa(c.r.pid), "-j")
		if !bytes.Contains(out, []byte(`"what":"create-failed"`)) || !strings.Contains(string(out), jsonText(c.want)) {
			t.Errorf("%s: why -r --pid %d:\n%s", c.what, c.r.pid, out)
		}
	}

	for _, added := range []bool{true, false} {
		e := findEvent(evs, func(e *traced) bool {
			return e.Kind == rdma.EvGIDChange && e.GID.Added == added && e.GID.GID.Unmap().String() == gidAddr
		})
		if e == nil {
			t.Errorf("no gid-change (added %v) of %s", added, gidAddr)
			continue
		}
		if e.DevName != device || e.Port != 1 || e.GID.Netdev != "veth0" || e.GID.Type.Name(true) != "RoCE v2" && e.GID.Type.Name(true) != "RoCE v1" {
			t.Errorf("gid-change: %s, want %s/1 on veth0", e.line, device)
		}
	}

	// The rping pair's normal end: no move to ERR listed by why.
	for _, pid := range []int{bye.client, bye.server} {
		out := run(t, *rdmatraceBin, "why", "-r", path, "--pid", strconv.Itoa(pid))
		if bytes.Contains(out, []byte("QP_ERR")) {
			t.Errorf("why -r --pid %d (rping that ended normally):\n%s", pid, out)
		}
	}
}

// jsonText is s as it appears inside a JSON string ('>' as itself).
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}
