//go:build e2e

package e2e

import (
	"encoding/json"
	"testing"
)

// TestStatMatchesIproute2: port counters against `rdma -j statistic show`
// (same ports, same counter names; a counter read after iproute2's is not
// smaller) and the QP counter mode against `rdma -j statistic qp mode`.
func TestStatMatchesIproute2(t *testing.T) {
	needDevice(t)
	var theirs, ours []map[string]any
	if err := json.Unmarshal(run(t, "rdma", "-j", "statistic", "show"), &theirs); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(run(t, *rdmatraceBin, "stat", "-j"), &ours); err != nil {
		t.Fatal(err)
	}
	if len(ours) != len(theirs) || len(ours) == 0 {
		t.Fatalf("stat: %d ports, rdma statistic show: %d", len(ours), len(theirs))
	}
	for i := range theirs {
		a, b := theirs[i], ours[i]
		if a["ifname"] != b["ifname"] || a["port"] != b["port"] {
			t.Errorf("port %d: rdma %v/%v, ours %v/%v", i, a["ifname"], a["port"], b["ifname"], b["port"])
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok {
				t.Errorf("%v/%v: rdma has %s, we have not", a["ifname"], a["port"], k)
				continue
			}
			if x, isNum := v.(float64); isNum && w.(float64) < x {
				t.Errorf("%v/%v: %s went from %v (rdma) down to %v (ours, read after)", a["ifname"], a["port"], k, x, w)
			}
		}
		if len(b) != len(a) {
			t.Errorf("%v/%v: %d keys, rdma %d", a["ifname"], a["port"], len(b), len(a))
		}
	}
	compareObjects(t, "stat-mode", run(t, "rdma", "-j", "statistic", "qp", "mode"), run(t, *rdmatraceBin, "stat", "qp", "mode", "-j"))
	compareObjects(t, "stat-qp", run(t, "rdma", "-j", "statistic", "qp", "show"), run(t, *rdmatraceBin, "stat", "qp", "-j"))
}
