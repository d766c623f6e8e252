// Command validate checks Kubernetes manifests against the API's own Go
// types, offline: each document of each file is decoded strictly (a field
// the type does not have, or a value of the wrong type, is an error) into
// the type its apiVersion and kind name, from k8s.io/api and the
// Prometheus Operator's API module; then a few rules the types cannot
// say (a selector that matches its pods, containers with an image, probes
// on a declared or listened port).
//
// Usage: validate [-chart DIR]... FILE.yaml...
//
// A Helm chart (-chart) is linted as `helm lint --strict` does and its
// manifests rendered as `helm template` does, by Helm's own Go packages,
// then checked the same way; its tests check that the chart renders the
// objects of deploy/kubernetes, field for field.
//
// It is a module of its own so that the product's go.mod carries neither
// the Kubernetes API nor Helm.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// maxManifest bounds a file read: manifests are small.
const maxManifest = 4 << 20

// kinds maps apiVersion/kind to a new object of its type.
var kinds = map[string]func() any{
	"v1/Namespace":                             func() any { return &corev1.Namespace{} },
	"v1/ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"v1/Service":                               func() any { return &corev1.Service{} },
	"v1/ConfigMap":                             func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                                func() any { return &corev1.Secret{} },
	"apps/v1/DaemonSet":                        func() any { return &appsv1.DaemonSet{} },
	"apps/v1/Deployment":                       func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                      func() any { return &appsv1.StatefulSet{} },
	"networking.k8s.io/v1/NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
	"rbac.authorization.k8s.io/v1/ClusterRole": func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"monitoring.coreos.com/v1/ServiceMonitor":         func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PodMonitor":             func() any { return &monitoringv1.PodMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":         func() any { return &monitoringv1.PrometheusRule{} },
}

// Problem is one thing wrong in a manifest: where and what.
type Problem struct {
	File string
	Line int // the document's first line
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

// document is one YAML document of a file and the line it starts on.
type document struct {
	line int
	text []byte
}

// split cuts a YAML stream at its "---" lines.
func split(b []byte) []document {
	var docs []document
	cur := document{line: 1}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxManifest)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.HasPrefix(l, "---") && strings.TrimSpace(strings.TrimLeft(l, "-")) == "" {
			docs = append(docs, cur)
			cur = document{line: n + 1}
			continue
		}
		cur.text = append(cur.text, l...)
		cur.text = append(cur.text, '\n')
	}
	return append(docs, cur)
}

