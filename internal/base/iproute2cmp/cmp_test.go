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
		{"where the owner runs is rdmatrace's own", `[{"pid":2}]`, `[{"pid":2,"netns":4026531840,"cgroup":"/user.slice"}]`, nil},
		{"an addition iproute2 has too is compared", `[{"netns":1}]`, `[{"netns":2}]`, []string{"netns 1 != 2"}},
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

func TestCompareText(t *testing.T) {
	for _, tc := range []struct {
		name, typ, theirs, ours string
		diffs                   int
	}{
		{"equal, iproute2's trailing blank", "qp", "link rxe0/1 lqpn 1 type GSI state RTS \n", "link rxe0/1 lqpn 1 type GSI state RTS\n", 0},
		{"known ps bug", "cm_id", "link rxe0/1 cm-idn 0 ps IPoIB comm rping \n", "link rxe0/1 cm-idn 0 ps IB comm rping\n", 0},
		{"known poll-ctx shift", "cq", "dev rxe0 cqn 0 poll-ctx WORKQUEUE \n", "dev rxe0 cqn 0 poll-ctx UNBOUND_WORKQUEUE\n", 0},
		{"a known difference applies only to its key", "cq", "dev rxe0 cqn 0 state WORKQUEUE \n", "dev rxe0 cqn 0 state UNBOUND_WORKQUEUE\n", 1},
		{"broken srq comm", "srq", "dev rxe0 srqn 0 comm 17-20 \n", "dev rxe0 srqn 0 comm ibv_srq_pingpon\n", 0},
		{"srq comm is broken, srqn is not", "srq", "dev rxe0 srqn 0 comm 17-20 \n", "dev rxe0 srqn 1 comm 17-20\n", 1},
		{"a word after a known difference is a key, not a value", "cm_id", "link rxe0/1 ps IPoIB comm rping \n", "link rxe0/1 ps IB pid rping\n", 1},
		{"different value", "qp", "link rxe0/1 lqpn 1 \n", "link rxe0/1 lqpn 2\n", 1},
		{"different lead", "qp", "link rxe0/1 lqpn 1 \n", "link rxe1/1 lqpn 1\n", 1},
		{"missing word", "qp", "link rxe0/1 lqpn 1 pid 5 \n", "link rxe0/1 lqpn 1\n", 1},
		{"line count", "qp", "a\nb\n", "a\n", 1},
		{"blank lines ignored", "qp", "a\n\nb\n", "a\nb\n\n", 0},
	} {
		if got := CompareText(tc.typ, tc.theirs, tc.ours); len(got) != tc.diffs {
			t.Errorf("%s: diffs %q, want %d", tc.name, got, tc.diffs)
		}
	}
}
