//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// dockerID is the container id of the scope the holder is started in:
// the path shape docker's systemd cgroup driver makes.
const dockerID = "c0ffee0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

// TestOwnersArePlacedInTheirContainer starts a QP holder as a container
// runtime would: in a docker-shaped cgroup scope, in pid and network
// namespaces of its own. Its QP's row in res and ps, and its create event
// in trace, must name the container (runtime, id, cgroup path), its pid
// inside its namespace (1) and its network namespace.
func TestOwnersArePlacedInTheirContainer(t *testing.T) {
	needDevice(t)
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	rel := "/system.slice/docker-" + dockerID + ".scope"
	scope := filepath.Join(mount, rel)
	if err := os.MkdirAll(scope, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(scope)
	dir, err := os.Open(scope)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()

	// The trace part needs module BTF (not on 5.10); res and ps do not.
	var tr *tracing
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err == nil {
		tr = startTrace(t)
	} else {
		t.Logf("kernel %s has no module BTF: res and ps only", release(t))
	}
	holder, lqpn, stop := startQPHolder(t, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
		UseCgroupFD: true, CgroupFD: int(dir.Fd()),
	})
	defer stop()
	pid := strconv.Itoa(holder.Process.Pid)
	ours, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.Readlink("/proc/" + pid + "/ns/net")
	if err != nil || theirs == ours {
		t.Fatalf("the holder's netns %q (%v) is ours %q", theirs, err, ours)
	}
	netnsInode := strings.TrimSuffix(strings.TrimPrefix(theirs, "net:["), "]")

	placed := func(what string, p place, o any) {
		t.Helper()
		want := map[string]string{"runtime": "docker", "container-id": dockerID, "cgroup": rel, "pidns-pid": "1", "netns": netnsInode}
		got := p.keys()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %s (%+v)", what, k, got[k], v, o)
			}
		}
	}
	var rows []resRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "res", "qp", "lqpn", lqpn, "-j"), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("res qp lqpn %s: %d rows (%v)", lqpn, len(rows), err)
	}
	placed("res qp", rows[0].place, rows[0])
	if rows[0].pid() != pid {
		t.Errorf("res qp: pid %q, want the host's %s", rows[0].pid(), pid)
	}
	var procs []resRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "ps", "-j"), &procs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		if p.pid() == pid {
			found = true
			placed("ps", p.place, p)
		}
	}
	if !found {
		t.Errorf("ps -j lists no pid %s", pid)
	}
	// The place filters select it, and only it.
	for _, args := range [][]string{{"--filter-container", dockerID[:12]}, {"container", dockerID[:6]}, {"cgroup", "/system.slice"}} {
		var got []resRow
		if err := json.Unmarshal(run(t, *rdmatraceBin, append([]string{"res", "qp", "-j"}, args...)...), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].LQPN == nil || fmt.Sprint(*got[0].LQPN) != lqpn {
			t.Errorf("res qp %v: %v, want only lqpn %s", args, got, lqpn)
		}
	}
	if got := strings.TrimSpace(string(run(t, *rdmatraceBin, "res", "qp", "-j", "container", "deadbeef"))); got != "[]" {
		t.Errorf("res qp container deadbeef: %s, want []", got)
	}
	table := string(run(t, *rdmatraceBin, "res", "qp", "lqpn", lqpn))
	if !strings.Contains(table, "docker:"+dockerID[:12]) {
		t.Errorf("res qp's table does not name the container docker:%s:\n%s", dockerID[:12], table)
	}
	slurmJobSelectsItsStep(t)

	// From a pid namespace of its own, rdmatrace sees the holder's objects
	// without an owner (6.1 and 6.12): the kernel hides who holds them.
	// It must say why.
	inNS := exec.Command(*rdmatraceBin, "res", "qp", "lqpn", lqpn, "-j")
	inNS.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	var nsOut, nsErr strings.Builder
	inNS.Stdout, inNS.Stderr = &nsOut, &nsErr
	if err := inNS.Run(); err != nil {
		t.Errorf("res in a pid namespace: %v\n%s", err, nsErr.String())
	}
	var nsRows []resRow
	if err := json.Unmarshal([]byte(nsOut.String()), &nsRows); err != nil {
		t.Fatalf("res in a pid namespace: %v: %q", err, nsOut.String())
	}
	for _, r := range nsRows {
		if r.PID != nil {
			t.Errorf("res in a pid namespace shows an owner outside it: %v", r)
		}
	}
	if !strings.Contains(nsErr.String(), "pid namespace of its own") {
		t.Errorf("res in a pid namespace said %q; want why it sees less", nsErr.String())
	}
	t.Logf("res from a pid namespace of its own: %d rows (%s)", len(nsRows), strings.TrimSpace(nsOut.String()))

	if tr == nil {
		return
	}
	time.Sleep(time.Second) // the create event reaches the trace's output
	created := false
	for _, e := range tr.stop() {
		if e.Kind == rdma.EvCreate && e.Has(rdma.EvHasRes) && e.Type == rdma.ResQP && fmt.Sprint(e.LQPN) == lqpn {
			created = true
			placed("trace create qp", placeOf(e.Owner.Place), e)
		}
	}
	if !created {
		t.Errorf("trace saw no create of qp %s", lqpn)
	}
}

