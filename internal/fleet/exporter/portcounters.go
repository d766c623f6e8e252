package exporter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// portFamily is a named family of port counters: what users graph and
// alert on, whatever each driver calls it. Its value for a port is the
// first source the port has, so nothing is counted twice:
//
//   - hw: the driver's hardware counters (netlink's `rdma statistic`, the
//     same values as sysfs ports/N/hw_counters). Each alternative is a
//     set of names summed (irdma counts IPv4 and IPv6 apart); the first
//     alternative the port has any name of is taken, so that a driver
//     with two names for overlapping counts (bnxt_re's rx_pkts and
//     rx_roce_good_pkts) is read once.
//   - pma: the InfiniBand PMA counter of sysfs ports/N/counters (mlx5 and
//     the other drivers that answer MADs), times scale (port_xmit_data
//     and port_rcv_data count 4-byte words).
//
// docs/exporter.md has the table by driver; keep the two in step.
type portFamily struct {
	name, help string
	hw         [][]string
	pma        string
	scale      uint64
}

// portFamilies are the named families. The names are the kernels'
// (drivers/infiniband/sw/rxe/rxe_hw_counters.c, hw/mlx5/counters.c,
// hw/irdma/verbs.c, hw/bnxt_re/hw_counters.c, hw/efa/efa_verbs.c; siw
// has no hardware counters).
var portFamilies = []portFamily{
	{name: "rdma_port_transmit_bytes_total", help: "Bytes the port sent (RDMA traffic): mlx5's port_xmit_data x 4, bnxt_re's and efa's tx_bytes, irdma's ip4OutOctets + ip6OutOctets. rxe and siw count none.",
		hw: [][]string{{"tx_bytes"}, {"ip4OutOctets", "ip6OutOctets"}}, pma: "port_xmit_data", scale: 4},
	{name: "rdma_port_receive_bytes_total", help: "Bytes the port received (RDMA traffic): mlx5's port_rcv_data x 4, bnxt_re's and efa's rx_bytes, irdma's ip4InOctets + ip6InOctets. rxe and siw count none.",
		hw: [][]string{{"rx_bytes"}, {"ip4InOctets", "ip6InOctets"}}, pma: "port_rcv_data", scale: 4},
	{name: "rdma_port_transmit_packets_total", help: "Packets the port sent: rxe's sent_pkts, bnxt_re's and efa's tx_pkts, irdma's ip4OutPkts + ip6OutPkts, mlx5's port_xmit_packets.",
		hw: [][]string{{"sent_pkts"}, {"tx_pkts"}, {"ip4OutPkts", "ip6OutPkts"}}, pma: "port_xmit_packets", scale: 1},
	{name: "rdma_port_receive_packets_total", help: "Packets the port received: rxe's rcvd_pkts, bnxt_re's and efa's rx_pkts, irdma's ip4InPkts + ip6InPkts, mlx5's port_rcv_packets.",
		hw: [][]string{{"rcvd_pkts"}, {"rx_pkts"}, {"ip4InPkts", "ip6InPkts"}}, pma: "port_rcv_packets", scale: 1},
	{name: "rdma_port_transmit_wait_total", help: "Ticks the port had data to send and could not send it (mlx5's port_xmit_wait): on RoCE, mostly pause (PFC) from the switch; the pause frames themselves are the netdev's counters.",
		pma: "port_xmit_wait", scale: 1},
	{name: "rdma_port_ecn_marked_packets_total", help: "RoCE packets that arrived ECN-marked, congestion seen on the way (mlx5's np_ecn_marked_roce_packets, irdma's RxECNMrkd).",
		hw: [][]string{{"np_ecn_marked_roce_packets"}, {"RxECNMrkd"}}},
	{name: "rdma_port_cnp_sent_total", help: "Congestion notification packets the port sent back to senders (mlx5's np_cnp_sent, irdma's cnpSent).",
		hw: [][]string{{"np_cnp_sent"}, {"cnpSent"}}},
	{name: "rdma_port_cnp_handled_total", help: "Congestion notification packets the port received and slowed down for (mlx5's rp_cnp_handled, irdma's cnpHandled).",
		hw: [][]string{{"rp_cnp_handled"}, {"cnpHandled"}}},
	{name: "rdma_port_out_of_sequence_total", help: "Packets received out of sequence, lost or reordered on the way (mlx5's out_of_sequence, rxe's out_of_seq_request, bnxt_re's oos_drop_count).",
		hw: [][]string{{"out_of_sequence"}, {"out_of_seq_request"}, {"oos_drop_count"}}},
	{name: "rdma_port_local_ack_timeout_total", help: "Retransmissions after no ACK came in time (mlx5's local_ack_timeout_err, bnxt_re's to_retransmits).",
		hw: [][]string{{"local_ack_timeout_err"}, {"to_retransmits"}}},
	{name: "rdma_port_rnr_naks_received_total", help: "Receiver-not-ready NAKs received: the peer had no receive posted (mlx5's rnr_nak_retry_err, rxe's rcvd_rnr_err, bnxt_re's rnr_naks_rcvd).",
		hw: [][]string{{"rnr_nak_retry_err"}, {"rcvd_rnr_err"}, {"rnr_naks_rcvd"}}},
	{name: "rdma_port_implied_naks_total", help: "Implied NAKs: a response that showed earlier ones lost (mlx5's implied_nak_seq_err).",
		hw: [][]string{{"implied_nak_seq_err"}}},
	{name: "rdma_port_sequence_error_naks_received_total", help: "PSN sequence error NAKs received: the peer saw a packet missing (mlx5's packet_seq_err, rxe's rcvd_seq_err, bnxt_re's seq_err_naks_rcvd).",
		hw: [][]string{{"packet_seq_err"}, {"rcvd_seq_err"}, {"seq_err_naks_rcvd"}}},
}

