// Package doctor makes the checks that decide whether a process can use
// RDMA where it runs (its network namespace, its device files, its
// limits), each with what to do when it fails: the classic causes of "RDMA
// does not work in my container".
package doctor

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Status is a check's outcome.
type Status int

const (
	Pass Status = iota
	Warn        // works, but something is close to failing or could not be judged
	Fail
	Skip // not made: what it looks at is missing, and another check says so
)

func (s Status) String() string { return [...]string{"ok", "warn", "FAIL", "skip"}[s] }

// Finding is one check's outcome, with the fix when it did not pass.
type Finding struct {
	Check  string
	Status Status
	Detail string
	Fix    string
}

// Target is the process the checks are about.
type Target struct {
	PID    int
	Comm   string
	UID    uint32
	GIDs   []uint32 // effective gid first, then the supplementary groups
	IPCLck bool     // CAP_IPC_LOCK: registrations are not bound by RLIMIT_MEMLOCK
	// Memlock is the soft RLIMIT_MEMLOCK in bytes (^0: unlimited).
	Memlock uint64
	// Root is where its files are seen (/proc/PID/root), NetNS a file of
	// its network namespace (/proc/PID/ns/net), Cgroup its cgroup v2 path.
	Root, NetNS, Cgroup string
	// Port is the rdma_cm TCP port it uses or will use (rping -p,
	// perftest -p); 0: not checked.
	Port uint16
	// QPN is the one QP whose settings are checked (0: all of its QPs);
	// QPAnyOwner checks it whoever owns it. QPTrace is a recording of
	// `rdmatrace trace -w` with the modifies that set them.
	QPN        uint32
	QPAnyOwner bool
	QPTrace    string
}

// PortHolder is something that holds the target's port: an rdma_cm ID in
// the TCP port space, or a TCP socket of its network namespace.
type PortHolder struct {
	Stack string // "rdma_cm" or "tcp"
	PID   uint32 // the process (0: none, as for a kernel socket)
	Comm  string // the process's name, or [module] for a kernel user
	Where string // rdma_cm: the device and address; tcp: the address
	State string // LISTEN, CONNECT, ESTAB, ...
}

func (h PortHolder) owner() string {
	switch {
	case h.PID != 0:
		return fmt.Sprintf("%s[%d]", h.Comm, h.PID)
	case h.Comm != "":
		return h.Comm
	}
	return "no process (a kernel socket)"
}

// ReadTarget reads process pid from /proc under procRoot ("": the host's
// /proc).
func ReadTarget(procRoot string, pid int) (Target, error) {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return Target{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return Target{}, fmt.Errorf("process %d: %w", pid, err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return Target{}, fmt.Errorf("process %d: %w", pid, err)
	}
	lim, err := p.NewLimits()
	if err != nil {
		return Target{}, fmt.Errorf("process %d: %w", pid, err)
	}
	t := Target{
		PID: pid, Comm: st.Name, UID: uint32(st.UIDs[1]), GIDs: []uint32{uint32(st.GIDs[1])},
		IPCLck:  st.CapEff&(1<<14) != 0, // CAP_IPC_LOCK is 14
		Memlock: lim.LockedMemory,
		Root:    filepath.Join(procRoot, strconv.Itoa(pid), "root"),
		NetNS:   filepath.Join(procRoot, strconv.Itoa(pid), "ns", "net"),
	}
	t.GIDs = append(t.GIDs, groups(filepath.Join(procRoot, strconv.Itoa(pid), "status"))...)
	if cgs, err := p.Cgroups(); err == nil {
		for _, cg := range cgs {
			if cg.HierarchyID == 0 {
				t.Cgroup = cg.Path
			}
		}
	}
	return t, nil
}

// As is t as a process that changed its credentials to uid and gids
// (effective gid first) would be, where t runs: a program that rdmatrace
// started as another user and that has ended. Leaving uid 0 drops every
// capability, CAP_IPC_LOCK with them; the limits are inherited as they are.
func (t Target) As(uid uint32, gids []uint32) Target {
	t.IPCLck = t.IPCLck && uid == 0
	t.UID = uid
	t.GIDs = append([]uint32(nil), gids...)
	return t
}

// groups reads the supplementary groups ("Groups:" in /proc/PID/status;
// procfs does not parse them).
func groups(statusPath string) []uint32 {
	b, err := os.ReadFile(statusPath)
	if err != nil {
		return nil
	}
	var out []uint32
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if g, err := strconv.ParseUint(f, 10, 32); err == nil {
				out = append(out, uint32(g))
			}
		}
	}
	return out
}

