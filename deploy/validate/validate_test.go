package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every manifest in deploy/kubernetes decodes strictly into its API type
// and keeps the rules.
func TestTheManifestsAreValid(t *testing.T) {
	files, err := filepath.Glob("../kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, problems := Check(f, b)
		for _, p := range problems {
			t.Error(p)
		}
		for _, o := range objs {
			kinds[reflect.TypeOf(o).Elem().Name()]++
		}
	}
	for _, k := range []string{"DaemonSet", "Service", "ServiceMonitor", "ClusterRole", "ServiceAccount"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests (%v)", k, kinds)
		}
	}
}

// A planted mistake in the real DaemonSet fails the check, saying where
// and what: the check can fail.
func TestPlantedMistakesAreCaught(t *testing.T) {
	b, err := os.ReadFile("../kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	real := string(b)
	for _, c := range []struct{ name, from, to, want string }{
		{"a misspelled field", "livenessProbe:", "livenesProbe:", `unknown field "livenesProbe"`},
		{"a wrong type", "hostPID: true", "hostPID: \"yes\"", "cannot unmarshal string into Go struct field PodSpec.spec.template.spec.hostPID of type bool"},
		{"an object where a list goes", "tolerations:\n        - operator: Exists", "tolerations:\n        operator: Exists", "cannot unmarshal object into Go struct field PodSpec.spec.template.spec.tolerations"},
		{"a selector that matches no pod", "matchLabels:\n      app.kubernetes.io/name: rdmatrace", "matchLabels:\n      app.kubernetes.io/name: rdmatrace-typo", "does not match the pod template's labels"},
		{"a mount of no volume", "- name: btf\n              mountPath", "- name: btfs\n              mountPath", `mounts volume "btfs"`},
		{"an unknown kind", "kind: DaemonSet", "kind: DaemonSett", "apps/v1 DaemonSett: not a kind this checker knows"},
	} {
		if !strings.Contains(real, c.from) {
			t.Fatalf("%s: the DaemonSet no longer has %q: plant the mistake elsewhere", c.name, c.from)
		}
		_, problems := Check("daemonset.yaml", []byte(strings.Replace(real, c.from, c.to, 1)))
		if len(problems) != 1 || !strings.Contains(problems[0].What, c.want) || !strings.HasPrefix(problems[0].String(), "daemonset.yaml:") {
			t.Errorf("%s: %v, want one problem saying %q", c.name, problems, c.want)
		}
	}
	sm := "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\nspec:\n  selector: {}\n  endpoints:\n    - port: https\n      bearerTokenFiel: /t\n"
	if _, problems := Check("sm.yaml", []byte("# a comment\n---\n"+sm)); len(problems) != 1 ||
		problems[0].Line != 3 || !strings.Contains(problems[0].What, `unknown field "bearerTokenFiel"`) {
		t.Errorf("a misspelled ServiceMonitor field: %v, want one problem at line 3", problems)
	}
}