// slurmJobSelectsItsStep starts a QP holder in a Slurm job step's cgroup,
// as slurmstepd's cgroup v2 plugin lays them out: ps and res name its job,
// and --job selects it by the job's id or the step's, and nothing else, in
// ps, res and top.
func slurmJobSelectsItsStep(t *testing.T) {
	start := time.Now()
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatal(err)
	}
	rel := "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"
	if err := os.MkdirAll(filepath.Join(mount, rel), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for d := rel; d != "/system.slice"; d = filepath.Dir(d) {
			_ = os.Remove(filepath.Join(mount, d))
		}
	}()
	dir, err := os.Open(filepath.Join(mount, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	holder, lqpn, stop := startQPHolder(t, &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())})
	defer stop()
	pid := holder.Process.Pid
	var procs []resRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "ps", "-j", "--job", "4242"), &procs); err != nil {
		t.Fatal(err)
	}
	if len(procs) != 1 || procs[0].owner() != pid || procs[0].Job != "4242" || procs[0].ContainerID != "4242.0" || procs[0].Cgroup != rel {
		t.Errorf("ps --job 4242: %+v, want only pid %d, job 4242, step 4242.0 in %s", procs, pid, rel)
	}
	for _, c := range []struct {
		args []string
		want int
	}{{[]string{"--job", "4242.0"}, 1}, {[]string{"job", "4242"}, 1}, {[]string{"--job", "4243,4242.1"}, 0}} {
		var rows []resRow
		if err := json.Unmarshal(run(t, *rdmatraceBin, append([]string{"res", "qp", "-j"}, c.args...)...), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != c.want || c.want == 1 && (rows[0].LQPN == nil || fmt.Sprint(*rows[0].LQPN) != lqpn || rows[0].Job != "4242") {
			t.Errorf("res qp %v: %+v, want %d rows (lqpn %s)", c.args, rows, c.want, lqpn)
		}
	}
	if table := string(run(t, *rdmatraceBin, "ps", "--job", "4242")); !strings.Contains(table, "slurm:4242.0") {
		t.Errorf("ps --job 4242's table does not name the step slurm:4242.0:\n%s", table)
	}
	// top counts the job's objects alone (netlink's dump: no tracer to attach).
	topOut := string(run(t, *rdmatraceBin, "top", "--netlink", "-b", "-n", "1", "-d", "1", "--job", "4242"))
	if frames := topFrames(t, topOut); len(frames) != 1 || len(frames[0]) != 1 {
		t.Errorf("top --job 4242: %d frames, want one with one owner, leakqp[%d]:\n%s", len(frames), pid, topOut)
	} else {
		for owner, row := range frames[0] {
			if !strings.Contains(owner, fmt.Sprintf("[%d]", pid)) || row.qps != 1 {
				t.Errorf("top --job 4242: owner %q with %d QPs, want leakqp[%d] with 1:\n%s", owner, row.qps, pid, topOut)
			}
		}
	}
	t.Logf("a Slurm job's step: ps, res and top --job in %v", time.Since(start).Round(time.Millisecond))
}

