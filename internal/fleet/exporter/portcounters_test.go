package exporter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fixtureSysfs is a /sys/class/infiniband of fixture files: mlx5_0 with
// its PMA counters (bytes in 4-byte words), mlx5_1 with hw_counters and
// a PMA that answers "N/A (no PMA)", bad0 with a counter that is no
// number, rxe0 with no counters at all (as rxe has).
const fixtureSysfs = "../../../testdata/exporter/sysfs"

// scrapeText is what a scrape of x serves, in the text format.
func scrapeText(t *testing.T, x *Exporter) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(gatherer(x, reg))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := gatherer(x, reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

// Each driver's counters, under its own names, land in the same named
// families: mlx5's bytes from sysfs counters (x4), irdma's IPv4 and IPv6
// summed, bnxt_re's packets once though it has two names for them, rxe's
// packets and NAKs; the raw family keeps every counter netlink gave.
func TestNamedPortFamiliesFromEachDriversCounters(t *testing.T) {
	port := func(dev string) rdma.Port { return rdma.Port{DevName: dev, Port: 1, State: rdma.PortState(4)} }
	stats := func(dev string, kv ...any) rdma.PortStats {
		st := rdma.PortStats{DevName: dev, Port: 1}
		for i := 0; i < len(kv); i += 2 {
			st.Counters = append(st.Counters, rdma.Counter{Name: kv[i].(string), Value: uint64(kv[i+1].(int))})
		}
		return st
	}
	s := rdma.NodeState{
		Ports: []rdma.Port{port("mlx5_0"), port("mlx5_1"), port("rocep1s0"), port("bnxt_re0"), port("rxe0"), port("efa_0"), port("siw0")},
		Stats: []rdma.PortStats{
			stats("mlx5_0", "np_cnp_sent", 11, "rp_cnp_handled", 12, "np_ecn_marked_roce_packets", 13, "out_of_sequence", 14,
				"local_ack_timeout_err", 15, "rnr_nak_retry_err", 16, "implied_nak_seq_err", 17, "packet_seq_err", 18, "rx_write_requests", 99),
			// mlx5_1: netlink gave no counters: sysfs hw_counters are read.
			stats("rocep1s0", "ip4OutOctets", 100, "ip6OutOctets", 50, "ip4InOctets", 7, "ip4OutPkts", 1, "ip6OutPkts", 2,
				"ip4InPkts", 3, "ip6InPkts", 4, "cnpSent", 2, "cnpHandled", 3, "RxECNMrkd", 1),
			stats("bnxt_re0", "tx_bytes", 500, "rx_bytes", 400, "tx_pkts", 5, "rx_pkts", 10, "rx_roce_good_pkts", 10,
				"oos_drop_count", 1, "to_retransmits", 2, "rnr_naks_rcvd", 3, "seq_err_naks_rcvd", 4),
			stats("rxe0", "sent_pkts", 124, "rcvd_pkts", 120, "out_of_seq_request", 2, "rcvd_rnr_err", 1, "rcvd_seq_err", 3, "send_rnr_err", 9),
			stats("efa_0", "tx_bytes", 1, "rx_bytes", 2, "tx_pkts", 3, "rx_pkts", 4, "rx_drops", 0),
			stats("siw0"),
		},
	}
	x := New(fixed(s), 2)
	x.sysfs = fixtureSysfs
	out := scrapeText(t, x)
	for _, want := range []string{
		// mlx5: bytes and packets from the PMA counters, congestion from
		// netlink (its 11, not sysfs hw_counters' 999: one source a port).
		`rdma_port_transmit_bytes_total{device="mlx5_0",port="1"} 4000`,
		`rdma_port_receive_bytes_total{device="mlx5_0",port="1"} 8000`,
		`rdma_port_transmit_packets_total{device="mlx5_0",port="1"} 30`,
		`rdma_port_receive_packets_total{device="mlx5_0",port="1"} 40`,
		`rdma_port_transmit_wait_total{device="mlx5_0",port="1"} 7`,
		`rdma_port_cnp_sent_total{device="mlx5_0",port="1"} 11`,
		`rdma_port_cnp_handled_total{device="mlx5_0",port="1"} 12`,
		`rdma_port_ecn_marked_packets_total{device="mlx5_0",port="1"} 13`,
		`rdma_port_out_of_sequence_total{device="mlx5_0",port="1"} 14`,
		`rdma_port_local_ack_timeout_total{device="mlx5_0",port="1"} 15`,
		`rdma_port_rnr_naks_received_total{device="mlx5_0",port="1"} 16`,
		`rdma_port_implied_naks_total{device="mlx5_0",port="1"} 17`,
		`rdma_port_sequence_error_naks_received_total{device="mlx5_0",port="1"} 18`,
		`rdma_port_stat_total{device="mlx5_0",port="1",stat="rx_write_requests"} 99`,
		// mlx5_1: sysfs hw_counters, as netlink gave none.
		`rdma_port_cnp_sent_total{device="mlx5_1",port="1"} 5`,
		`rdma_port_cnp_handled_total{device="mlx5_1",port="1"} 6`,
		`rdma_port_ecn_marked_packets_total{device="mlx5_1",port="1"} 9`,
		`rdma_port_implied_naks_total{device="mlx5_1",port="1"} 4`,
		// irdma: IPv4 and IPv6 summed.
		`rdma_port_transmit_bytes_total{device="rocep1s0",port="1"} 150`,
		`rdma_port_receive_bytes_total{device="rocep1s0",port="1"} 7`,
		`rdma_port_transmit_packets_total{device="rocep1s0",port="1"} 3`,
		`rdma_port_receive_packets_total{device="rocep1s0",port="1"} 7`,
		`rdma_port_cnp_sent_total{device="rocep1s0",port="1"} 2`,
		`rdma_port_cnp_handled_total{device="rocep1s0",port="1"} 3`,
		`rdma_port_ecn_marked_packets_total{device="rocep1s0",port="1"} 1`,
		// bnxt_re: rx_pkts alone, not rx_roce_good_pkts too.
		`rdma_port_transmit_bytes_total{device="bnxt_re0",port="1"} 500`,
		`rdma_port_receive_packets_total{device="bnxt_re0",port="1"} 10`,
		`rdma_port_out_of_sequence_total{device="bnxt_re0",port="1"} 1`,
		`rdma_port_local_ack_timeout_total{device="bnxt_re0",port="1"} 2`,
		`rdma_port_rnr_naks_received_total{device="bnxt_re0",port="1"} 3`,
		`rdma_port_sequence_error_naks_received_total{device="bnxt_re0",port="1"} 4`,
		// rxe: packets and NAKs, no bytes.
		`rdma_port_transmit_packets_total{device="rxe0",port="1"} 124`,
		`rdma_port_receive_packets_total{device="rxe0",port="1"} 120`,
		`rdma_port_out_of_sequence_total{device="rxe0",port="1"} 2`,
		`rdma_port_rnr_naks_received_total{device="rxe0",port="1"} 1`,
		`rdma_port_sequence_error_naks_received_total{device="rxe0",port="1"} 3`,
		// efa.
		`rdma_port_transmit_bytes_total{device="efa_0",port="1"} 1`,
		`rdma_port_receive_packets_total{device="efa_0",port="1"} 4`,
		`rdmatrace_scrape_collector_success{collector="sysfs_port_counters"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	for _, not := range []string{
		`rdma_port_transmit_bytes_total{device="rxe0"`,   // rxe counts no bytes
		`rdma_port_transmit_bytes_total{device="mlx5_1"`, // N/A (no PMA)
		`rdma_port_transmit_packets_total{device="siw0"`, // siw has no counters
		`rdma_port_receive_packets_total{device="bnxt_re0",port="1"} 20`,
		`rdma_port_cnp_sent_total{device="mlx5_0",port="1"} 999`,
		`rdma_port_local_ack_timeout_total{device="rxe0"`, // no rxe counter means it
	} {
		if strings.Contains(out, not) {
			t.Errorf("scrape has %s", not)
		}
	}
}

// A counter file that is no number is an error naming the file and what
// was expected, logged once; the port's other counters and the other
// ports are still served, and the part's success says 0.
func TestSysfsCounterThatIsNoNumber(t *testing.T) {
	s := rdma.NodeState{Ports: []rdma.Port{{DevName: "bad0", Port: 1}, {DevName: "mlx5_0", Port: 1}, {DevName: "../mlx5_0", Port: 1}}}
	x := New(fixed(s), 2)
	x.sysfs = fixtureSysfs
	var log bytes.Buffer
	x.LogTo(ratelog.New(&log, 0))
	out := scrapeText(t, x)
	for _, want := range []string{
		`rdma_port_transmit_bytes_total{device="mlx5_0",port="1"} 4000`,
		`rdmatrace_scrape_collector_success{collector="sysfs_port_counters"} 0`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(out, `device="bad0",port="1"} `) && strings.Contains(out, `rdma_port_transmit_bytes_total{device="bad0"`) {
		t.Errorf("bad0's bad counter served:\n%s", out)
	}
	if strings.Contains(out, `rdma_port_transmit_bytes_total{device="../mlx5_0"`) {
		t.Error("a device name with a slash was read as a path")
	}
	if l := log.String(); !strings.Contains(l, `bad0/ports/1/counters/port_xmit_data: "12ab" is not a counter (expected a decimal number)`) {
		t.Errorf("log: %q", l)
	}
}
