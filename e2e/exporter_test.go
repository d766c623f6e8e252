//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the exporter's /metrics: value by metric name and labels
// ("rdma_resources{device=rxe0,type=qp}").
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not the text format: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			}
		}
	}
	return out
}

// TestExporterCountsWhatNetlinkAndTheTracerSee: while a QP holder runs,
// the exporter's live counts per type equal `rdma -j res show`'s summary,
// the holder is an owner, and its QP's creation and, once it is killed,
// its destruction are counted; soft-RoCE's counters fill the named port
// families it has counters for, and a create the device refuses is
// counted in rdma_create_failures_total.
func TestExporterCountsWhatNetlinkAndTheTracerSee(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	ready := filepath.Join(t.TempDir(), "ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	var stderr strings.Builder
	exp.Stderr = &stderr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Process.Signal(syscall.SIGINT); _ = exp.Wait() }()
	waitFor(t, 60*time.Second, "the exporter to serve", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	b, _ := os.ReadFile(ready)
	addr := strings.TrimSpace(string(b))

	holder, _ := startHolder(t, device)
	time.Sleep(500 * time.Millisecond) // its events reach the exporter
	m := scrape(t, addr)

	var sums []resSummary
	if err := json.Unmarshal(run(t, "rdma", "-j", "res", "show"), &sums); err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.Ifname != device {
			continue
		}
		for _, typ := range []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"} {
			want, ok := s.count(typ)
			if !ok {
				continue
			}
			if got := m["rdma_resources{device="+device+",type="+typ+"}"]; got != want {
				t.Errorf("rdma_resources %s: %v, rdma res show: %v", typ, got, want)
			}
		}
	}
	if got := m["rdma_resources_by_owner{container=,device="+device+",owner=leakqp,type=qp}"]; got != 1 {
		t.Errorf("leakqp's QPs: %v, want 1", got)
	}
	created := m["rdma_resource_creates_total{device="+device+",type=qp}"]
	if created < 1 {
		t.Errorf("rdma_resource_creates_total qp: %v, want the holder's", created)
	}
	if m["rdmatrace_part_up{part=netlink}"] != 1 || m["rdmatrace_part_up{part=tracer}"] != 1 {
		t.Errorf("part_up netlink %v, tracer %v; want both 1", m["rdmatrace_part_up{part=netlink}"], m["rdmatrace_part_up{part=tracer}"])
	}
	if m["rdma_port_active{device="+device+",port=1}"] != 1 || m["rdmatrace_hooks{state=attached}"] < 1 {
		t.Errorf("port active %v, hooks attached %v", m["rdma_port_active{device="+device+",port=1}"], m["rdmatrace_hooks{state=attached}"])
	}
	// The named port families soft-RoCE's counters give (it counts
	// packets and NAKs, no congestion), and sysfs read. Its hw counters
	// have no bytes; newer kernels (sid's) also give rxe the generic
	// sysfs counters/ (bytes, transmit wait), which may come beside them.
	var named []string
	for k := range m {
		if strings.HasPrefix(k, "rdma_port_") && strings.Contains(k, "{device="+device+",port=1}") && !strings.HasPrefix(k, "rdma_port_active") {
			named = append(named, strings.TrimSuffix(k, "{device="+device+",port=1}"))
		}
	}
	slices.Sort(named)
	t.Logf("named port families on %s: %v", device, named)
	wantNamed := []string{"rdma_port_out_of_sequence_total", "rdma_port_receive_packets_total", "rdma_port_rnr_naks_received_total",
		"rdma_port_sequence_error_naks_received_total", "rdma_port_transmit_packets_total"}
	fromSysfsCounters := []string{"rdma_port_receive_bytes_total", "rdma_port_transmit_bytes_total", "rdma_port_transmit_wait_total"}
	namedOK := true
	for _, f := range wantNamed {
		namedOK = namedOK && slices.Contains(named, f)
	}
	for _, f := range named {
		namedOK = namedOK && (slices.Contains(wantNamed, f) || slices.Contains(fromSysfsCounters, f))
	}
	if !namedOK || m["rdmatrace_scrape_collector_success{collector=sysfs_port_counters}"] != 1 {
		t.Errorf("named port families %v, want %v (and at most %v); sysfs read %v", named, wantNamed, fromSysfsCounters, m["rdmatrace_scrape_collector_success{collector=sysfs_port_counters}"])
	}
	// A create the device refuses (a CQ over rxe's max_cqe) is counted
	// with its type and reason.
	const refused = "rdma_create_failures_total{device=" + device + ",reason=device_cap,type=cq}"
	before := m[refused]
	cq := refuse(t, []string{filepath.Join(*workloads, "verbsfail")}, device, "cq")
	waitFor(t, 20*time.Second, "the refused create_cq to be counted", func() bool { return scrape(t, addr)[refused] == before+1 })
	t.Logf("verbsfail[%d]: %s refused (errno %d), counted as %s", cq.pid, cq.op, cq.errno, refused)
	destroyedBefore := m["rdma_resource_destroys_total{device="+device+",type=qp}"]
	_ = holder.Process.Kill()
	_ = holder.Wait()
	waitFor(t, 20*time.Second, "the holder's QP destroy to be counted", func() bool {
		return scrape(t, addr)["rdma_resource_destroys_total{device="+device+",type=qp}"] >= destroyedBefore+1
	})
	t.Logf("exporter: %s", strings.TrimSpace(stderr.String()))
}