// View is what the checks learn of the RDMA stack from where the target
// runs; the command fills it from netlink (in the target's network
// namespace), sysfs and the target's cgroup.
type View struct {
	Devices []rdma.Device // visible in its network namespace
	Ports   []rdma.Port
	Mode    string            // the netns mode: shared or exclusive
	MRBytes uint64            // what its MRs hold registered now
	Addrs   []netip.Addr      // its network namespace's addresses
	GIDs    map[string]string // a GID's address -> "DEV/PORT", of every RoCE port
	// Uverbs maps a device to its uverbs char device name (uverbs0).
	Uverbs map[string]string
	// DeviceProgs is how many device cgroup programs apply to its cgroup
	// (-1: unknown).
	DeviceProgs int
	Modules     map[string]bool // loaded modules of interest
	// PortHolders hold the target's Port; IWarp names the visible iWARP
	// devices, which share the host's TCP port space (RoCE and IB do not).
	PortHolders []PortHolder
	IWarp       []string
	// PortErrs are what kept the port's holders from being read (the
	// rdma_cm IDs, the sockets): the check then cannot say the port is free.
	PortErrs []error
	// QPs are its live QPs (netlink), QPSettings what Target.QPTrace saw
	// set on them; QPErr what kept the QPs from being listed.
	QPs        []rdma.Resource
	QPSettings QPSettings
	QPTrace    string
	QPErr      error
}

// Check makes every check.
func Check(t Target, v View) []Finding {
	fs := []Finding{
		modules(v), devices(v), ports(v), deviceFiles(t, v), deviceCgroup(t, v), memlock(t, v), gids(t, v),
	}
	if t.Port != 0 {
		fs = append(fs, cmPort(t, v))
	}
	if len(v.QPs) > 0 || t.QPN != 0 || t.QPTrace != "" || v.QPErr != nil {
		fs = append(fs, qpSettings(t, v))
	}
	return fs
}

// cmPort: rdma_listen and rdma_bind_addr fail with EADDRINUSE when the
// port is taken in rdma_cm's TCP port space, and, on iWARP, in the host's
// TCP port space too (siw and iWARP NICs listen with kernel TCP sockets).
func cmPort(t Target, v View) Finding {
	port := strconv.FormatUint(uint64(t.Port), 10)
	var own, others, tcp []string
	cmHeld := false
	for _, h := range v.PortHolders {
		cmHeld = cmHeld || h.Stack == "rdma_cm"
	}
	for _, h := range v.PortHolders {
		what := fmt.Sprintf("%s (%s %s)", h.owner(), h.State, h.Where)
		switch {
		case h.Stack == "tcp" && h.PID == 0 && cmHeld:
			// An iWARP ID's own kernel socket: the rdma_cm holder says whose.
		case h.Stack == "tcp":
			tcp = append(tcp, what)
		case h.PID != 0 && int(h.PID) == t.PID:
			own = append(own, h.State+" "+h.Where)
		default:
			others = append(others, what)
		}
	}
	iwarp := strings.Join(v.IWarp, ", ")
	var unread []string
	for _, err := range v.PortErrs {
		unread = append(unread, err.Error())
	}
	switch {
	case len(others) > 0:
		return Finding{"cm-port", Fail, "port " + port + " of rdma_cm's TCP port space is held by " + strings.Join(others, ", ") + ": rdma_listen or rdma_bind_addr on it fails with EADDRINUSE",
			"give it another port (rping -p, perftest -p), or stop what holds it"}
	case len(tcp) > 0 && iwarp != "":
		return Finding{"cm-port", Fail, "TCP port " + port + " is held by " + strings.Join(tcp, ", ") + " in its network namespace, and iWARP (" + iwarp + ") shares the host's TCP port space: rdma_listen on it fails with EADDRINUSE",
			"give it another port, or stop the TCP user of port " + port}
	}
	if len(unread) > 0 {
		return Finding{"cm-port", Warn, "cannot tell who holds port " + port + ": " + strings.Join(unread, "; "),
			"as the error says: the rdma_cm IDs come from RDMA netlink (modprobe rdma_ucm), the sockets from the socket diagnostics (modprobe inet_diag tcp_diag)"}
	}
	detail := "port " + port + " is free in rdma_cm's TCP port space"
	if len(own) > 0 {
		detail = "port " + port + " of rdma_cm's TCP port space is its own (" + strings.Join(own, ", ") + ")"
	}
	switch {
	case iwarp != "":
		detail += " and in the host's TCP port space, which iWARP (" + iwarp + ") shares"
	case len(tcp) > 0:
		detail += "; TCP port " + port + " is held by " + strings.Join(tcp, ", ") + ", which does not matter: RoCE and IB keep rdma_cm's ports apart from the host's"
	}
	return Finding{Check: "cm-port", Detail: detail}
}

