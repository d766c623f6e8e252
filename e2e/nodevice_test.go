//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"
)

// Runs first (TestMain's phases): ib_core is loaded but no device exists yet.
func TestNoDevicesIsAnEmptyResultAndSuccess(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband/" + device); err == nil {
		t.Skip("rxe0 already exists: this test needs a guest with no RDMA device, run the whole suite")
	}
	for _, args := range [][]string{{"res", "qp", "-j"}, {"res", "-j"}, {"dev", "-j"}, {"link", "-j"}} {
		out, stderr, err := runStatus(*rdmatraceBin, args...)
		if err != nil {
			t.Errorf("rdmatrace %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		if got := strings.TrimSpace(string(out)); got != "[]" {
			t.Errorf("rdmatrace %s printed %q, want []", strings.Join(args, " "), got)
		}
	}
	out, _, err := runStatus(*rdmatraceBin, "res", "cm_id")
	if err != nil || len(out) != 0 {
		t.Errorf("table with no devices: %q, %v; want nothing and success", out, err)
	}
}
