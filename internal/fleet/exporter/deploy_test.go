package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v2"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// servedMetrics are the names of every metric the exporter serves, from
// its registry (the tracer's and the health metrics included).
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return snapshot() }, 2)
	reg := prometheus.NewRegistry()
	x.SetHealth(NewHealth("0.9.0", "abc", PartTracer))
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(NewTracerMetrics())
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { reg.Describe(ch); x.Describe(ch); close(ch) }() // the registry describes every collector, the scrape its own
	for d := range ch {
		m := regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String())
		if m != nil {
			served[m[1]] = true
		}
	}
	if len(served) < 10 {
		t.Fatalf("only %d metrics described: %v", len(served), served)
	}
	return served
}

var metricName = regexp.MustCompile(`\b(rdma|rdmatrace)_[a-z_]+`)

// checkNames reports each metric a query names that the exporter does not
// serve, and returns how many it names.
func checkNames(t *testing.T, served map[string]bool, where, expr string) int {
	t.Helper()
	n := 0
	for _, name := range metricName.FindAllString(expr, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !served[base] {
			t.Errorf("%s uses %s, which the exporter does not serve", where, name)
		}
		n++
	}
	return n
}

// The alerting rules use only metrics the exporter serves: a rename here
// must not leave them querying nothing.
func TestAlertRulesUseServedMetrics(t *testing.T) {
	served := servedMetrics(t)
	alerts := map[string]string{}
	for _, f := range []string{"alerts.yaml", "recording.yaml"} {
		b, err := os.ReadFile("../../../deploy/prometheus/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr, For string
				}
			}
		}
		if err := yaml.Unmarshal(b, &rules); err != nil { // promtool checks the rest
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				name := "alert " + r.Alert
				if r.Record != "" {
					name = "recording " + r.Record
				}
				if checkNames(t, served, name, r.Expr) == 0 {
					t.Errorf("%s uses no metric of the exporter", name)
				}
				if r.Alert != "" {
					alerts[r.Alert] = r.For
				}
			}
		}
	}
	if f, ok := alerts["RDMAPortDown"]; !ok || f == "" {
		t.Errorf("no RDMAPortDown alert with a for: (%q)", f)
	}
}

// The dashboard is valid JSON whose every query names only metrics the
// exporter serves, selects by the node and instance variables and keeps
// the nodes apart (never a sum across nodes); it has the panels an
// operator of a fleet looks for.
func TestDashboardUsesServedMetricsPerNode(t *testing.T) {
	served := servedMetrics(t)
	b, err := os.ReadFile("../../../deploy/grafana/rdmatrace.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID      int
		Type    string
		Title   string
		GridPos *struct{ X, Y, W, H int }
		Targets []struct{ Expr string }
		Panels  []json.RawMessage
	}
	var d struct {
		UID        string
		Templating struct {
			List []struct{ Name, Query, Definition string }
		}
		Panels []panel
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("rdmatrace.json is not JSON: %v", err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Name != "datasource" {
			checkNames(t, served, "variable "+v.Name, v.Query)
		}
	}
	for _, v := range []string{"datasource", "node", "instance"} {
		if !vars[v] {
			t.Errorf("no $%s variable", v)
		}
	}
	ids := map[int]bool{}
	titles := ""
	aggregation := regexp.MustCompile(`\b(sum|max|min|avg|count|histogram_quantile\([^,]*, sum)\s*(by\s*\(([^)]*)\))?\s*\(`)
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos == nil || p.GridPos.W == 0 {
			t.Errorf("panel %q: id %d used twice, or no gridPos", p.Title, p.ID)
		}
		ids[p.ID] = true
		titles += p.Title + "\n"
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		// The bandwidth panels read the named families, which every
		// driver's counters fill under one name (mlx5's sysfs words, rxe's
		// packets), not the raw counters by driver names.
		if strings.HasPrefix(p.Title, "Bandwidth: bytes") && !(len(p.Targets) == 2 && strings.Contains(p.Targets[0].Expr, "rdma_port_transmit_bytes_total") && strings.Contains(p.Targets[1].Expr, "rdma_port_receive_bytes_total")) ||
			strings.HasPrefix(p.Title, "Bandwidth: packets") && !(len(p.Targets) == 2 && strings.Contains(p.Targets[0].Expr, "rdma_port_transmit_packets_total") && strings.Contains(p.Targets[1].Expr, "rdma_port_receive_packets_total")) {
			t.Errorf("panel %q does not read the named families: %+v", p.Title, p.Targets)
		}
		for _, q := range p.Targets {
			where := fmt.Sprintf("panel %q", p.Title)
			if checkNames(t, served, where, q.Expr) == 0 {
				t.Errorf("%s: %q names no metric of the exporter", where, q.Expr)
			}
			if !strings.Contains(q.Expr, `node=~"$node"`) || !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("%s: %q does not select by $node and $instance", where, q.Expr)
			}
			for _, m := range aggregation.FindAllStringSubmatch(q.Expr, -1) {
				if !strings.Contains(m[3], "node") || !strings.Contains(m[3], "instance") {
					t.Errorf("%s: %q aggregates across nodes (%s): keep node and instance", where, q.Expr, m[0])
				}
			}
		}
	}
	for _, want := range []string{"Port state", "Bandwidth: packets", "Bandwidth: bytes", "Port errors", "Events lost", "parts up",
		"Congestion: share of received packets ECN-marked", "Congestion: CNPs", "Loss: out of sequence", "Failed creates"} {
		if !strings.Contains(titles, want) {
			t.Errorf("no panel titled %q among:\n%s", want, titles)
		}
	}
}

