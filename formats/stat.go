package formats

import (
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PortStatsObject lays out a port's counters with `rdma -j statistic
// show`'s keys: ifname, port, then each counter by its own name.
func PortStatsObject(s *rdma.PortStats) Object {
	o := Object{}.str("ifname", s.DevName).num("port", uint64(s.Port))
	for _, c := range s.Counters {
		o = o.num(c.Name, c.Value)
	}
	return o
}

// PortStatsTable is one row per counter: ports have tens of them (a
// hardware NIC over a hundred), too many for columns.
func PortStatsTable(ss []rdma.PortStats) *Table {
	t := NewTable("LINK", "COUNTER", "VALUE")
	for _, s := range ss {
		link := s.DevName + "/" + strconv.FormatUint(uint64(s.Port), 10)
		for _, c := range s.Counters {
			t.Append(link, c.Name, strconv.FormatUint(c.Value, 10))
		}
	}
	return t
}

// QPCounterModeObject is `rdma -j statistic qp mode`'s: "mode" is
// "qp auto off", or "qp auto" and its criteria and "on".
func QPCounterModeObject(m *rdma.QPCounterMode) Object {
	mode := "qp auto off"
	if m.Auto {
		mode = "qp auto"
		sep := " "
		for _, c := range []struct {
			on   bool
			name string
		}{{m.ByType, "type"}, {m.ByPID, "pid"}} {
			if c.on {
				mode += sep + c.name
				sep = ","
			}
		}
		mode += " on"
	}
	// print_link: ifindex, ifname, port.
	return Object{}.num("ifindex", uint64(m.DevIndex)).str("ifname", m.DevName).num("port", uint64(m.Port)).str("mode", mode)
}

// QPCounterObject is `rdma -j statistic qp show`'s: the counter, its QP
// type and owner, its counters by name, and its QPs.
func QPCounterObject(c *rdma.QPCounter) Object {
	o := Object{}.num("ifindex", uint64(c.DevIndex)).str("ifname", c.DevName).num("port", uint64(c.Port)).num("cntn", uint64(c.ID))
	if c.HasType {
		o = o.str("qp-type", c.QPType.String())
	}
	if c.Owner.PID != 0 {
		o = o.num("pid", uint64(c.Owner.PID))
	}
	switch {
	case c.Owner.KernName != "":
		o = o.str("comm", c.Owner.KernName)
	case c.Owner.Comm != "":
		o = o.str("comm", c.Owner.Comm)
	}
	for _, h := range c.Counters {
		o = o.num(h.Name, h.Value)
	}
	qps := make([]string, len(c.LQPNs))
	for i, n := range c.LQPNs {
		qps[i] = strconv.FormatUint(uint64(n), 10)
	}
	return append(o, Field{Key: rdma.KeyLQPN.Name, Kind: NumList, List: qps})
}
