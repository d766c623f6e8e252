package doctor

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/netns"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// ContainerPID finds the first process (by pid) of the container whose id
// starts with id, not counting its runtime's monitor.
func ContainerPID(id string, places *enrich.Enricher) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	best := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || best != 0 && pid > best {
			continue
		}
		if p := places.Place(uint32(pid), 0); p != nil && strings.HasPrefix(p.ContainerID, id) {
			best = pid
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no process is in a container whose id starts with %q", id)
	}
	return best, nil
}

// Gather learns what the checks need, from where t runs: netlink in its
// network namespace, sysfs, its cgroup; x names the processes it finds.
func Gather(t Target, x *enrich.Enricher) View {
	v := View{Modules: map[string]bool{}, Uverbs: map[string]string{}, GIDs: map[string]string{}, DeviceProgs: -1}
	for _, m := range []string{"ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm"} {
		_, err := os.Stat(filepath.Join("/sys/module", m))
		v.Modules[m] = err == nil
	}
	if f, err := os.Open(t.NetNS); err == nil {
		if cl, err := nldev.DialNetNS(int(f.Fd())); err == nil {
			v.Devices, _ = cl.Devices()
			v.Ports, _ = cl.Ports(v.Devices)
			if sys, err := cl.System(); err == nil {
				v.Mode = sys.NetNSMode
			}
			v.QPs, v.QPErr = targetQPs(cl, t, v.Devices, x)
			if t.Port != 0 {
				ids, err := cl.Resources(rdma.ResCMID, v.Devices)
				if err != nil {
					v.PortErrs = append(v.PortErrs, err)
				}
				v.PortHolders = cmHolders(ids, t.Port, x)
			}
			cl.Close()
		}
		if t.Port != 0 {
			socks, err := sockdiag.Dump(int(f.Fd()))
			if err != nil {
				v.PortErrs = append(v.PortErrs, err)
			}
			v.PortHolders = append(v.PortHolders, tcpHolders(socks, t.Port, x)...)
		}
		f.Close()
	}
	for _, d := range v.Devices {
		if d.NodeType.String() == "rnic" || d.Protocol == "iw" {
			v.IWarp = append(v.IWarp, d.Name)
		}
	}
	v.Addrs, _ = netns.Addrs(t.NetNS)
	v.MRBytes = mrBytes(t.PID, x)
	visible := map[string]bool{}
	for _, d := range v.Devices {
		visible[d.Name] = true
	}
	uv, _ := filepath.Glob("/sys/class/infiniband_verbs/uverbs*/ibdev")
	for _, p := range uv {
		if b, err := os.ReadFile(p); err == nil && visible[strings.TrimSpace(string(b))] {
			v.Uverbs[strings.TrimSpace(string(b))] = filepath.Base(filepath.Dir(p))
		}
	}
	for _, p := range v.Ports {
		dir := filepath.Join("/sys/class/infiniband", p.DevName, "ports", strconv.FormatUint(uint64(p.Port), 10))
		if ll, _ := os.ReadFile(filepath.Join(dir, "link_layer")); strings.TrimSpace(string(ll)) != "Ethernet" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "gids", "*"))
		for _, g := range files {
			if a, ok := gidAddr(g); ok {
				v.GIDs[a.String()] = p.DevName + "/" + strconv.FormatUint(uint64(p.Port), 10)
			}
		}
	}
	if mount, err := cgroup.Mount(); err == nil && t.Cgroup != "" {
		v.DeviceProgs = deviceProgs(filepath.Join(mount, t.Cgroup))
	}
	return v
}

