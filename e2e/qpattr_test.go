//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// gidOf finds the index of rxe0's port 1 GID that is g (as sysfs writes
// it) with the type typ ("RoCE v2"; "IB/RoCE v1" for v1).
func gidOf(t *testing.T, g, typ string) int {
	t.Helper()
	dir := fmt.Sprintf("/sys/class/infiniband/%s/ports/1", device)
	for i := 0; i < 64; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s/gids/%d", dir, i))
		ty, terr := os.ReadFile(fmt.Sprintf("%s/gid_attrs/types/%d", dir, i))
		if err == nil && terr == nil && strings.HasPrefix(strings.TrimSpace(string(b)), g) && strings.TrimSpace(string(ty)) == typ {
			return i
		}
	}
	t.Fatalf("%s has no %s GID %s*", device, typ, g)
	return -1
}

// startTraceWithBTF is startTrace, with --btf where the kernel has no
// module BTF (5.10): the modules' BTF that guest/modbtf.sh made.
func startTraceWithBTF(t *testing.T, args ...string) *tracing {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err == nil {
		return startTrace(t, args...)
	}
	args = append([]string{"--btf", givenBTF(t)}, args...)
	ready := filepath.Join(t.TempDir(), "ready")
	tr := &tracing{t: t}
	tr.cmd = exec.Command(*rdmatraceBin, append([]string{"trace", "-j", "--ready-file", ready}, args...)...)
	tr.cmd.Stdout, tr.cmd.Stderr = &tr.out, &tr.stderr
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "rdmatrace trace to attach", func() bool {
		_, err := os.Stat(ready)
		return err == nil || tr.cmd.ProcessState != nil
	})
	return tr
}