// TestSystemMatchesIproute2: `system -j` against `rdma -j system show`.
func TestSystemMatchesIproute2(t *testing.T) {
	needDevice(t)
	theirs := run(t, "rdma", "-j", "system", "show")
	if s := strings.TrimSpace(string(theirs)); strings.HasPrefix(s, "{") {
		theirs = []byte("[" + s + "]")
	}
	ours := run(t, *rdmatraceBin, "system", "-j")
	if json.Valid(theirs) {
		compareObjects(t, "system", theirs, ours)
	} else {
		// Some iproute2 versions print text for system show even with -j.
		t.Logf("rdma -j system show printed no JSON: %q", theirs)
	}
	// The text, key by key: every pair iproute2 prints, we print.
	pairs := func(b []byte) map[string]string {
		w := strings.Fields(string(b))
		m := map[string]string{}
		for i := 0; i+1 < len(w); i += 2 {
			m[w[i]] = w[i+1]
		}
		return m
	}
	it, we := pairs(run(t, "rdma", "system", "show")), pairs(run(t, *rdmatraceBin, "system"))
	for k, v := range it {
		if we[k] != v {
			t.Errorf("system: %s is %q in rdma system show, %q in ours", k, v, we[k])
		}
	}
	for k := range we {
		if _, ok := it[k]; !ok {
			// Debian 6.1's iproute2 predates the kernel's privileged-qkey
			// attribute; monitor-mode is ours.
			if k != "monitor-mode" && k != "privileged-qkey" {
				t.Errorf("system: ours has %s, rdma system show has not", k)
			}
			t.Logf("system: %s %s is ours only", k, we[k])
		}
	}
	if we["netns"] != "shared" && we["netns"] != "exclusive" {
		t.Errorf("system: netns mode %q", we["netns"])
	}
}

// TestExclusiveNetnsMode switches the kernel to exclusive mode, makes a
// named namespace, and checks what each side sees there against iproute2
// run inside it. Moving rxe0 into the namespace is what the issue asked
// for; the kernel refuses it for rxe (it has no disassociate_ucontext), so
// the test checks that refusal and says so.
func TestExclusiveNetnsMode(t *testing.T) {
	needDevice(t)
	setMode := func(mode string) error {
		var err error
		var stderr []byte
		// A namespace being torn down still counts for the kernel (EBUSY).
		for i := 0; i < 40; i++ {
			if _, stderr, err = runStatus(*rdmatraceBin, "system", "set", "netns", mode); err == nil {
				return nil
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("system set netns %s: %s", mode, stderr)
		return err
	}
	if err := setMode("exclusive"); err != nil {
		t.Fatalf("system set netns exclusive: %v", err)
	}
	defer func() {
		_, _, _ = runStatus("ip", "netns", "del", "blue")
		if err := setMode("shared"); err != nil {
			t.Errorf("system set netns shared: %v", err)
		}
	}()
	if got := string(run(t, "rdma", "system", "show")); !strings.Contains(got, "netns exclusive") {
		t.Fatalf("rdma system show after our set: %q", got)
	}
	run(t, "ip", "netns", "add", "blue")

	// Inside blue: no device (they all stay in the initial namespace).
	inBlue := run(t, "ip", "netns", "exec", "blue", "rdma", "-j", "dev", "show")
	ours := run(t, *rdmatraceBin, "dev", "--netns", "blue", "-j")
	compareObjects(t, "dev", inBlue, ours)
	var all []devRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "dev", "--netns", "all", "-j"), &all); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, d := range all {
		seen[d.Ifname] = d.NetnsName
	}
	if seen[device] != "self" {
		t.Errorf("dev --netns all: %s is in %q, want self (%v)", device, seen[device], all)
	}

	_, stderr, err := runStatus("rdma", "dev", "set", device, "netns", "blue")
	if err == nil {
		// A kernel that can move rxe: then the host must not see it, say so,
		// and --netns all must find it in blue.
		out, warn, _ := runStatus(*rdmatraceBin, "dev", "-j")
		if strings.Contains(string(out), `"`+device+`"`) || !strings.Contains(string(warn), "exclusive") {
			t.Errorf("after moving %s into blue: dev -j %s, stderr %q; want it hidden and a warning", device, out, warn)
		}
		return // deleting blue gives the device back to the initial namespace
	}
	if !strings.Contains(string(stderr), "not supported") {
		t.Errorf("rdma dev set %s netns blue failed with %q, want rxe's Operation not supported", device, stderr)
	}
	t.Logf("the kernel keeps %s out of blue: %s", device, strings.TrimSpace(string(stderr)))
}

