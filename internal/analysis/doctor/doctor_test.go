package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// healthy is a process in a pod that can use rxe0: every check passes.
func healthy(t *testing.T) (Target, View) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "dev", "infiniband")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rdma_cm", "uverbs0"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, f), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	tg := Target{PID: 4242, Comm: "ib_write_lat", UID: 1000, GIDs: []uint32{1000}, Memlock: 64 << 20,
		Root: root, Cgroup: "/kubepods.slice/pod/cri-containerd-x.scope"}
	v := View{
		Devices: []rdma.Device{{Index: 1, Name: "rxe0"}},
		Ports:   []rdma.Port{{DevName: "rxe0", Port: 1, State: rdma.PortState(4)}},
		Mode:    "shared", MRBytes: 4 << 20,
		Addrs:   []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.99.0.1")},
		GIDs:    map[string]string{"10.99.0.1": "rxe0/1"},
		Uverbs:  map[string]string{"rxe0": "uverbs0"},
		Modules: map[string]bool{"ib_core": true, "ib_uverbs": true, "rdma_cm": true, "rdma_ucm": true},
	}
	return tg, v
}

func render(fs []Finding) string {
	var b bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&b, "%-4s %-14s%s\n", f.Status, f.Check, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(&b, "     fix: %s\n", f.Fix)
		}
	}
	return b.String()
}

// Each way RDMA fails in a container, made once on purpose: the finding
// names it and says what to do.
func TestEachCheckFailsOnPurposeGolden(t *testing.T) {
	var out bytes.Buffer
	for _, tc := range []struct {
		name   string
		break_ func(*Target, *View)
		check  string
	}{
		{"healthy", func(*Target, *View) {}, ""},
		{"modules", func(_ *Target, v *View) { v.Modules["rdma_ucm"] = false }, "modules"},
		{"no device in its netns (exclusive)", func(_ *Target, v *View) { v.Devices, v.Ports, v.Mode = nil, nil, "exclusive" }, "devices"},
		{"port down", func(_ *Target, v *View) { v.Ports[0].State = rdma.PortState(1) }, "ports"},
		{"uverbs not readable", func(tg *Target, _ *View) {
			os.Chmod(filepath.Join(tg.Root, "dev", "infiniband", "uverbs0"), 0o600)
		}, "device-files"},
		{"rdma_cm not in the container", func(tg *Target, _ *View) {
			os.Remove(filepath.Join(tg.Root, "dev", "infiniband", "rdma_cm"))
		}, "device-files"},
		{"ulimit -l 64", func(tg *Target, v *View) { tg.Memlock, v.MRBytes = 64<<10, 0 }, "memlock"},
		{"no GID for its address", func(_ *Target, v *View) { v.Addrs = v.Addrs[:1] }, "gid"},
		{"--port 7174, free", func(tg *Target, _ *View) { tg.Port = 7174 }, ""},
		{"--port 7174, its own listener", func(tg *Target, v *View) {
			tg.Port = 7174
			v.PortHolders = []PortHolder{{Stack: "rdma_cm", PID: 4242, Comm: "ib_write_lat", State: "LISTEN", Where: "rxe0 10.99.0.1:7174"}}
		}, ""},
		{"--port 7174, held by another rdma_cm listener", func(tg *Target, v *View) {
			tg.Port = 7174
			v.PortHolders = []PortHolder{{Stack: "rdma_cm", PID: 77, Comm: "rping", State: "LISTEN", Where: "rxe0 0.0.0.0:7174"}}
		}, "cm-port"},
		{"--port 7174, TCP holds it, RoCE", func(tg *Target, v *View) {
			tg.Port = 7174
			v.PortHolders = []PortHolder{{Stack: "tcp", PID: 88, Comm: "nginx", State: "LISTEN", Where: "0.0.0.0:7174"}}
		}, ""},
		{"--port 7174, the sockets unreadable", func(tg *Target, v *View) {
			tg.Port = 7174
			v.PortErrs = []error{errors.New("open the socket diagnostics (NETLINK_SOCK_DIAG): protocol not supported")}
		}, ""},
		{"--port 7174, TCP holds it, iWARP", func(tg *Target, v *View) {
			tg.Port = 7174
			v.IWarp = []string{"siw0"}
			v.PortHolders = []PortHolder{{Stack: "tcp", PID: 88, Comm: "nginx", State: "LISTEN", Where: "0.0.0.0:7174"}}
		}, "cm-port"},
	} {
		tg, v := healthy(t)
		tc.break_(&tg, &v)
		fs := Check(tg, v)
		out.WriteString("--- " + tc.name + "\n" + render(fs))
		for _, f := range fs {
			failed := f.Status == Fail
			if failed != (f.Check == tc.check) {
				t.Errorf("%s: %s is %s", tc.name, f.Check, f.Status)
			}
		}
	}
	golden.Check(t, "../../../testdata/doctor/checks.golden", out.Bytes())
}

