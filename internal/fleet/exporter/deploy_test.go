package exporter

import (
	"bytes"
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
)

// The alerting rules and the Grafana dashboard in deploy/ use only metrics
// the exporter serves: a rename here must not leave them querying nothing.
func TestDeployFilesUseServedMetrics(t *testing.T) {
	x := New(func() Snapshot { return snapshot() }, 2)
	reg := prometheus.NewRegistry()
	x.SetHealth(NewHealth("0.9.0", "abc", PartTracer))
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(NewTracerMetrics())
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
	for _, f := range []string{"../../../deploy/prometheus/alerts.yaml", "../../../deploy/grafana/rdmatrace.json"} {
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
	out, err := exec.Command(promtool, "check", "rules", "../../../deploy/prometheus/alerts.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS: 4 rules found") {
		t.Errorf("promtool check rules: %v\n%s", err, out)
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
	containers, _ := get(ds, "spec", "template", "spec", "containers").([]any)
	for _, c := range containers {
		var args []string
		for _, a := range get(c, "args").([]any) {
			args = append(args, a.(string))
		}
		for i, a := range args {
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
	listen := ""
	args, _ := get(exporter, "args").([]any)
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			listen, _ = args[i+1].(string)
		}
	}
	_, port, _ := strings.Cut(listen, ":")
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