// doctorRun runs doctor and returns each check's status and its exit code.
func doctorRun(t *testing.T, args ...string) (map[string]string, int) {
	t.Helper()
	out, stderr, err := runStatus(*rdmatraceBin, append([]string{"doctor", "-j"}, args...)...)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("doctor %v: %v", args, err)
	}
	var fs []doctorCheck
	if err := json.Unmarshal(out, &fs); err != nil {
		t.Fatalf("doctor %v -j: %v\n%s%s", args, err, out, stderr)
	}
	got := map[string]string{}
	for _, f := range fs {
		got[f.Check] = f.Status
		if f.Status == "fail" {
			t.Logf("doctor %v: %s: %s; fix: %s", args, f.Check, f.Detail, f.Fix)
		}
	}
	return got, code
}

// wantOnlyFailure checks that exactly one check failed (none with "").
func wantOnlyFailure(t *testing.T, what string, got map[string]string, code int, check string) {
	t.Helper()
	for k, v := range got {
		if (v == "fail") != (k == check) {
			t.Errorf("%s: %s is %s (want only %q to fail): %v", what, k, v, check, got)
		}
	}
	if want := map[bool]int{true: 1, false: 0}[check != ""]; code != want {
		t.Errorf("%s: exit status %d, want %d", what, code, want)
	}
}

