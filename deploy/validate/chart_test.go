package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
)

const chartDir = "../helm/rdmatrace"

// plain reads the manifests the chart must render the same objects as.
func plain(t *testing.T) []any {
	t.Helper()
	var objs []any
	for _, f := range []string{"../kubernetes/daemonset.yaml", "../kubernetes/servicemonitor.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o, problems := Check(f, b)
		for _, p := range problems {
			t.Error(p)
		}
		objs = append(objs, o...)
	}
	return objs
}

// The chart passes helm lint --strict, with its defaults and with the
// ServiceMonitor on.
func TestTheChartLints(t *testing.T) {
	for _, vals := range []map[string]any{nil, {"serviceMonitor": map[string]any{"enabled": true}}} {
		for _, p := range Lint(chartDir, vals) {
			t.Errorf("values %v: %v", vals, p)
		}
	}
}

// Rendered as `helm template rdmatrace deploy/helm/rdmatrace -n rdmatrace
// --set serviceMonitor.enabled=true`, the chart gives the objects of
// deploy/kubernetes (but the Namespace, Helm's to make), each decoding
// strictly into its API type, field for field: the chart and the plain
// manifests cannot drift apart.
func TestTheChartRendersTheManifests(t *testing.T) {
	objs, problems, err := Render(chartDir, "rdmatrace", "rdmatrace", map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	for _, d := range Differences(objs, plain(t), map[string]bool{"*v1.Namespace": true}) {
		t.Error(d)
	}
}

// Other values render valid objects that say what the values asked: a
// release of another name and namespace, no ServiceMonitor by default,
// no OTLP URL, extra flags, the proxy's certificate named for the
// Service.
func TestTheChartsValuesRender(t *testing.T) {
	objs, problems, err := Render(chartDir, "rt", "monitoring", map[string]any{
		"otlp":      map[string]any{"url": ""},
		"extraArgs": []any{"--no-trace"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	var kinds []string
	var args []string
	for _, o := range objs {
		kinds = append(kinds, typeName(o))
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			if ds.Name != "rt-rdmatrace" || ds.Namespace != "monitoring" {
				t.Errorf("the DaemonSet is %s/%s, want monitoring/rt-rdmatrace", ds.Namespace, ds.Name)
			}
			args = ds.Spec.Template.Spec.Containers[0].Args
		}
	}
	if strings.Contains(strings.Join(kinds, " "), "ServiceMonitor") {
		t.Errorf("a ServiceMonitor by default (%v): the operator's CRDs may not be there", kinds)
	}
	a := strings.Join(args, " ")
	if strings.Contains(a, "--otlp") || !strings.HasSuffix(a, "--no-trace") {
		t.Errorf("the exporter's arguments %q: want no --otlp and the extra flag last", a)
	}
	objs, _, err = Render(chartDir, "rt", "monitoring", map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	sn := ""
	for _, o := range objs {
		if sm, ok := o.(*monitoringv1.ServiceMonitor); ok && sm.Spec.Endpoints[0].TLSConfig != nil && sm.Spec.Endpoints[0].TLSConfig.ServerName != nil {
			sn = *sm.Spec.Endpoints[0].TLSConfig.ServerName
		}
	}
	if sn != "rt-rdmatrace.monitoring.svc" {
		t.Errorf("the ServiceMonitor verifies the proxy as %q, want the Service's name rt-rdmatrace.monitoring.svc", sn)
	}
}

// A mistake in the chart is caught, saying where and what: a value of
// the wrong type for the API, and a template that does not parse.
func TestChartMistakesAreCaught(t *testing.T) {
	_, problems, err := Render(chartDir, "rdmatrace", "rdmatrace", map[string]any{"port": "https"})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 || !strings.HasPrefix(problems[0].File, "rdmatrace/templates/") || !strings.Contains(problems[0].What, "cannot unmarshal") {
		t.Errorf("port: https gave %v, want a problem in a template's output naming the type", problems)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "templates", "service.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(strings.Replace(string(b), "{{ .Values.port }}", "{{ .Values.port ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	problems = Lint(dir, nil)
	if len(problems) == 0 || !strings.Contains(problems[0].String(), "service.yaml") {
		t.Errorf("a template that does not parse: lint gave %v, want a problem naming service.yaml", problems)
	}
	// And the comparison: a chart whose DaemonSet differs from the plain
	// manifest's is named.
	objs, _, err := Render(chartDir, "rdmatrace", "rdmatrace", map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "goMemLimit": "100MiB"})
	if err != nil {
		t.Fatal(err)
	}
	diffs := Differences(objs, plain(t), map[string]bool{"*v1.Namespace": true})
	if len(diffs) != 1 || !strings.Contains(diffs[0], "DaemonSet rdmatrace/rdmatrace") || !strings.Contains(diffs[0], "100MiB") {
		t.Errorf("a chart DaemonSet with another GOMEMLIMIT: %v, want one difference naming it", diffs)
	}
}

// The chart is versioned with the release, and its default image is the
// release's (make release's VERSION).
func TestTheChartIsVERSION(t *testing.T) {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != v || ch.Metadata.AppVersion != v {
		t.Errorf("Chart.yaml: version %s, appVersion %s; want VERSION's %s for both", ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
}