// cmHolders are the rdma_cm IDs bound to port in the TCP port space, each
// process once per state and device; threads are folded into processes.
func cmHolders(ids []rdma.Resource, port uint16, comms *enrich.Enricher) []PortHolder {
	seen := map[PortHolder]bool{}
	var out []PortHolder
	for _, r := range ids {
		if r.PS != rdma.PSTCP || r.Src.Port() != port {
			continue
		}
		h := PortHolder{Stack: "rdma_cm", Comm: r.Owner.Comm, State: r.CMState.String(), Where: r.DevName + " " + r.Src.String()}
		if r.Owner.PID != 0 {
			h.PID = comms.TGID(r.Owner.PID)
			if h.PID == 0 {
				h.PID = r.Owner.PID
			}
			if h.Comm == "" { // netlink gives user owners by pid only
				h.Comm = comms.Comm(h.PID)
			}
		} else if r.Owner.KernName != "" {
			h.Comm = "[" + r.Owner.KernName + "]"
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// tcpHolders are the TCP sockets on local port port, with the process
// holding each (none for a kernel socket: iWARP's are).
func tcpHolders(socks []sockdiag.Socket, port uint16, comms *enrich.Enricher) []PortHolder {
	inodes := map[uint64]bool{}
	for _, s := range socks {
		if s.Proto == "tcp" && s.Src.Port() == port && s.Inode != 0 {
			inodes[s.Inode] = true
		}
	}
	owners := comms.SocketOwners(inodes)
	var out []PortHolder
	for _, s := range socks {
		if s.Proto != "tcp" || s.Src.Port() != port {
			continue
		}
		h := PortHolder{Stack: "tcp", State: s.State.String(), Where: s.Src.String()}
		if pid, ok := owners[s.Inode]; ok {
			h.PID, h.Comm = pid, comms.Comm(pid)
		}
		out = append(out, h)
	}
	return out
}

// gidAddr reads a GID file ("0000:0000:0000:0000:0000:ffff:0a63:0001") as
// the address it stands for; an empty slot reads as zeros.
func gidAddr(path string) (netip.Addr, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
	if err != nil || a.IsUnspecified() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// mrBytes is what pid's MRs hold registered, from the kernel's MR table
// (RES_PID is the creating thread: threads are folded into the process).
func mrBytes(pid int, comms *enrich.Enricher) uint64 {
	cl, err := nldev.Dial()
	if err != nil {
		return 0
	}
	defer cl.Close()
	devs, _ := cl.Devices()
	rs, _ := cl.Resources(rdma.ResMR, devs)
	var n uint64
	for _, r := range rs {
		tgid := comms.TGID(r.Owner.PID)
		if tgid == 0 {
			tgid = r.Owner.PID
		}
		if int(tgid) == pid {
			n += r.MRLen
		}
	}
	return n
}

// deviceProgs counts the device cgroup programs in effect on dir (-1:
// unknown, e.g. without CAP_SYS_ADMIN).
func deviceProgs(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return -1
	}
	defer f.Close()
	const queryEffective = 1 // BPF_F_QUERY_EFFECTIVE
	res, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: ebpf.AttachCGroupDevice, QueryFlags: queryEffective})
	if err != nil {
		return -1
	}
	return len(res.Programs)
}

// targetQPs lists the live QPs the QP settings check looks at: the
// target's (threads folded into their process), or QPN's.
func targetQPs(cl *nldev.Client, t Target, devs []rdma.Device, comms *enrich.Enricher) ([]rdma.Resource, error) {
	qps, err := cl.Resources(rdma.ResQP, devs)
	if err != nil {
		return nil, err
	}
	var out []rdma.Resource
	for _, q := range qps {
		if t.QPN != 0 && q.LQPN != t.QPN {
			continue
		}
		if !t.QPAnyOwner && q.Owner.PID != uint32(t.PID) && comms.TGID(q.Owner.PID) != uint32(t.PID) {
			continue
		}
		out = append(out, q)
	}
	return out, nil
}

// ReadQPTrace reads the recording t.QPTrace names into v.
func ReadQPTrace(t Target, v *View) error {
	if t.QPTrace == "" {
		return nil
	}
	f, err := os.Open(t.QPTrace)
	if err != nil {
		return err
	}
	defer f.Close()
	v.QPTrace = t.QPTrace
	v.QPSettings, err = ReadQPSettings(f, t.QPTrace)
	return err
}