// TestDoctorNamesEachCauseMadeOnPurpose: doctor passes for a healthy
// process, then each cause of "RDMA does not work here" is made once and
// doctor must name that one: the device file mode, a memlock limit of 64
// KiB, a namespace without a RoCE address, an rdma_cm port another process
// listens on, a port down.
func TestDoctorNamesEachCauseMadeOnPurpose(t *testing.T) {
	needDevice(t)
	got, code := doctorRun(t)
	wantOnlyFailure(t, "doctor of itself", got, code, "")

	start := func(attr *syscall.SysProcAttr, argv ...string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		time.Sleep(300 * time.Millisecond) // the shell has set its limit and exec'd
		return cmd
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	sleeper := start(nobody, "sleep", "60")
	pid := strconv.Itoa(sleeper.Process.Pid)
	got, code = doctorRun(t, "--pid", pid)
	wantOnlyFailure(t, "a process of nobody", got, code, "")

	uverbs, _ := filepath.Glob("/dev/infiniband/uverbs*")
	if len(uverbs) == 0 {
		t.Fatal("no /dev/infiniband/uverbs*")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(uverbs[0], &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(uverbs[0], 0o600); err != nil {
		t.Fatal(err)
	}
	got, code = doctorRun(t, "--pid", pid)
	_ = os.Chmod(uverbs[0], os.FileMode(st.Mode&0o777))
	wantOnlyFailure(t, uverbs[0]+" mode 0600", got, code, "device-files")

	// As nobody: root's CAP_IPC_LOCK lifts the limit (doctor says so).
	limited := start(nobody, "sh", "-c", "ulimit -l 64; exec sleep 60")
	got, code = doctorRun(t, "--pid", strconv.Itoa(limited.Process.Pid))
	wantOnlyFailure(t, "ulimit -l 64", got, code, "memlock")

	isolated := start(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}, "sleep", "60")
	got, code = doctorRun(t, "--pid", strconv.Itoa(isolated.Process.Pid))
	wantOnlyFailure(t, "a network namespace without the RoCE address", got, code, "gid")

	// --port: a port an rping server listens on is taken for anyone else,
	// not for rping itself; a TCP listener on a port does not matter to
	// RoCE, whose rdma_cm ports are apart from the host's.
	ports += 10
	held := strconv.Itoa(ports)
	server := start(nil, "rping", "-s", "-a", addr, "-p", held)
	waitListening(t, held)
	got, code = doctorRun(t, "--port", held)
	wantOnlyFailure(t, "--port "+held+" held by rping", got, code, "cm-port")
	if out, _, _ := runStatus(*rdmatraceBin, "doctor", "--port", held); !strings.Contains(string(out), fmt.Sprintf("rping[%d]", server.Process.Pid)) {
		t.Errorf("doctor --port %s does not name rping[%d]:\n%s", held, server.Process.Pid, out)
	}
	got, code = doctorRun(t, "--pid", strconv.Itoa(server.Process.Pid), "--port", held)
	wantOnlyFailure(t, "rping's own --port "+held, got, code, "")
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(ports+1))
	if err != nil {
		t.Fatal(err)
	}
	got, code = doctorRun(t, "--port", strconv.Itoa(ports+1))
	ln.Close()
	wantOnlyFailure(t, "--port held by a TCP listener, on RoCE", got, code, "")
	if got["cm-port"] != "ok" {
		t.Errorf("doctor --port: no cm-port check in %v", got)
	}

	netdev := "veth0"
	run(t, "ip", "link", "set", netdev, "down")
	waitFor(t, 20*time.Second, device+" DOWN", func() bool {
		b, _ := os.ReadFile("/sys/class/infiniband/" + device + "/ports/1/state")
		return !strings.Contains(string(b), "ACTIVE")
	})
	got, code = doctorRun(t)
	run(t, "ip", "link", "set", netdev, "up")
	waitFor(t, 20*time.Second, device+" ACTIVE again", func() bool {
		b, _ := os.ReadFile("/sys/class/infiniband/" + device + "/ports/1/state")
		return strings.Contains(string(b), "ACTIVE")
	})
	// rxe_lo may be ACTIVE too when a test made it: then ports passes.
	if _, err := os.Stat("/sys/class/infiniband/rxe_lo"); err == nil {
		t.Logf("rxe_lo exists: the port check had an ACTIVE port: %v", got)
	} else {
		if got["gid"] == "fail" {
			got["gid"] = "ok" // a netdev going down may take its GIDs along
		}
		wantOnlyFailure(t, netdev+" down", got, code, "ports")
	}
}

// startQPHolder starts leakqp holding one QP on device, as attr places it,
// and returns the process, the QP's lqpn and what kills it: before the
// caller removes its cgroup, so not at the test's end.
func startQPHolder(t *testing.T, attr *syscall.SysProcAttr) (*exec.Cmd, string, func()) {
	t.Helper()
	holder := exec.Command(filepath.Join(*workloads, "leakqp"), device, "hold")
	holder.SysProcAttr = attr
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = holder.Process.Kill(); _ = holder.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	lqpn, ok := strings.CutPrefix(strings.TrimSpace(line), "lqpn ")
	if err != nil || !ok {
		stop()
		t.Fatalf("leakqp hold printed %q (%v), want its lqpn", line, err)
	}
	return holder, lqpn, stop
}
