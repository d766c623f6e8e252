//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var consumersDir = flag.String("consumers", "guest/consumers", "the scripts that set up the kernel's own RDMA users in the guest")

// consumer is one kind of kernel RDMA user: the modules it needs, the host
// tool it needs, and its script's up, io and down.
type consumer struct {
	name    string
	modules []string
	tools   []string // host programs the script runs; their packages in the skip message
	pkgs    string
	script  string
	env     []string // for its script
	// users are the modules whose cm_ids rdma res must show once it is
	// up; listener is the one whose listener is bound to no device.
	users    []string
	listener string
}

// nvmeof's target listens on 0.0.0.0: a wildcard listener, created while
// leaks runs and bound to no device, as a kernel service started before
// any device is.
var nvmeof = consumer{name: "NVMe over RDMA", modules: []string{"nvmet-rdma", "nvme-rdma", "null_blk"},
	tools: []string{"nvme"}, pkgs: "nvme-cli", script: "nvmeof.sh", env: []string{"NVMEOF_LISTEN=0.0.0.0"},
	users: []string{"nvme_rdma", "nvmet_rdma"}, listener: "nvmet_rdma"}

// nfsrdma's server (svcrdma) listens on every address; its client
// (xprtrdma) mounts with proto=rdma. Both are the module rpcrdma.
var nfsrdma = consumer{name: "NFS over RDMA", modules: []string{"nfsd", "rpcrdma"},
	tools: []string{"rpc.nfsd", "exportfs", "rpc.mountd", "rpcbind", "mount.nfs"}, pkgs: "nfs-kernel-server nfs-common", script: "nfsrdma.sh",
	users: []string{"rpcrdma"}, listener: "rpcrdma"}

// need skips the test where the kernel or the host lacks the consumer.
func (c consumer) need(t *testing.T) {
	t.Helper()
	for _, m := range c.modules {
		if _, stderr, err := runStatus("modprobe", "-n", m); err != nil {
			t.Skipf("kernel %s has no module %s for %s: %s", release(t), m, c.name, strings.TrimSpace(string(stderr)))
		}
	}
	for _, tool := range c.tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s needs %s on the host (its / is the guest's): apt-get install %s", c.name, tool, c.pkgs)
		}
	}
}

// Time limits of a consumer's steps: a step that hangs in the kernel (an
// unmount waiting for a server it cannot reach) becomes a failure that
// names the stuck tasks, never a guest that runs to its own limit.
var stepLimits = map[string]time.Duration{"up": 2 * time.Minute, "io": time.Minute, "down": 90 * time.Second}

func (c consumer) do(t *testing.T, step string) string {
	t.Helper()
	began := time.Now()
	out, err := runBounded(stepLimits[step], c.env, *consumersDir+"/"+c.script, step)
	if err != nil {
		klog, _ := exec.Command("dmesg").Output()
		t.Fatalf("%s %s: %v\n%s\nthe kernel's log ends:\n%s", c.script, step, err, out, lastLines(string(klog), 30))
	}
	t.Logf("%s %s took %v", c.script, step, time.Since(began).Round(time.Millisecond))
	return strings.TrimSpace(out)
}

// runBounded runs a command for at most limit. One still running then is
// killed with its process group; one that SIGKILL does not end (a task in
// uninterruptible sleep) is left behind, and the error names every such
// task with its kernel stack.
func runBounded(limit time.Duration, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second // a child left holding the output
	var out lines
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(limit):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return out.String(), fmt.Errorf("still running after %v: killed", limit)
	case <-time.After(5 * time.Second):
		return out.String(), fmt.Errorf("still running after %v, and SIGKILL did not end it; tasks in uninterruptible sleep:\n%s", limit, stuckTasks())
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// stuckTasks lists the tasks in state D with their kernel stacks.
func stuckTasks() string {
	var b strings.Builder
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		raw, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 || i+2 >= len(raw) || raw[i+2] != 'D' {
			continue
		}
		stack, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "stack"))
		fmt.Fprintf(&b, "%s\n%s", raw[:i+1], stack)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

// resObject is an object of `rdma -j res show TYPE` as the tests below
// name it: type, device, number and owner.
type resObject struct {
	Ifname string  `json:"ifname"`
	LQPN   *uint32 `json:"lqpn"`
	PDN    *uint32 `json:"pdn"`
	CQN    *uint32 `json:"cqn"`
	CMIDN  *uint32 `json:"cm-idn"`
	MRN    *uint32 `json:"mrn"`
	PID    *uint32 `json:"pid"`
	Comm   string  `json:"comm"`
}

// ident is "qp rxe0 17 [nvme_rdma]": what names one resource in both
// iproute2's view and leaks' findings.
func ident(res, dev string, num uint32, owner string) string {
	return fmt.Sprintf("%s %s %d %s", res, dev, num, owner)
}

// consumerTypes are the resource types kernel consumers hold (no ctx or
// srq: those are user objects).
var consumerTypes = []string{"pd", "cq", "qp", "cm_id", "mr"}