func modules(v View) Finding {
	var missing []string
	for _, m := range []string{"ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm"} {
		if !v.Modules[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return Finding{"modules", Fail, "not loaded: " + strings.Join(missing, ", "), "modprobe -a " + strings.Join(missing, " ")}
	}
	return Finding{Check: "modules", Detail: "ib_core, ib_uverbs, rdma_cm, rdma_ucm loaded"}
}

func devices(v View) Finding {
	if len(v.Devices) == 0 {
		fix := "create or load a device (rdma link add rxe0 type rxe netdev IF for soft-RoCE)"
		if v.Mode == "exclusive" {
			fix = "the netns mode is exclusive: move a device into its namespace (rdma dev set DEV netns NS), or rdma system set netns shared"
		}
		return Finding{"devices", Fail, "no RDMA device is visible in its network namespace", fix}
	}
	var names []string
	for _, d := range v.Devices {
		names = append(names, d.Name)
	}
	return Finding{Check: "devices", Detail: "visible in its network namespace: " + strings.Join(names, ", ")}
}

func ports(v View) Finding {
	var active, down []string
	for _, p := range v.Ports {
		name := p.DevName + "/" + strconv.FormatUint(uint64(p.Port), 10)
		if p.State.String() == "ACTIVE" {
			active = append(active, name)
		} else {
			down = append(down, name+" "+p.State.String())
		}
	}
	switch {
	case len(active) > 0:
		f := Finding{Check: "ports", Detail: "ACTIVE: " + strings.Join(active, ", ")}
		if len(down) > 0 {
			f.Detail += "; not active: " + strings.Join(down, ", ")
		}
		return f
	case len(down) > 0:
		return Finding{"ports", Fail, "no port is ACTIVE: " + strings.Join(down, ", "),
			"bring the port's net device up (ip link set IF up) and check its link"}
	}
	return Finding{Check: "ports", Status: Skip, Detail: "no device"}
}

// deviceFiles checks /dev/infiniband as the target sees it: rdma_cm and
// the uverbs file of each visible device, read-write for its uid or one
// of its groups.
func deviceFiles(t Target, v View) Finding {
	want := []string{"rdma_cm"}
	names := make([]string, 0, len(v.Uverbs))
	for _, u := range v.Uverbs {
		names = append(names, u)
	}
	sort.Strings(names)
	want = append(want, names...)
	var bad, fixes []string
	for _, name := range want {
		path := filepath.Join(t.Root, "dev", "infiniband", name)
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			bad = append(bad, "/dev/infiniband/"+name+" missing")
			fixes = append(fixes, "give it /dev/infiniband/"+name+" (a container needs the device mounted: --device /dev/infiniband/"+name+")")
			continue
		}
		if !canReadWrite(t, st) {
			bad = append(bad, fmt.Sprintf("/dev/infiniband/%s mode %04o uid %d gid %d: no read-write for uid %d", name, st.Mode&0o7777, st.Uid, st.Gid, t.UID))
			fixes = append(fixes, fmt.Sprintf("chmod o+rw /dev/infiniband/%s, or add uid %d to group %d (a udev rule makes it last)", name, t.UID, st.Gid))
		}
	}
	if len(bad) > 0 {
		return Finding{"device-files", Fail, strings.Join(bad, "; "), strings.Join(fixes, "; ")}
	}
	return Finding{Check: "device-files", Detail: "read-write for it: /dev/infiniband/" + strings.Join(want, ", /dev/infiniband/")}
}

