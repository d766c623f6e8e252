package ports

import "net/netip"

// Select is ss's choice of rows (-t, -u, -l), read for RDMA: rdma_cm IDs
// of the TCP port space (iWARP's, and RoCE's and InfiniBand's) are TCP
// rows, those of the UDP port space UDP rows; the IB and IPoIB port spaces
// are neither. The zero Select takes every row: unlike ss, ports shows
// listening and non-listening rows unless told otherwise.
type Select struct {
	TCP, UDP  bool // -t, -u: only these protocols (both or neither: all)
	Listening bool // -l: only listening rows
}

// Match says whether r is one of the rows s selects.
func (s Select) Match(r *Row) bool {
	if s.TCP || s.UDP {
		if !(s.TCP && r.Proto == "tcp" || s.UDP && r.Proto == "udp") {
			return false
		}
	}
	return !s.Listening || Listening(r)
}

// Listening says whether r waits for peers, as ss -l counts them: a
// socket in LISTEN, or unconnected (UNCONN: a bound UDP socket), and an
// rdma_cm ID in LISTEN (rdma_listen, for connections or UD's SIDR).
func Listening(r *Row) bool { return r.State == "LISTEN" || r.State == "UNCONN" }

// Query is what `ports` lists: the rows Select keeps whose local or
// remote port is Port and address Addr, of process PID and RDMA device
// Dev, each when set.
type Query struct {
	Select
	Port uint16
	Addr netip.Addr
	PID  uint32
	Dev  string
}

// Match says whether r is one of the rows q lists.
func (q Query) Match(r *Row) bool {
	switch {
	case !q.Select.Match(r):
		return false
	case q.Port != 0 && r.Src.Port() != q.Port && r.Dst.Port() != q.Port:
		return false
	case q.Addr.IsValid() && r.Src.Addr() != q.Addr.Unmap() && r.Dst.Addr() != q.Addr.Unmap():
		return false
	case q.PID != 0 && r.PID != q.PID:
		return false
	}
	return q.Dev == "" || r.Dev == q.Dev
}

// Rows are the rows q keeps.
func (q Query) Rows(rows []Row) []Row {
	var keep []Row
	for i := range rows {
		if q.Match(&rows[i]) {
			keep = append(keep, rows[i])
		}
	}
	return keep
}

// Conflicts are the conflicts among all rows either side of which q
// keeps: --pid names one side of a conflict, and the other side is what
// the user is after.
func (q Query) Conflicts(rows []Row) []Conflict {
	var cs []Conflict
	for _, x := range Conflicts(rows) {
		if q.Match(&x.RDMA) || q.Match(&x.Host) {
			cs = append(cs, x)
		}
	}
	return cs
}
