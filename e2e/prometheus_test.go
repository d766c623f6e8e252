//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promQuery asks a Prometheus server for one instant value of query (ok
// false when the result is empty).
func promQuery(t *testing.T, server, query string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + server + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" || len(r.Data.Result) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(fmt.Sprint(r.Data.Result[0].Value[1]), 64)
	return v, err == nil
}

// TestPrometheusScrapesTheExporter: Debian's Prometheus server scrapes the
// exporter every second while a QP holder runs; PromQL through its HTTP
// API gives, per type, the live counts `rdma -j res show` gives, and the
// holder's QP as created and not destroyed since the exporter started.
func TestPrometheusScrapesTheExporter(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	needModuleBTF(t)
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Fatal("no prometheus (guest/setup-host.sh installs Debian's)")
	}
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Process.Signal(syscall.SIGINT); _ = exp.Wait() }()
	waitFor(t, 60*time.Second, "the exporter to serve", func() bool { _, err := os.Stat(ready); return err == nil })
	b, _ := os.ReadFile(ready)
	target := strings.TrimSpace(string(b))

	const server = "127.0.0.1:19090"
	cfg := filepath.Join(dir, "prometheus.yml")
	rules, err := filepath.Abs("deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rules); err != nil {
		t.Fatalf("the alerting rules: %v", err)
	}
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - "+rules+
		"\nscrape_configs:\n  - job_name: rdmatrace\n    static_configs:\n      - targets: ['"+target+"']\n"), 0o644)
	prom := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+server, "--log.level=warn")
	var promErr strings.Builder
	prom.Stderr = &promErr
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()

	startHolder(t, device)

	var sums []resSummary
	if err := json.Unmarshal(run(t, "rdma", "-j", "res", "show"), &sums); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, s := range sums {
		if s.Ifname == device {
			for _, typ := range []string{"pd", "cq", "qp", "mr"} {
				if v, ok := s.count(typ); ok {
					want[typ] = v
				}
			}
		}
	}
	// Until a scrape after the holder started is in: at most a minute
	// (Prometheus starts slowly under the emulator).
	q := func(typ string) string { return `rdma_resources{device="` + device + `",type="` + typ + `"}` }
	deadline := time.Now().Add(90 * time.Second)
	for {
		v, ok := promQuery(t, server, q("qp"))
		if ok && v == want["qp"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has %s = %v (%v), rdma res show %v\nprometheus: %s", q("qp"), v, ok, want["qp"], promErr.String())
		}
		time.Sleep(time.Second)
	}
	for typ, w := range want {
		if v, ok := promQuery(t, server, q(typ)); !ok || v != w {
			t.Errorf("PromQL %s = %v (%v), rdma res show: %v", q(typ), v, ok, w)
		}
	}
	if v, ok := promQuery(t, server, `sum(rdma_resource_creates_total{type="qp"}) - sum(rdma_resource_destroys_total{type="qp"} or vector(0))`); !ok || v != 1 {
		t.Errorf("QPs created minus destroyed since the exporter started: %v (%v), want the holder's 1", v, ok)
	}
	if v, ok := promQuery(t, server, `rdma_resources_by_owner{owner="leakqp",type="qp"}`); !ok || v != 1 {
		t.Errorf("leakqp's QPs in Prometheus: %v (%v), want 1", v, ok)
	}
	if v, ok := promQuery(t, server, `up{job="rdmatrace"}`); !ok || v != 1 {
		t.Errorf("up = %v (%v)", v, ok)
	}
	if v, ok := promQuery(t, server, `min(rdmatrace_part_up{job="rdmatrace"})`); !ok || v != 1 {
		t.Errorf("min(rdmatrace_part_up) = %v (%v), want 1: netlink and the tracer up", v, ok)
	}
	connectionsAreCounted(t, server)
	blockedUnregisterFires(t, server)
}

// waitQuery waits until query gives want (a minute at most).
func waitQuery(t *testing.T, server, query string, want func(float64, bool) bool) (float64, bool) {
	t.Helper()
	var v float64
	var ok bool
	deadline := time.Now().Add(60 * time.Second)
	for !want(v, ok) {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
		v, ok = promQuery(t, server, query)
	}
	return v, ok
}