func canReadWrite(t Target, st syscall.Stat_t) bool {
	if t.UID == 0 {
		return true // CAP_DAC_OVERRIDE
	}
	mode := st.Mode
	switch {
	case st.Uid == t.UID:
		return mode&0o600 == 0o600
	case containsGID(t.GIDs, st.Gid):
		return mode&0o060 == 0o060
	}
	return mode&0o006 == 0o006
}

func containsGID(gs []uint32, g uint32) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// deviceCgroup: a cgroup v2 device controller is a BPF program rdmatrace
// cannot evaluate; say that one applies and what it must allow.
func deviceCgroup(t Target, v View) Finding {
	switch {
	case v.DeviceProgs < 0:
		return Finding{"device-cgroup", Warn, "cannot tell whether a device cgroup program applies to " + t.Cgroup + " (needs CAP_SYS_ADMIN)", ""}
	case v.DeviceProgs > 0:
		return Finding{"device-cgroup", Warn, fmt.Sprintf("%d device cgroup programs apply to %s: rdmatrace cannot read what they allow", v.DeviceProgs, t.Cgroup),
			"if opening /dev/infiniband fails with EPERM, allow char devices 231:* (uverbs) and 10:* (rdma_cm) in the container's device rules"}
	}
	return Finding{Check: "device-cgroup", Detail: "no device cgroup program applies to " + t.Cgroup}
}

// minMemlock is what one small registration needs at least (a few pages
// and the queues' buffers); `ulimit -l 64` is below it.
const minMemlock = 1 << 20

func memlock(t Target, v View) Finding {
	switch {
	case t.IPCLck || t.Memlock == ^uint64(0):
		return Finding{Check: "memlock", Detail: "registrations are not limited (unlimited RLIMIT_MEMLOCK or CAP_IPC_LOCK)"}
	case t.Memlock < minMemlock || t.Memlock < v.MRBytes:
		return Finding{"memlock", Fail, fmt.Sprintf("RLIMIT_MEMLOCK is %s (its MRs hold %s): registering memory fails with ENOMEM", bytesText(t.Memlock), bytesText(v.MRBytes)),
			"ulimit -l unlimited before starting it (LimitMEMLOCK=infinity for a systemd unit, --ulimit memlock=-1 for a container)"}
	case v.MRBytes > t.Memlock/10*9:
		return Finding{"memlock", Warn, fmt.Sprintf("its MRs hold %s of its %s RLIMIT_MEMLOCK", bytesText(v.MRBytes), bytesText(t.Memlock)), "ulimit -l unlimited"}
	}
	return Finding{Check: "memlock", Detail: fmt.Sprintf("RLIMIT_MEMLOCK %s, its MRs hold %s", bytesText(t.Memlock), bytesText(v.MRBytes))}
}

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', -1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', -1, 64) + " KiB"
	}
	return strconv.FormatUint(n, 10) + " B"
}

// gids: RoCE addresses connections by GID; an address of its namespace
// without a GID cannot be used by rdma_cm.
func gids(t Target, v View) Finding {
	if len(v.GIDs) == 0 {
		return Finding{Check: "gid", Detail: "no RoCE port: GIDs are not derived from addresses"}
	}
	var with, without []string
	for _, a := range v.Addrs {
		if a.IsLoopback() || a.IsLinkLocalUnicast() {
			continue
		}
		if port, ok := v.GIDs[a.Unmap().String()]; ok {
			with = append(with, a.String()+" on "+port)
		} else {
			without = append(without, a.String())
		}
	}
	if len(with) == 0 {
		detail := "its network namespace has no address but loopback and link-local ones"
		if len(without) > 0 {
			detail = "no RoCE GID for its addresses " + strings.Join(without, ", ")
		}
		return Finding{"gid", Fail, detail,
			"give the RoCE device's net device an address in its namespace (or attach a RoCE device to the interface it uses: rdma link add rxe0 type rxe netdev IF)"}
	}
	return Finding{Check: "gid", Detail: "RoCE GIDs for " + strings.Join(with, ", ")}
}