// resIdents lists what `rdma res` shows of each type, by ident, and counts
// kernel-owned objects per module and type.
func resIdents(t *testing.T) (idents []string, perModule map[string]map[string]int) {
	t.Helper()
	perModule = map[string]map[string]int{}
	for _, typ := range consumerTypes {
		var objs []resObject
		if err := json.Unmarshal(run(t, "rdma", "-j", "res", "show", typ), &objs); err != nil {
			t.Fatalf("rdma -j res show %s: %v", typ, err)
		}
		for _, o := range objs {
			num := map[string]*uint32{"qp": o.LQPN, "pd": o.PDN, "cq": o.CQN, "cm_id": o.CMIDN, "mr": o.MRN}[typ]
			if num == nil {
				t.Fatalf("rdma -j res show %s: an object without its number", typ)
			}
			owner := "[" + o.Comm + "]"
			if o.PID != nil {
				owner = fmt.Sprintf("%s[%d]", o.Comm, *o.PID)
			} else {
				if perModule[o.Comm] == nil {
					perModule[o.Comm] = map[string]int{}
				}
				perModule[o.Comm][typ]++
			}
			idents = append(idents, ident(typ, o.Ifname, *num, owner))
		}
	}
	sort.Strings(idents)
	return idents, perModule
}

// findingIdent is a finding's ident.
func findingIdent(t *testing.T, f finding) string {
	t.Helper()
	var num uint32
	switch {
	case f.Res == "qp" && f.LQPN != nil:
		num = *f.LQPN
	case f.ID != nil:
		num = *f.ID
	}
	owner := "[" + f.KernName + "]"
	if f.PID != nil {
		owner = fmt.Sprintf("%s[%d]", f.Comm, *f.PID)
	}
	return ident(f.Res, f.Ifname, num, owner)
}

// sameRes compares `rdmatrace res TYPE -j` with `rdma -j res show TYPE`
// for every type while a kernel consumer runs. It cannot be stopped as a
// process can (NVMe's keep-alive moves its QPs' PSNs every few seconds), so
// a comparison counts only when iproute2 gave the same answer before and
// after rdmatrace's.
func sameRes(t *testing.T) {
	t.Helper()
	for _, typ := range []string{"", "qp", "cm_id", "cq", "mr", "pd", "ctx", "srq"} {
		name := typ
		if name == "" {
			name = "summary"
		}
		t.Run(name, func(t *testing.T) {
			if typ != "" {
				needResDump(t, typ)
			}
			rdmaArgs, ourArgs := []string{"-j", "res", "show"}, []string{"res", "-j"}
			if typ != "" {
				rdmaArgs, ourArgs = append(rdmaArgs, typ), append(ourArgs, typ)
			}
			for try := 1; ; try++ {
				before := run(t, "rdma", rdmaArgs...)
				ours := run(t, *rdmatraceBin, ourArgs...)
				after := run(t, "rdma", rdmaArgs...)
				if bytes.Equal(before, after) {
					compareObjects(t, typ, after, ours)
					return
				}
				if try == 10 {
					t.Fatalf("rdma res show %s changed between every two runs of 10:\n%s\n%s", typ, before, after)
				}
			}
		})
	}
}

// TestNVMeOverRDMAUnderLeaks runs NVMe over RDMA in loopback on rxe0
// (device index 0 when it is the guest's first): nvmet-rdma's target, set
// up through configfs with a null_blk namespace, and nvme-rdma's host,
// connected with nvme-cli, with rdmatrace trace and leaks running from
// before the target listens. With
// the host connected and after I/O: res -j is rdma res show for every type;
// ps counts what rdma res counts per module; the trace has a create of
// every consumer object, owned by the module rdma res names. Then `rdma
// link delete rxe0` with the host connected: the consumers' remove
// callbacks free everything; leaks lists exactly what rdma res showed on
// rxe0, with its owners, and nothing left; the target's wildcard listener,
// bound to no device, is neither on rxe0 nor left; once the target is
// removed, leaks exits 0.
func TestNVMeOverRDMAUnderLeaks(t *testing.T) { underLeaks(t, nvmeof) }

// TestNFSOverRDMAUnderLeaks is the same with NFS over RDMA: the kernel's
// NFS server exporting a tmpfs on 10.99.0.1:20049 over RDMA (its listener
// on every address), the kernel's client mounting it with proto=rdma, and
// a file written and read through the mount. The mount is soft with short
// timeouts and is removed forced and lazy after its device went away;
// nfsrdma.sh reads the mount table, never the mount point, whose stat
// would wait for the unreachable server.
func TestNFSOverRDMAUnderLeaks(t *testing.T) { underLeaks(t, nfsrdma) }