// startQPAttr runs the qpattr workload holding its connected pair, and
// returns it with its two QP numbers once both are in RTS.
func startQPAttr(t *testing.T, args ...string) (*exec.Cmd, [2]uint32) {
	t.Helper()
	cmd := exec.Command(filepath.Join(*workloads, "qpattr"), append(args, "-H")...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var q [2]uint32
	if n, _ := fmt.Sscanf(line, "lqpn %d %d", &q[0], &q[1]); err != nil || n != 2 {
		t.Fatalf("qpattr %v printed %q (%v), want its two lqpns\n%s", args, line, err, stderr.String())
	}
	return cmd, q
}

// TestQPSettingsAreFlaggedAtTheModify connects loopback RC pairs over
// rxe0 under one trace: one with min_rnr_timer 0 and rnr_retry 7 (the RNR
// wait of 655 ms, retried for ever), one on the link-local GID with a path
// MTU of 4096 over a 1500-byte netdev, a sound one, and one on the GID of
// a VLAN device. The
// trace's qp-attr events carry each value as the program set it and the
// GID as sysfs has it, with the risks; doctor, given the recording, warns
// of the first two by pid and passes the third.
func TestQPSettingsAreFlaggedAtTheModify(t *testing.T) {
	needDevice(t)
	v4v2 := gidOf(t, "0000:0000:0000:0000:0000:ffff:0a63:0001", "RoCE v2")
	llv2 := gidOf(t, "fe80:", "RoCE v2")
	mtu, err := os.ReadFile("/sys/class/net/veth0/mtu")
	if err != nil {
		t.Fatal(err)
	}
	vlanIdx, vlanWhy := vlanGID(t)
	tr := startTraceWithBTF(t, "--no-snapshot")
	rnr, rnrQPs := startQPAttr(t, "-d", device, "-g", strconv.Itoa(v4v2), "-n", "0", "-r", "7", "-t", "14")
	ll, llQPs := startQPAttr(t, "-d", device, "-g", strconv.Itoa(llv2), "-n", "12", "-r", "6", "-t", "14", "-m", "4096")
	sound, soundQPs := startQPAttr(t, "-d", device, "-g", strconv.Itoa(v4v2), "-n", "12", "-r", "6", "-t", "14")
	var vlanQPs [2]uint32
	if vlanIdx >= 0 {
		_, vlanQPs = startQPAttr(t, "-d", device, "-g", strconv.Itoa(vlanIdx), "-n", "12", "-r", "6", "-t", "14")
	}
	evs := tr.stop() // what the ring holds at the stop is delivered (tracer.StopDrain)
	rec := filepath.Join(t.TempDir(), "trace.ndjson")
	if err := os.WriteFile(rec, tr.out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each QP's settings, merged over its modifies, as the trace says them.
	settings := map[uint32]rdma.QPAttr{}
	risks := map[uint32][]string{}
	lines := map[uint32][]string{}
	for _, e := range evs {
		if e.Kind != rdma.EvQPAttr || e.DevName != device {
			continue
		}
		a := settings[e.LQPN]
		a.Merge(&e.QPAttr)
		settings[e.LQPN] = a
		var j struct {
			Risks []string `json:"risks"`
		}
		if err := json.Unmarshal([]byte(e.line), &j); err != nil {
			t.Fatal(err)
		}
		risks[e.LQPN] = append(risks[e.LQPN], j.Risks...)
		lines[e.LQPN] = append(lines[e.LQPN], e.line)
		if e.Owner.Comm != "qpattr" {
			t.Errorf("qp-attr of lqpn %d owned by %q, want qpattr: %s", e.LQPN, e.Owner.Comm, e.line)
		}
	}
	want := func(what string, qps [2]uint32, gidIndex int, mask rdma.QPAttrMask, check func(a rdma.QPAttr) bool, wantRisks, notRisks []string) {
		t.Run(what, func(t *testing.T) {
			for _, q := range qps {
				a, ok := settings[q]
				if !ok {
					t.Errorf("lqpn %d: no qp-attr event\n%s", q, tr.out.String())
					continue
				}
				sysGID, _ := os.ReadFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/1/gids/%d", device, gidIndex))
				g, _ := netip.ParseAddr(strings.TrimSpace(string(sysGID)))
				if !a.Sets(mask) || !check(a) || !a.HasGID || int(a.SGIDIndex) != gidIndex || a.SGID != g || a.GIDType != rdma.GIDTypeRoCEv2 ||
					a.Ndev != "veth0" || strconv.FormatUint(uint64(a.NdevMTU), 10) != strings.TrimSpace(string(mtu)) {
					t.Errorf("lqpn %d: %+v; want GID %d (%s, RoCE v2 on veth0, mtu %s) and the values set\n%s", q, a, gidIndex, g,
						strings.TrimSpace(string(mtu)), strings.Join(lines[q], "\n"))
				}
				for _, r := range wantRisks {
					if !slices.Contains(risks[q], r) {
						t.Errorf("lqpn %d: risks %v, want %s", q, risks[q], r)
					}
				}
				for _, r := range notRisks {
					if slices.Contains(risks[q], r) {
						t.Errorf("lqpn %d: risks %v, not %s", q, risks[q], r)
					}
				}
			}
		})
	}
	const rnrMask = rdma.QPMaskAV | rdma.QPMaskMinRNRTimer | rdma.QPMaskRNRRetry | rdma.QPMaskTimeout | rdma.QPMaskRetryCnt | rdma.QPMaskPathMTU
	want("min_rnr_timer 0 and rnr_retry 7", rnrQPs, v4v2, rnrMask,
		func(a rdma.QPAttr) bool { return a.MinRNRTimer == 0 && a.RNRRetry == 7 && a.Timeout == 14 },
		[]string{rdma.RiskRNRWait, rdma.RiskRNRInfinite}, []string{rdma.RiskLinkLocalGID, rdma.RiskNoTimeout})
	want("a link-local GID and a path MTU above the netdev's", llQPs, llv2, rnrMask,
		func(a rdma.QPAttr) bool { return a.PathMTU == 5 && a.MinRNRTimer == 12 && a.SGID.IsLinkLocalUnicast() },
		[]string{rdma.RiskLinkLocalGID, rdma.RiskMTUAboveNetdev}, []string{rdma.RiskRNRWait, rdma.RiskRNRInfinite})
	want("sound settings", soundQPs, v4v2, rnrMask,
		func(a rdma.QPAttr) bool { return a.MinRNRTimer == 12 && a.RNRRetry == 6 },
		nil, []string{rdma.RiskRNRWait, rdma.RiskRNRInfinite, rdma.RiskLinkLocalGID, rdma.RiskNoTimeout, rdma.RiskMTUAboveNetdev})

	t.Run("a GID of a VLAN device", func(t *testing.T) {
		if vlanIdx < 0 {
			t.Skip(vlanWhy)
		}
		for _, q := range vlanQPs {
			if a := settings[q]; !a.HasGID || int(a.SGIDIndex) != vlanIdx || a.Ndev != "veth0.5" || !a.HasVLAN || a.VLAN != 5 {
				t.Errorf("lqpn %d: %+v, want GID %d on veth0.5, VLAN 5\n%s", q, a, vlanIdx, strings.Join(lines[q], "\n"))
			}
		}
		var rows []struct {
			Index  int    `json:"index"`
			Netdev string `json:"netdev"`
			VLAN   *int   `json:"vlan"`
		}
		if err := json.Unmarshal(run(t, *rdmatraceBin, "gid", "-d", device, "-j"), &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Netdev == "veth0.5" && (r.VLAN == nil || *r.VLAN != 5) || r.Netdev == "veth0" && r.VLAN != nil {
				t.Errorf("rdmatrace gid: index %d on %s with VLAN %v, want 5 on veth0.5 only", r.Index, r.Netdev, r.VLAN)
			}
		}
	})

	doctor := func(what string, p *exec.Cmd, status string, words ...string) {
		t.Run("doctor "+what, func(t *testing.T) {
			out, stderr, err := runStatus(*rdmatraceBin, "doctor", "-j", "--pid", strconv.Itoa(p.Process.Pid), "--qp-trace", rec)
			var fs []doctorCheck
			if jerr := json.Unmarshal(out, &fs); jerr != nil {
				t.Fatalf("doctor --pid %d --qp-trace: %v, %v\n%s%s", p.Process.Pid, err, jerr, out, stderr)
			}
			for _, f := range fs {
				if f.Check != "qp-settings" {
					continue
				}
				t.Logf("%s: %s; fix: %s", f.Status, f.Detail, f.Fix)
				if f.Status != status {
					t.Errorf("qp-settings is %s, want %s: %s", f.Status, status, f.Detail)
				}
				for _, w := range words {
					if !strings.Contains(f.Detail, w) {
						t.Errorf("qp-settings does not say %q: %s", w, f.Detail)
					}
				}
				return
			}
			t.Errorf("doctor made no qp-settings check: %s", out)
		})
	}
	doctor("min_rnr_timer 0 and rnr_retry 7", rnr, "warn", "min_rnr_timer 0 = 655.36 ms", "rnr_retry 7 = infinite", "RISK", "rnr-wait")
	doctor("a link-local GID", ll, "warn", "link-local-gid", "mtu-above-netdev", fmt.Sprintf("lqpn %d", llQPs[0]))
	doctor("sound settings", sound, "ok", fmt.Sprintf("lqpn %d", soundQPs[0]), "rnr_retry 6")
}

// vlanGID puts VLAN 5 on rxe0's netdev with 10.99.5.1, whose RoCE v2
// GID ib_core adds for rxe0, and returns that GID's index; -1 and why
// where the kernel cannot (no 8021q). The test's end takes it away again,
// and waits for its GIDs to go.
func vlanGID(t *testing.T) (int, string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", "modprobe 8021q && ip link add link veth0 name veth0.5 type vlan id 5 && "+
		"ip addr add 10.99.5.1/24 dev veth0.5 && ip link set veth0.5 up").CombinedOutput(); err != nil {
		_ = exec.Command("ip", "link", "del", "veth0.5").Run()
		return -1, fmt.Sprintf("kernel %s: no VLAN device on veth0 (%v): %s", release(t), err, strings.TrimSpace(string(out)))
	}
	gids := func() string {
		out, _, _ := runStatus("sh", "-c", "cat /sys/class/infiniband/"+device+"/ports/1/gid_attrs/ndevs/* 2>/dev/null")
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", "veth0.5").Run()
		waitFor(t, 30*time.Second, "the GIDs of veth0.5 to go", func() bool { return !strings.Contains(gids(), "veth0.5") })
	})
	idx := -1
	waitFor(t, 30*time.Second, "the RoCE v2 GID of 10.99.5.1", func() bool {
		idx = -1
		for i := 0; i < 64 && idx < 0; i++ {
			idx = i
			dir := fmt.Sprintf("/sys/class/infiniband/%s/ports/1/", device)
			g, _ := os.ReadFile(fmt.Sprintf("%sgids/%d", dir, i))
			ty, _ := os.ReadFile(fmt.Sprintf("%sgid_attrs/types/%d", dir, i))
			nd, _ := os.ReadFile(fmt.Sprintf("%sgid_attrs/ndevs/%d", dir, i))
			if strings.TrimSpace(string(g)) != "0000:0000:0000:0000:0000:ffff:0a63:0501" || strings.TrimSpace(string(ty)) != "RoCE v2" ||
				strings.TrimSpace(string(nd)) != "veth0.5" {
				idx = -1
			}
		}
		return idx >= 0
	})
	return idx, ""
}

