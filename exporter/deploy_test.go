package exporter

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The alerting rules and the Grafana dashboard in deploy/ use only metrics
// the exporter serves: a rename here must not leave them querying nothing.
func TestDeployFilesUseServedMetrics(t *testing.T) {
	x := New(func() Snapshot { return snapshot() }, 2)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := RegisterTracer(reg, 27, 0, func() uint64 { return 0 }); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { reg.Describe(ch); close(ch) }() // the registry describes every collector
	for d := range ch {
		m := regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String())
		if m != nil {
			served[m[1]] = true
		}
	}
	if len(served) < 10 {
		t.Fatalf("only %d metrics described: %v", len(served), served)
	}
	name := regexp.MustCompile(`\b(rdma|rdmatrace)_[a-z_]+`)
	for _, f := range []string{"../deploy/prometheus/alerts.yaml", "../deploy/grafana/rdmatrace.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		var exprs []string // the queries, not the titles that name things in words
		for _, m := range regexp.MustCompile(`"?expr"?:\s*(.*)`).FindAllStringSubmatch(string(b), -1) {
			exprs = append(exprs, m[1])
		}
		for _, n := range name.FindAllString(strings.Join(exprs, "\n"), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
			if !served[base] {
				t.Errorf("%s uses %s, which the exporter does not serve", f, n)
			}
			used++
		}
		if used == 0 {
			t.Errorf("%s uses no metric of the exporter", f)
		}
	}
}

// TestAlertRulesPassPromtool: Prometheus' own checker accepts the rules
// (Debian's prometheus package ships promtool; guest/setup-host.sh, which
// make check runs, installs it).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("no promtool: guest/setup-host.sh installs Debian's prometheus, which has it")
	}
	out, err := exec.Command(promtool, "check", "rules", "../deploy/prometheus/alerts.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS: 4 rules found") {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