// TestAlertRulesPassPromtool: Prometheus' own checker accepts the rules,
// and its rule tests (alerts_test.yaml: the port-down alert fires on a
// port that went down, not on one never up) pass. Debian's prometheus
// package ships promtool; guest/setup-host.sh, which make check runs,
// installs it.
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("no promtool: guest/setup-host.sh installs Debian's prometheus, which has it")
	}
	for file, rules := range map[string]int{"alerts.yaml": 12, "recording.yaml": 15} {
		out, err := exec.Command(promtool, "check", "rules", "../../../deploy/prometheus/"+file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", rules)) {
			t.Errorf("promtool check rules %s: %v\n%s", file, err, out)
		}
	}
	out, err := exec.Command(promtool, "test", "rules", "../../../deploy/prometheus/alerts_test.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// manifests parses deploy/kubernetes/*.yaml (every document of each).
func manifests(t *testing.T) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, f := range []string{"../../../deploy/kubernetes/daemonset.yaml", "../../../deploy/kubernetes/servicemonitor.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc["kind"] == nil || doc["apiVersion"] == nil {
				t.Errorf("%s: a document without kind or apiVersion: %v", f, doc)
			}
			docs = append(docs, doc)
		}
	}
	return docs
}

// get walks a parsed document by map keys and list indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[any]any)
			if m == nil {
				mm, _ := v.(map[string]any)
				if mm == nil {
					return nil
				}
				v = mm[k]
				continue
			}
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// The DaemonSet shares the node's network: the exporter must listen on
// the node's loopback only, the network reaching it through
// kube-rbac-proxy on the node's address with TLS; the Service and the
// ServiceMonitor must name that port and scrape it with https.
func TestKubernetesManifestsDoNotServeTheNetworkInTheClear(t *testing.T) {
	kinds := map[string]map[string]any{}
	for _, d := range manifests(t) {
		kinds[d["kind"].(string)] = d
	}
	ds := kinds["DaemonSet"]
	if ds == nil || get(ds, "spec", "template", "spec", "hostNetwork") != true {
		t.Fatalf("no hostNetwork DaemonSet: %v", ds)
	}
	if kinds["NetworkPolicy"] != nil {
		t.Error("a NetworkPolicy does not apply to a hostNetwork pod: it would only look like protection")
	}
	ports := map[string]bool{}
	var exporterListen, proxyListen string
	var proxyEnv any
	exporterArg, proxyArg := map[string]bool{}, map[string]bool{}
	containers, _ := get(ds, "spec", "template", "spec", "containers").([]any)
	for _, c := range containers {
		var args []string
		for _, a := range get(c, "args").([]any) {
			args = append(args, a.(string))
		}
		for i, a := range args {
			if get(c, "name") == "rdmatrace" {
				exporterArg[a] = true
			} else {
				name, _, _ := strings.Cut(a, "=")
				proxyArg[name], proxyArg[a] = true, true
			}
			if a == "--listen" && i+1 < len(args) {
				exporterListen = args[i+1]
			}
			if v, ok := strings.CutPrefix(a, "--secure-listen-address="); ok {
				proxyListen, proxyEnv = v, get(c, "env")
			}
		}
		ps, _ := get(c, "ports").([]any)
		for _, p := range ps {
			ports[get(p, "name").(string)] = true
		}
	}
	if !strings.HasPrefix(exporterListen, "127.0.0.1:") {
		t.Errorf("the exporter listens on %q: with hostNetwork that is every address of the node; want 127.0.0.1", exporterListen)
	}
	// The node's other users reach the loopback too: the exporter admits
	// kube-rbac-proxy's client certificate alone.
	web, _ := get(kinds["ConfigMap"], "data", "web.yml").(string)
	if !exporterArg["--web.config.file"] || !strings.Contains(web, "client_auth_type: RequireAndVerifyClientCert") || !strings.Contains(web, "client_ca_file:") {
		t.Errorf("the exporter's web config (--web.config.file %v) does not require a client certificate:\n%s", exporterArg["--web.config.file"], web)
	}
	if !proxyArg["--upstream-client-cert-file"] || !proxyArg["--upstream-client-key-file"] || !proxyArg["--upstream=https://127.0.0.1:9879/"] {
		t.Errorf("kube-rbac-proxy does not reach the exporter with its client certificate over https: %v", proxyArg)
	}
	if proxyListen != "[$(NODE_IP)]:9879" || get(proxyEnv, 0, "name") != "NODE_IP" ||
		get(proxyEnv, 0, "valueFrom", "fieldRef", "fieldPath") != "status.hostIP" {
		t.Errorf("kube-rbac-proxy listens on %q with env %v: want the node's address from status.hostIP", proxyListen, proxyEnv)
	}
	svcPort := get(kinds["Service"], "spec", "ports", 0, "targetPort")
	if !ports[fmt.Sprint(svcPort)] {
		t.Errorf("the Service targets port %v, which no container declares (%v)", svcPort, ports)
	}
	ep := get(kinds["ServiceMonitor"], "spec", "endpoints", 0)
	if get(ep, "scheme") != "https" || get(ep, "port") != svcPort || get(ep, "bearerTokenFile") == nil {
		t.Errorf("the ServiceMonitor scrapes %v: want https with a bearer token on port %v", ep, svcPort)
	}
	if get(ds, "spec", "template", "metadata", "annotations", "prometheus.io/scheme") != "https" {
		t.Error("the prometheus.io annotations do not say https")
	}
}

