package ports

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