// PartSysfsCounters is the read of sysfs port counters, a part of the
// scrape with its rdmatrace_scrape_collector_success series.
const PartSysfsCounters = "sysfs_port_counters"

// defaultSysfs is where the ports' counters are read.
const defaultSysfs = "/sys/class/infiniband"

func newPortFamilyDescs() []*prometheus.Desc {
	ds := make([]*prometheus.Desc, len(portFamilies))
	for i, f := range portFamilies {
		ds[i] = prometheus.NewDesc(f.name, f.help, []string{"device", "port"}, nil)
	}
	return ds
}

// portKey is a port by device name and number.
type portKey struct {
	dev  string
	port uint32
}

// namedPortCounters sends each named family a port has: from the
// hardware counters netlink gave (or sysfs hw_counters for a port netlink
// gave none of), else from sysfs counters. It reads sysfs under root, a
// few small files a port, and returns the errors it met other than a
// file the port does not have.
func namedPortCounters(ch chan<- prometheus.Metric, descs []*prometheus.Desc, root string, ports []rdma.Port, stats []rdma.PortStats) error {
	hw := map[portKey]map[string]uint64{}
	for _, st := range stats {
		m := map[string]uint64{}
		for _, c := range st.Counters {
			m[c.Name] = c.Value
		}
		hw[portKey{st.DevName, st.Port}] = m
	}
	keys := make([]portKey, 0, len(ports))
	seen := map[portKey]bool{}
	for _, p := range ports {
		k := portKey{p.DevName, p.Port}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, st := range stats { // a port with counters but no port answer
		if k := (portKey{st.DevName, st.Port}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var errs []error
	for _, k := range keys {
		if k.dev == "" || strings.ContainsAny(k.dev, "/\x00") || k.dev == "." || k.dev == ".." {
			continue
		}
		dir := filepath.Join(root, k.dev, "ports", strconv.FormatUint(uint64(k.port), 10))
		m, ok := hw[k]
		if !ok {
			var err error
			if m, err = readHWCounters(filepath.Join(dir, "hw_counters")); err != nil {
				errs = append(errs, err)
			}
		}
		port := strconv.FormatUint(uint64(k.port), 10)
		for i, f := range portFamilies {
			v, ok := hwValue(m, f.hw)
			if !ok && f.pma != "" {
				var err error
				if v, ok, err = readCounter(filepath.Join(dir, "counters", f.pma)); err != nil {
					errs = append(errs, err)
				}
				v *= f.scale
			}
			if ok {
				ch <- prometheus.MustNewConstMetric(descs[i], prometheus.CounterValue, float64(v), k.dev, port)
			}
		}
	}
	return errors.Join(errs...)
}

// hwValue is the first alternative of names the counters have, summed.
func hwValue(m map[string]uint64, alts [][]string) (uint64, bool) {
	for _, names := range alts {
		var sum uint64
		found := false
		for _, n := range names {
			if v, ok := m[n]; ok {
				sum, found = sum+v, true
			}
		}
		if found {
			return sum, true
		}
	}
	return 0, false
}

// hwNames are the hardware counters' names some family reads.
var hwNames = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range portFamilies {
		for _, alt := range f.hw {
			for _, n := range alt {
				m[n] = true
			}
		}
	}
	return m
}()

// readHWCounters reads the hw_counters a family needs from dir; none
// when the port has no such directory.
func readHWCounters(dir string) (map[string]uint64, error) {
	m := map[string]uint64{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return m, nil
		}
		return m, err
	}
	var errs []error
	for _, e := range ents {
		if !hwNames[e.Name()] {
			continue
		}
		v, ok, err := readCounter(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			m[e.Name()] = v
		}
	}
	return m, errors.Join(errs...)
}

// readCounter reads one sysfs counter file: ok false when the port has
// none (no such file, or "N/A (no PMA)": the device answers no PMA
// queries).
func readCounter(path string) (uint64, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	var buf [64]byte // a counter is at most 20 digits; sysfs gives one line
	n, err := f.Read(buf[:])
	if err != nil && n == 0 {
		return 0, false, fmt.Errorf("%s: %w", path, err)
	}
	s := strings.TrimSpace(string(buf[:n]))
	if strings.HasPrefix(s, "N/A") {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is not a counter (expected a decimal number)", path, s)
	}
	return v, true, nil
}