// The DaemonSet survives a fleet: an image a node can pull (a registry,
// a version, not :latest), pods on every node (tolerating every taint,
// no nodeSelector), a liveness probe that reads nothing (/healthz on the
// port the exporter listens on), bounded resources, and each series
// labelled with its node by the ServiceMonitor.
func TestDaemonSetSurvivesAFleet(t *testing.T) {
	kinds := map[string]map[string]any{}
	for _, d := range manifests(t) {
		kinds[d["kind"].(string)] = d
	}
	pod := get(kinds["DaemonSet"], "spec", "template", "spec")
	if get(pod, "nodeSelector") != nil || get(pod, "affinity") != nil {
		t.Errorf("the DaemonSet is kept off some nodes (%v, %v): it must run on every node", get(pod, "nodeSelector"), get(pod, "affinity"))
	}
	tolerates := false
	tols, _ := get(pod, "tolerations").([]any)
	for _, tl := range tols {
		tolerates = tolerates || get(tl, "operator") == "Exists" && get(tl, "key") == nil && get(tl, "effect") == nil
	}
	if !tolerates {
		t.Errorf("tolerations %v: want one that tolerates every taint (operator: Exists alone)", tols)
	}
	containers, _ := get(pod, "containers").([]any)
	var exporter any
	for _, c := range containers {
		for _, r := range []string{"requests", "limits"} {
			if get(c, "resources", r, "memory") == nil {
				t.Errorf("container %v: no resources.%s.memory", get(c, "name"), r)
			}
		}
		if get(c, "name") == "rdmatrace" {
			exporter = c
		}
	}
	if exporter == nil {
		t.Fatal("no rdmatrace container")
	}
	image, _ := get(exporter, "image").(string)
	registry, rest, _ := strings.Cut(image, "/")
	if !strings.Contains(registry, ".") || !strings.Contains(rest, ":") || strings.HasSuffix(image, ":latest") {
		t.Errorf("image %q: want a registry host and a version tag, not :latest", image)
	}
	listen, probes := "", ""
	args, _ := get(exporter, "args").([]any)
	for i, a := range args {
		if i+1 < len(args) {
			switch a {
			case "--listen":
				listen, _ = args[i+1].(string)
			case "--web.probe-listen":
				probes, _ = args[i+1].(string)
			}
		}
	}
	// The probes have their own listener: a flood of the metrics one
	// does not fail them.
	_, port, _ := strings.Cut(probes, ":")
	if _, mport, _ := strings.Cut(listen, ":"); port == "" || port == mport {
		t.Errorf("--web.probe-listen %q beside --listen %q: want the probes on a listener of their own", probes, listen)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		h := get(exporter, probe, "httpGet")
		if get(h, "path") != path || fmt.Sprint(get(h, "port")) != port || get(h, "host") != "127.0.0.1" {
			t.Errorf("%s: %v, want GET 127.0.0.1:%s%s", probe, h, port, path)
		}
	}
	if r := get(kinds["ServiceMonitor"], "spec", "endpoints", 0, "relabelings", 0); get(r, "targetLabel") != "node" ||
		get(r, "sourceLabels", 0) != "__meta_kubernetes_pod_node_name" {
		t.Errorf("the ServiceMonitor's first relabeling %v: want the pod's node as node", r)
	}
}