// gidRow is one object of `rdmatrace gid -j`.
type gidRow struct {
	Ifname string `json:"ifname"`
	Port   uint32 `json:"port"`
	Index  uint32 `json:"index"`
	GID    string `json:"gid"`
	IPv4   string `json:"ipv4"`
	Type   string `json:"type"`
	Netdev string `json:"netdev"`
}

// devinfoGID reads the GID lines of ibv_devinfo -v: "GID[  3]:
// ::ffff:10.99.0.1, RoCE v2".
var devinfoGID = regexp.MustCompile(`GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:, (.+))?`)

// compareGIDTable checks `rdmatrace gid -d rxe0 -j` against sysfs, entry
// by entry and field by field, and against ibv_devinfo -v, and returns it.
func compareGIDTable(t *testing.T) []gidRow {
	t.Helper()
	var rows []gidRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "gid", "-d", device, "-j"), &rows); err != nil {
		t.Fatal(err)
	}
	dir := fmt.Sprintf("/sys/class/infiniband/%s/ports/1", device)
	files, _ := filepath.Glob(dir + "/gids/*")
	var sysfs []gidRow
	for _, f := range files {
		b, err := os.ReadFile(f)
		g := strings.TrimSpace(string(b))
		if err != nil || g == "0000:0000:0000:0000:0000:0000:0000:0000" {
			continue
		}
		i, _ := strconv.Atoi(filepath.Base(f))
		ty, _ := os.ReadFile(fmt.Sprintf("%s/gid_attrs/types/%d", dir, i))
		nd, _ := os.ReadFile(fmt.Sprintf("%s/gid_attrs/ndevs/%d", dir, i))
		r := gidRow{Ifname: device, Port: 1, Index: uint32(i), GID: g, Type: strings.TrimSpace(string(ty)), Netdev: strings.TrimSpace(string(nd))}
		if r.Type == "IB/RoCE v1" {
			r.Type = "RoCE v1" // on an Ethernet port
		}
		if a, err := netip.ParseAddr(g); err == nil && a.Is4In6() {
			r.IPv4 = a.Unmap().String()
		}
		sysfs = append(sysfs, r)
	}
	slices.SortFunc(sysfs, func(a, b gidRow) int { return int(a.Index) - int(b.Index) })
	if fmt.Sprint(rows) != fmt.Sprint(sysfs) {
		t.Errorf("rdmatrace gid -d %s -j:\n%v\nsysfs:\n%v", device, rows, sysfs)
	}
	devinfo := run(t, "ibv_devinfo", "-v", "-d", device)
	var theirs []string
	for _, m := range devinfoGID.FindAllStringSubmatch(string(devinfo), -1) {
		a, err := netip.ParseAddr(m[2])
		if err != nil || a == netip.AddrFrom16([16]byte{}) {
			continue
		}
		theirs = append(theirs, fmt.Sprintf("%s %s %s", m[1], a, m[3]))
	}
	var ours []string
	for _, r := range rows {
		a, _ := netip.ParseAddr(r.GID)
		typ := r.Type
		if len(theirs) > 0 && !strings.Contains(theirs[0], "RoCE") && !strings.Contains(theirs[0], "IB") {
			typ = "" // an ibv_devinfo that does not name the type
		}
		ours = append(ours, strings.TrimSpace(fmt.Sprintf("%d %s %s", r.Index, a, typ)))
	}
	for i := range theirs {
		theirs[i] = strings.TrimSpace(theirs[i])
	}
	if fmt.Sprint(ours) != fmt.Sprint(theirs) {
		t.Errorf("rdmatrace gid: %q\nibv_devinfo -v: %q\n%s", ours, theirs, devinfo)
	}
	return rows
}

