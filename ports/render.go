package ports

import (
	"strconv"

	"github.com/rdmatrace/rdmatrace/formats"
)

// Object is a row with `rdma res cm_id`'s key names where they exist
// (src-addr, dst-addr, state, pid, comm, ifname for the RDMA device, port
// for its port, cm-idn, ps).
func Object(r *Row) formats.Object {
	o := formats.Object{
		{Key: "proto", Kind: formats.Str, Str: r.Proto},
		{Key: "stack", Kind: formats.Str, Str: r.Stack},
		{Key: "src-addr", Kind: formats.Str, Str: formats.IPRouteAddr(r.Src.Addr().String(), r.Src.Port())},
		{Key: "dst-addr", Kind: formats.Str, Str: formats.IPRouteAddr(r.Dst.Addr().String(), r.Dst.Port())},
		{Key: "state", Kind: formats.Str, Str: r.State},
	}
	switch {
	case r.Module != "":
		o = append(o, formats.Field{Key: "kern-name", Kind: formats.Str, Str: r.Module})
	case r.PID != 0:
		o = append(o, formats.Field{Key: "pid", Kind: formats.Num, Num: uint64(r.PID)})
		if r.Comm != "" {
			o = append(o, formats.Field{Key: "comm", Kind: formats.Str, Str: r.Comm})
		}
	}
	if r.Inode != 0 {
		o = append(o, formats.Field{Key: "inode", Kind: formats.Num, Num: r.Inode})
	}
	o = append(o, formats.Field{Key: "host-port", Kind: formats.Bool, Num: b2u(r.HostPort)})
	if r.CM {
		if r.Dev != "" {
			o = append(o, formats.Field{Key: "ifname", Kind: formats.Str, Str: r.Dev},
				formats.Field{Key: "port", Kind: formats.Num, Num: uint64(r.DevPort)})
		}
		o = append(o, formats.Field{Key: "cm-idn", Kind: formats.Num, Num: uint64(r.CMIDN)},
			formats.Field{Key: "ps", Kind: formats.Str, Str: r.PS.String()})
	}
	return o
}

// ConflictObject is a conflict as one flat record: the port, whether the
// kernel refuses one side, and both claimants' keys prefixed "rdma-" and
// "host-".
func ConflictObject(c *Conflict) formats.Object {
	o := formats.Object{
		{Key: "port", Kind: formats.Num, Num: uint64(c.RDMA.Src.Port())},
		{Key: "conflict", Kind: formats.Bool, Num: b2u(c.Real)},
		{Key: "why", Kind: formats.Str, Str: c.Why()},
	}
	for _, side := range []struct {
		prefix string
		row    *Row
	}{{"rdma-", &c.RDMA}, {"host-", &c.Host}} {
		for _, f := range Object(side.row) {
			if f.Key != "proto" && f.Key != "host-port" {
				f.Key = side.prefix + f.Key
				o = append(o, f)
			}
		}
	}
	return o
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Why says in words what the conflict means.
func (c *Conflict) Why() string {
	if c.Real {
		if c.RDMA.Inode != 0 || c.RDMA.State == "LISTEN" || c.RDMA.State == "CONNECT" {
			return "iWARP and a host TCP socket on one port: whichever binds second gets EADDRINUSE"
		}
		return "the rdma_cm ID has the port in rdma_cm's space only: its rdma_listen or rdma_connect on iWARP will fail with EADDRINUSE"
	}
	return "no conflict: " + c.RDMA.Dev + " is not iWARP, its rdma_cm ports are not the host's (it would be on iWARP)"
}

// Owner names who holds a row: "rping[172]", "[smc]", or "" for nobody.
func Owner(r *Row) string {
	switch {
	case r.Module != "":
		return "[" + r.Module + "]"
	}
	return task(r.Comm, r.PID)
}

// task is "comm[pid]", or "" for no process.
func task(comm string, pid uint32) string {
	if pid == 0 {
		return ""
	}
	return comm + "[" + strconv.FormatUint(uint64(pid), 10) + "]"
}

// where is the RDMA side of a row: "siw0/1 cm-idn 2", and for an ID that
// takes no host port, that it does not.
func where(r *Row) string {
	if !r.CM {
		return ""
	}
	s := "cm-idn " + strconv.FormatUint(uint64(r.CMIDN), 10)
	if r.Dev != "" {
		s = r.Dev + "/" + strconv.FormatUint(uint64(r.DevPort), 10) + " " + s
	}
	if !r.HostPort {
		s += " (not a host port)"
	}
	return s
}

// Table lays rows out as ss does, with the stack and the RDMA side.
func Table(rows []Row) *formats.Table {
	t := formats.NewTable("PROTO", "STATE", "LOCAL", "PEER", "STACK", "PROCESS", "RDMA")
	for i := range rows {
		r := &rows[i]
		t.Append(r.Proto, r.State, r.Src.String(), r.Dst.String(), r.Stack, Owner(r), where(r))
	}
	return t
}

// ConflictTable is one line per conflict.
func ConflictTable(cs []Conflict) *formats.Table {
	t := formats.NewTable("PORT", "CONFLICT", "RDMA_CM", "HOLDER", "HOST SOCKET", "HOLDER", "WHY")
	for i := range cs {
		c := &cs[i]
		verdict := "no"
		if c.Real {
			verdict = "yes"
		}
		t.Append(strconv.Itoa(int(c.RDMA.Src.Port())), verdict,
			c.RDMA.State+" "+c.RDMA.Src.String()+" "+where(&c.RDMA), Owner(&c.RDMA),
			c.Host.State+" "+c.Host.Src.String(), Owner(&c.Host), c.Why())
	}
	return t
}
