package ports

import (
	"strconv"
)

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
	return Task(r.Comm, r.PID)
}

// Task is "comm[pid]", or "" for no process.
func Task(comm string, pid uint32) string {
	if pid == 0 {
		return ""
	}
	return comm + "[" + strconv.FormatUint(uint64(pid), 10) + "]"
}