// underLeaks is the test above for a kernel consumer c.
func underLeaks(t *testing.T, c consumer) {
	needDevice(t)
	needModuleBTF(t)
	c.need(t)
	t.Cleanup(func() {
		if out, err := runBounded(stepLimits["down"], c.env, *consumersDir+"/"+c.script, "down"); err != nil {
			t.Errorf("%s down: %v\n%s", c.script, err, out)
		}
		if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil { // the next tests need rxe0 again
			t.Errorf("%s: %v\n%s", *rdmaUp, err, out)
		}
	})
	// Before the fix of restable.Key, a cm_id bound to no device was filed
	// under index 0: the wildcard listener showed as on rxe0 when rxe0
	// was the guest's first device.
	var devs []struct{ Ifindex int }
	if err := json.Unmarshal(run(t, "rdma", "-j", "dev", "show", device), &devs); err != nil || len(devs) != 1 {
		t.Fatalf("rdma -j dev show %s: %v", device, err)
	}
	t.Logf("%s is device index %d", device, devs[0].Ifindex)
	began := time.Now()
	l := startLeaks(t)
	tr := startTrace(t, "--no-snapshot")
	t.Logf("leaks and trace attached in %v", time.Since(began).Round(time.Millisecond))
	t.Log(c.do(t, "up"))
	t.Log(c.do(t, "io"))

	t.Run("res matches rdma res", sameRes)

	idents, perModule := resIdents(t)
	t.Run("ps counts per module match rdma res", func(t *testing.T) {
		var rows []countsRow
		if err := json.Unmarshal(run(t, *rdmatraceBin, "ps", "-j"), &rows); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range rows {
			if r.KernName == "" {
				continue
			}
			seen[r.KernName] = true
			for _, typ := range consumerTypes {
				got, _ := r.count(typ)
				if want := perModule[r.KernName][typ]; int(got) != want {
					t.Errorf("ps -j: [%s] %s %v, rdma res shows %d", r.KernName, typ, got, want)
				}
			}
		}
		for m := range perModule {
			if !seen[m] {
				t.Errorf("ps -j has no row for [%s], which rdma res shows", m)
			}
		}
		for _, m := range c.users {
			if perModule[m]["cm_id"] == 0 {
				t.Errorf("rdma res shows no cm_id of %s: is the host connected?", m)
			}
		}
	})

	evs := tr.stop()
	t.Run("the trace has a create of each consumer object", func(t *testing.T) {
		created := map[string]bool{}
		wildcard := false
		for i := range evs {
			e := &evs[i]
			if e.Kind == rdma.EvCMIDCreate && e.Owner.KernName == c.listener && !e.Has(rdma.EvHasDev) {
				wildcard = true
			}
			if e.Kind != rdma.EvCreate || e.Has(rdma.EvHasOwner) {
				continue
			}
			num := e.ID
			if e.Type == rdma.ResQP {
				num = e.LQPN
			}
			created[ident(e.Type.String(), e.DevName, num, "["+e.Owner.KernName+"]")] = true
		}
		n := 0
		for _, id := range idents {
			if strings.HasSuffix(id, "[ib_core]") {
				continue // the device's own, from its registration: before the trace
			}
			n++
			if !created[id] {
				t.Errorf("rdma res shows %s; the trace has no create of it", id)
			}
		}
		if n == 0 {
			t.Error("rdma res shows no object of a consumer")
		}
		if !wildcard {
			t.Errorf("the trace has no cm_id_create of %s's wildcard listener", c.listener)
		}
	})

	var onDevice []string
	for _, id := range idents {
		if strings.Split(id, " ")[1] == device {
			onDevice = append(onDevice, id)
		}
	}
	began = time.Now()
	out, err := runBounded(time.Minute, nil, "rdma", "link", "delete", device)
	if err != nil {
		t.Fatalf("rdma link delete %s with %s connected: %v\n%s", device, c.name, err, out)
	}
	t.Logf("rdma link delete %s returned after %v", device, time.Since(began).Round(time.Millisecond))
	var done finding
	waitFor(t, 30*time.Second, "the unregistered report of "+device, func() bool {
		for _, f := range l.out.findings(t) {
			if f.Report == "unregistered" && f.Ifname == device {
				done = f
				return true
			}
		}
		return false
	})
	if text(done.Left) != "0" {
		t.Errorf("unregistered: %v, want nothing left", done)
	}
	var reported []string
	for _, f := range l.out.findings(t) {
		switch f.Report {
		case "unregister":
			if f.Ifname == "" {
				t.Errorf("a resource bound to no device is reported as alive on %s: %v", device, f)
				continue
			}
			reported = append(reported, findingIdent(t, f))
		case "left", "waiting":
			t.Errorf("a clean removal: %v", f)
		}
	}
	sort.Strings(reported)
	if strings.Join(reported, "\n") != strings.Join(onDevice, "\n") {
		t.Errorf("leaks says these were alive on %s when it unregistered:\n%s\nrdma res showed:\n%s",
			device, strings.Join(reported, "\n"), strings.Join(onDevice, "\n"))
	}

	t.Log(c.do(t, "down")) // destroys the wildcard listener
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	err = l.cmd.Wait()
	keep(t, "consumers/"+strings.TrimSuffix(c.script, ".sh")+"-leaks.ndjson", []byte(l.out.String()))
	if err != nil {
		t.Errorf("rdmatrace leaks after a clean removal and the target's: %v, want exit status 0\n%s\n%s", err, l.out.String(), l.stderr.String())
	}
}