// empty says whether a document holds only comments and blank lines.
func empty(text []byte) bool {
	for l := range strings.Lines(string(text)) {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// Check validates one file's documents; objs gets each decoded object.
func Check(file string, b []byte) (objs []any, problems []Problem) {
	for _, d := range split(b) {
		if empty(d.text) {
			continue
		}
		bad := func(format string, args ...any) {
			problems = append(problems, Problem{file, d.line, fmt.Sprintf(format, args...)})
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d.text, &tm); err != nil {
			bad("not YAML: %v", err)
			continue
		}
		if tm.APIVersion == "" || tm.Kind == "" {
			bad("a document without apiVersion or kind")
			continue
		}
		mk := kinds[tm.APIVersion+"/"+tm.Kind]
		if mk == nil {
			bad("%s %s: not a kind this checker knows (add its Go type)", tm.APIVersion, tm.Kind)
			continue
		}
		obj := mk()
		// UnmarshalStrict: a field the type lacks (a misspelling), a
		// duplicate key or a value of the wrong type is an error.
		if err := yaml.UnmarshalStrict(d.text, obj); err != nil {
			bad("%s: %v", tm.Kind, err)
			continue
		}
		for _, w := range rules(obj) {
			bad("%s %s", tm.Kind, w)
		}
		objs = append(objs, obj)
	}
	return objs, problems
}

// rules are what the types cannot say.
func rules(obj any) []string {
	var ws []string
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		ws = append(ws, selectorRules(o.Name, o.Spec.Selector, o.Spec.Template.Labels)...)
		ws = append(ws, podRules(o.Name, &o.Spec.Template.Spec, nil)...)
	case *appsv1.StatefulSet:
		ws = append(ws, selectorRules(o.Name, o.Spec.Selector, o.Spec.Template.Labels)...)
		var claims []string
		for _, c := range o.Spec.VolumeClaimTemplates {
			claims = append(claims, c.Name)
		}
		ws = append(ws, podRules(o.Name, &o.Spec.Template.Spec, claims)...)
	case *corev1.Service:
		if len(o.Spec.Ports) == 0 {
			ws = append(ws, o.Name+": no ports")
		}
	case *monitoringv1.ServiceMonitor:
		if len(o.Spec.Endpoints) == 0 {
			ws = append(ws, o.Name+": no endpoints")
		}
	}
	return ws
}

// selectorRules: a workload has a name and a selector that matches its
// pod template.
func selectorRules(name string, selector *metav1.LabelSelector, podLabels map[string]string) []string {
	var ws []string
	if name == "" {
		ws = append(ws, "without metadata.name")
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	switch {
	case selector == nil:
		ws = append(ws, name+": spec.selector is required")
	case err != nil:
		ws = append(ws, name+": spec.selector: "+err.Error())
	case sel.Empty() || !sel.Matches(labels.Set(podLabels)):
		ws = append(ws, fmt.Sprintf("%s: spec.selector %v does not match the pod template's labels %v", name, sel, podLabels))
	}
	return ws
}

// podRules: containers with names and images, mounting volumes the pod
// has (or claims, a StatefulSet's volumeClaimTemplates).
func podRules(name string, p *corev1.PodSpec, claims []string) []string {
	var ws []string
	if len(p.Containers) == 0 {
		ws = append(ws, name+": no containers")
	}
	vols := map[string]bool{}
	for _, c := range claims {
		vols[c] = true
	}
	for _, v := range p.Volumes {
		vols[v.Name] = true
	}
	for _, c := range p.Containers {
		if c.Name == "" || c.Image == "" {
			ws = append(ws, fmt.Sprintf("%s: a container without name or image (%q)", name, c.Name))
		}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				ws = append(ws, fmt.Sprintf("%s: container %s mounts volume %q, which the pod does not have", name, c.Name, m.Name))
			}
		}
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Path == "" {
				ws = append(ws, fmt.Sprintf("%s: container %s has an httpGet probe without a path", name, c.Name))
			}
		}
	}
	return ws
}

func main() {
	args := os.Args[1:]
	var charts []string
	for len(args) >= 2 && args[0] == "-chart" {
		charts, args = append(charts, args[1]), args[2:]
	}
	if len(args) == 0 && len(charts) == 0 {
		fmt.Fprintln(os.Stderr, "usage: validate [-chart DIR]... FILE.yaml...")
		os.Exit(2)
	}
	bad := 0
	report := func(problems []Problem) {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "validate:", p)
		}
		bad += len(problems)
	}
	// A chart: helm lint --strict's checks, then its manifests rendered
	// with its defaults and with every optional part on (the
	// ServiceMonitor), each checked as a file is.
	for _, dir := range charts {
		for _, set := range []string{"", "serviceMonitor.enabled=true"} {
			// Helm merges the chart's values into these: one map a call.
			vals := func() map[string]any {
				if set == "" {
					return nil
				}
				return map[string]any{"serviceMonitor": map[string]any{"enabled": true}}
			}
			report(Lint(dir, vals()))
			objs, problems, err := Render(dir, "rdmatrace", "rdmatrace", vals())
			if err != nil {
				fmt.Fprintln(os.Stderr, "validate:", err)
				bad++
				continue
			}
			report(problems)
			what := "its defaults"
			if set != "" {
				what = set
			}
			fmt.Printf("%s with %s: %d objects\n", dir, what, len(objs))
		}
	}
	for _, f := range args {
		fh, err := os.Open(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "validate:", err)
			bad++
			continue
		}
		b, err := io.ReadAll(io.LimitReader(fh, maxManifest+1))
		fh.Close()
		if err == nil && len(b) > maxManifest {
			err = fmt.Errorf("over %d bytes", maxManifest)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "validate: %s: %v\n", f, err)
			bad++
			continue
		}
		objs, problems := Check(f, b)
		report(problems)
		fmt.Printf("%s: %d objects\n", f, len(objs))
	}
	if bad > 0 {
		os.Exit(1)
	}
}
