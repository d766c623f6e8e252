package main

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Lint runs `helm lint --strict`'s checks on the chart in dir with
// values: a warning is a problem too (a missing or malformed Chart.yaml
// field, a template that does not parse or render, values that are not
// YAML). Recommendations (an icon) are not.
func Lint(dir string, values map[string]any) []Problem {
	var problems []Problem
	for _, m := range lint.RunAll(dir, values, "rdmatrace").Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, Problem{File: path.Join(dir, m.Path), What: "helm lint: " + m.Err.Error()})
		}
	}
	return problems
}

// Render renders the chart in dir as `helm template NAME dir -n NAMESPACE`
// does with values over the chart's own, and checks every manifest it
// gives as Check does a file's: named CHART/templates/FILE.
func Render(dir, name, namespace string, values map[string]any) (objs []any, problems []Problem, err error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("helm chart %s: %w", dir, err)
	}
	opts := common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValues(ch, values, opts, common.DefaultCapabilities)
	if err != nil {
		return nil, nil, fmt.Errorf("helm chart %s: values: %w", dir, err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, nil, fmt.Errorf("helm chart %s: %w", dir, err)
	}
	files := make([]string, 0, len(out))
	for f := range out {
		if strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml") {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		o, p := Check(f, []byte(out[f]))
		objs, problems = append(objs, o...), append(problems, p...)
	}
	return objs, problems, nil
}

// helmLabels are the labels a chart adds to say who manages an object;
// the plain manifests have none of them.
var helmLabels = []string{"app.kubernetes.io/managed-by", "helm.sh/chart"}

// Differences compares the chart's objects with the plain manifests'
// (deploy/kubernetes), each known by kind and name, Helm's own labels
// left out: the same objects, the same fields and values. The manifests'
// objects not in skip (kinds the chart leaves to Helm, as the
// Namespace) must all be rendered.
func Differences(chart, plain []any, skip map[string]bool) []string {
	key := func(o any) string {
		a, err := meta.Accessor(o)
		if err != nil {
			return fmt.Sprintf("%T", o)
		}
		return fmt.Sprintf("%T %s/%s", o, a.GetNamespace(), a.GetName())
	}
	text := func(o any) string {
		if a, err := meta.Accessor(o); err == nil {
			l := a.GetLabels()
			for _, k := range helmLabels {
				delete(l, k)
			}
			if len(l) == 0 {
				l = nil
			}
			a.SetLabels(l)
		}
		b, _ := json.MarshalIndent(o, "", " ")
		return string(b)
	}
	want := map[string]string{}
	for _, o := range plain {
		if !skip[fmt.Sprintf("%T", o)] {
			want[key(o)] = text(o)
		}
	}
	var diffs []string
	for _, o := range chart {
		k := key(o)
		w, ok := want[k]
		if !ok {
			diffs = append(diffs, k+": rendered by the chart, not in the manifests")
			continue
		}
		delete(want, k)
		if got := text(o); got != w {
			diffs = append(diffs, k+": "+firstDifference(got, w))
		}
	}
	for k := range want {
		diffs = append(diffs, k+": in the manifests, not rendered by the chart")
	}
	sort.Strings(diffs)
	return diffs
}

// firstDifference names the first line where the chart's object (got)
// and the manifest's (want) differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = strings.TrimSpace(g[i])
		}
		if i < len(w) {
			wl = strings.TrimSpace(w[i])
		}
		if gl != wl {
			return fmt.Sprintf("the chart gives %q where the manifest has %q (line %d of its JSON)", gl, wl, i+1)
		}
	}
	return "differs"
}

func typeName(o any) string { return fmt.Sprintf("%T", o) }