func TestMemlockUnlimitedOrIPCLock(t *testing.T) {
	tg, v := healthy(t)
	tg.Memlock = 64 << 10
	tg.IPCLck = true
	if f := memlock(tg, v); f.Status != Pass {
		t.Errorf("CAP_IPC_LOCK with a small limit: %v", f)
	}
	tg.IPCLck, tg.Memlock = false, ^uint64(0)
	if f := memlock(tg, v); f.Status != Pass {
		t.Errorf("unlimited: %v", f)
	}
	tg.Memlock, v.MRBytes = 8<<20, 7800<<10
	if f := memlock(tg, v); f.Status != Warn {
		t.Errorf("MRs at 95%% of the limit: %v, want a warning", f)
	}
}

func TestReadTargetOfOurselves(t *testing.T) {
	tg, err := ReadTarget("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if tg.UID != uint32(os.Geteuid()) || tg.Memlock == 0 || tg.Comm == "" {
		t.Errorf("ReadTarget(self) = %+v", tg)
	}
}

// A program that rdmatrace ran as a user and that has ended is judged as
// that user where rdmatrace runs, not as root: its device files by its
// uid and groups, its RLIMIT_MEMLOCK without root's CAP_IPC_LOCK.
func TestTargetAsAnotherUserIsJudgedAsThem(t *testing.T) {
	root, v := healthy(t)
	root.UID, root.GIDs, root.IPCLck, root.Memlock = 0, []uint32{0}, true, 64<<10
	for _, f := range []string{"rdma_cm", "uverbs0"} {
		if err := os.Chmod(filepath.Join(root.Root, "dev", "infiniband", f), 0o660); err != nil {
			t.Fatal(err)
		}
	}
	status := func(tg Target) map[string]Status {
		out := map[string]Status{}
		for _, f := range Check(tg, v) {
			out[f.Check] = f.Status
		}
		return out
	}
	if got := status(root); got["memlock"] != Pass || got["device-files"] != Pass {
		t.Fatalf("root: memlock %v, device-files %v; want both ok", got["memlock"], got["device-files"])
	}
	user := root.As(1001, []uint32{1001, 27})
	if user.UID != 1001 || user.IPCLck || user.Memlock != root.Memlock {
		t.Errorf("As(1001): uid %d, CAP_IPC_LOCK %v, memlock %d; want 1001, false, %d", user.UID, user.IPCLck, user.Memlock, root.Memlock)
	}
	if got := status(user); got["memlock"] != Fail || got["device-files"] != Fail {
		t.Errorf("as uid 1001: memlock %v, device-files %v; want both FAIL (64 KiB, files 0660 of root's group)", got["memlock"], got["device-files"])
	}
	if gotRoot := root.As(0, []uint32{0}); !gotRoot.IPCLck {
		t.Error("As(0) dropped root's CAP_IPC_LOCK")
	}
}
