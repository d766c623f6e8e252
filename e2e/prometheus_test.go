//go:build e2e

package e2e

import (
	"bufio"
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
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rdmatrace\n    static_configs:\n      - targets: ['"+target+"']\n"), 0o644)
	prom := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+server, "--log.level=warn")
	var promErr strings.Builder
	prom.Stderr = &promErr
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()

	holder := exec.Command(filepath.Join(*workloads, "leakqp"), device, "hold")
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	var sums []map[string]any
	if err := json.Unmarshal(run(t, "rdma", "-j", "res", "show"), &sums); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, s := range sums {
		if s["ifname"] == device {
			for _, typ := range []string{"pd", "cq", "qp", "mr"} {
				if v, ok := s[typ].(float64); ok {
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
}