// connectionsAreCounted: K rping connections to a persistent server add
// 2K to the setup histogram's count, each side once: the server's ID ends
// its setup at ESTABLISHED, the client's at CONNECT_RESPONSE (its QP is
// user space's: librdmacm makes ESTABLISHED itself, and the kernel counts
// K ESTABLISHED events).
func connectionsAreCounted(t *testing.T, server string) {
	t.Helper()
	const hist = `sum(rdma_cm_connection_setup_seconds_count)`
	const est = `sum(rdma_cm_events_total{event="ESTABLISHED"}) or vector(0)`
	h0, _ := promQuery(t, server, hist)
	e0, _ := promQuery(t, server, est)
	ports += 10
	port := fmt.Sprint(ports)
	w := &workload{t: t}
	defer w.stop()
	w.start("rping", "-s", "-P", "-a", addr, "-p", port)
	waitListening(t, port)
	made := 0
	for i := 0; i < 3; i++ {
		if out, err := exec.Command("rping", "-c", "-a", addr, "-p", port, "-C", "1").CombinedOutput(); err != nil {
			t.Logf("rping client %d: %v\n%s", i, err, out) // under emulation a setup may fail: not counted
			continue
		}
		made++
	}
	if made == 0 {
		t.Fatal("no rping connection was made")
	}
	want := h0 + float64(2*made)
	h, ok := waitQuery(t, server, hist, func(v float64, ok bool) bool { return ok && v >= want })
	e, _ := promQuery(t, server, est)
	if h != want || e-e0 != float64(made) {
		t.Errorf("after %d rping connections: setup histogram count %v -> %v (%v), want +%d; ESTABLISHED events +%v, want +%d", made, h0, h, ok, 2*made, e-e0, made)
	}
	t.Logf("%d connections: setup histogram count +%v", made, h-h0)
}

// blockedUnregisterFires: a QP holder on rxe9, stopped, blocks `rdma link
// delete rxe9`: Prometheus sees the blocked-unregistration metric with the
// holder, and after 30 s the alert RDMADeviceUnregisterBlocked fires (the
// rules of deploy/prometheus/alerts.yaml, evaluated by Prometheus).
func blockedUnregisterFires(t *testing.T, server string) {
	t.Helper()
	const dev = "rxe9"
	run(t, "rdma", "link", "add", dev, "type", "rxe", "netdev", "veth1")
	holder, _ := startHolder(t, dev)
	_ = holder.Process.Signal(syscall.SIGSTOP)
	del := exec.Command("rdma", "link", "delete", dev)
	var delOut bytes.Buffer
	del.Stdout, del.Stderr = &delOut, &delOut
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	deleted := make(chan error, 1)
	go func() { deleted <- del.Wait() }()
	defer func() {
		_ = holder.Process.Kill()
		select {
		case err := <-deleted:
			if err != nil {
				t.Errorf("rdma link delete %s: %v\n%s", dev, err, delOut.String())
			}
		case <-time.After(90 * time.Second):
			t.Errorf("rdma link delete %s still blocked 90 s after its holder was killed", dev)
		}
	}()

	holders := `rdma_device_unregister_holders{device="` + dev + `",owner="leakqp"}`
	if v, ok := waitQuery(t, server, holders, func(v float64, ok bool) bool { return ok && v > 0 }); !ok || v < 4 {
		t.Errorf("%s = %v (%v): want leakqp's objects on %s (its PD, CQ, QP, MR at least)", holders, v, ok, dev)
	}
	alert := `ALERTS{alertname="RDMADeviceUnregisterBlocked",alertstate="firing",device="` + dev + `"}`
	v, ok := waitQuery(t, server, alert, func(v float64, ok bool) bool { return ok && v == 1 })
	if !ok || v != 1 {
		t.Errorf("%s = %v (%v) %v after rdma link delete began; want it firing past 30 s", alert, v, ok, time.Since(began).Round(time.Second))
	} else {
		t.Logf("RDMADeviceUnregisterBlocked fired %v after rdma link delete %s began", time.Since(began).Round(time.Second), dev)
	}
	select {
	case err := <-deleted:
		t.Errorf("rdma link delete %s ended (%v) while its holder was stopped: %s", dev, err, delOut.String())
		deleted <- err
	default:
	}
}
