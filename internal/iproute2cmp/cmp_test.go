package iproute2cmp

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name, theirs, ours string
		diffs              []string
	}{
		{"equal", `[{"a":1,"b":"x"}]`, `[{"b":"x","a":1}]`, nil},
		{"empty", `[]`, `[]`, nil},
		{"known ps bug", `[{"ps":"IPoIB"}]`, `[{"ps":"IB"}]`, nil},
		{"known poll-ctx shift", `[{"poll-ctx":"WORKQUEUE"}]`, `[{"poll-ctx":"UNBOUND_WORKQUEUE"}]`, nil},
		{"real ps difference", `[{"ps":"TCP"}]`, `[{"ps":"IB"}]`, []string{"ps TCP != IPoIB"}},
		{"missing key", `[{"a":1,"pid":2}]`, `[{"a":1}]`, []string{"missing pid"}},
		{"extra key", `[{"a":1}]`, `[{"a":1,"port":1}]`, []string{"extra port"}},
		{"count", `[{"a":1}]`, `[]`, []string{"rdmatrace lists 0 objects, rdma lists 1"}},
		{"order", `[{"a":1},{"a":2}]`, `[{"a":2},{"a":1}]`, []string{"object 0", "object 1"}},
	} {
		got, err := Compare("qp", []byte(tc.theirs), []byte(tc.ours))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.diffs) {
			t.Errorf("%s: diffs %q, want %d", tc.name, got, len(tc.diffs))
			continue
		}
		for i, want := range tc.diffs {
			if !strings.Contains(got[i], want) {
				t.Errorf("%s: diff %q does not mention %q", tc.name, got[i], want)
			}
		}
	}
	if d, _ := Compare("srq", []byte(`[{"comm":"17-20"}]`), []byte(`[{"comm":"ibv_srq_pingpon"}]`)); len(d) != 0 {
		t.Errorf("srq comm, broken in iproute2 6.1, was compared: %q", d)
	}
	if d, _ := Compare("srq", []byte(`[{"comm":"17-20"}]`), []byte(`[{}]`)); len(d) != 1 {
		t.Errorf("a missing srq comm was not reported: %q", d)
	}
	if _, err := Compare("qp", []byte(`{}`), []byte(`[]`)); err == nil {
		t.Error("a JSON object instead of an array was accepted")
	}
}