// TestGIDTableFollowsAddresses: `rdmatrace gid` is sysfs' and ibv_devinfo's
// table; an address added to rxe0's netdev adds its GIDs, and removing it
// takes them away again.
func TestGIDTableFollowsAddresses(t *testing.T) {
	needDevice(t)
	before := compareGIDTable(t)
	const extra = "10.99.7.1"
	has := func(rows []gidRow) int {
		n := 0
		for _, r := range rows {
			if r.IPv4 == extra && r.Netdev == "veth0" {
				n++
			}
		}
		return n
	}
	if has(before) != 0 {
		t.Fatalf("%s is in the table before it was added: %v", extra, before)
	}
	// gid -w beside it sees the address's GIDs come and go, polled.
	watch := exec.Command(*rdmatraceBin, "gid", "-d", device, "-w", "-j", "--interval", "200ms")
	var watched lockedBuffer
	var watchErr strings.Builder
	watch.Stdout, watch.Stderr = &watched, &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	waitFor(t, 30*time.Second, "gid -w's first table", func() bool { return strings.Contains(watched.String(), `"index"`) })
	run(t, "ip", "addr", "add", extra+"/24", "dev", "veth0")
	removed := false
	t.Cleanup(func() {
		if !removed {
			_, _, _ = runStatus("ip", "addr", "del", extra+"/24", "dev", "veth0")
		}
	})
	// ib_core adds an address's GIDs (RoCE v2, and v1 where the driver
	// has it: rxe before 6.x) from a work item, and removes them so.
	sysfsCount := func() int {
		out, _, _ := runStatus("sh", "-c", "cat /sys/class/infiniband/"+device+"/ports/1/gids/*")
		return strings.Count(string(out), "0000:0000:0000:0000:0000:ffff:0a63:0701")
	}
	waitFor(t, 30*time.Second, "the GIDs of "+extra, func() bool { return sysfsCount() > 0 })
	if n, want := has(compareGIDTable(t)), sysfsCount(); n == 0 || n != want {
		t.Errorf("%d GIDs of %s after it was added, sysfs has %d", n, extra, want)
	}
	run(t, "ip", "addr", "del", extra+"/24", "dev", "veth0")
	removed = true
	waitFor(t, 30*time.Second, "the GIDs of "+extra+" to go", func() bool { return sysfsCount() == 0 })
	after := compareGIDTable(t)
	changes := func() map[string]int {
		n := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(watched.String()), "\n") {
			var c struct {
				Change string `json:"change"`
				Polled bool   `json:"polled"`
				IPv4   string `json:"ipv4"`
			}
			if json.Unmarshal([]byte(line), &c) == nil && c.Polled && c.IPv4 == extra {
				n[c.Change]++
			}
		}
		return n
	}
	seen := func() bool { c := changes(); return c["added"] > 0 && c["removed"] == c["added"] }
	for deadline := time.Now().Add(30 * time.Second); !seen() && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
	}
	_ = watch.Process.Signal(os.Interrupt)
	if err := watch.Wait(); err != nil {
		t.Errorf("gid -w: %v\n%s", err, watchErr.String())
	}
	if !seen() {
		t.Errorf("gid -w saw %v of %s's GIDs, want each added and removed\n%s", changes(), extra, watched.String())
	}
	if has(after) != 0 || len(after) != len(before) {
		t.Errorf("after %s was removed: %v, want the table of before: %v", extra, after, before)
	}
}
