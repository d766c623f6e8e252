//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/iproute2cmp"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestDevAndLinkMatchIproute2 compares `rdmatrace dev` and `rdmatrace link`
// with `rdma dev show` and `rdma link show`, as JSON key by key and as
// text line by line.
func TestDevAndLinkMatchIproute2(t *testing.T) {
	needDevice(t)
	for _, obj := range []string{"dev", "link"} {
		t.Run(obj, func(t *testing.T) {
			theirs := run(t, "rdma", "-j", obj, "show")
			ours := run(t, *rdmatraceBin, obj, "-j")
			keep(t, "rdma/"+obj+".json", theirs)
			keep(t, "rdmatrace/"+obj+".json", ours)
			compareObjects(t, obj, theirs, ours)
			compareText(t, obj, run(t, "rdma", obj, "show"), run(t, *rdmatraceBin, obj, "-o", "text"))
		})
	}
	// With details: link is the same in both; for dev, both add the caps
	// list (on a line of their own in text), and rdmatrace the protocol and
	// port count too, so text is not compared.
	t.Run("link-details", func(t *testing.T) {
		compareObjects(t, "link", run(t, "rdma", "-d", "-j", "link", "show"), run(t, *rdmatraceBin, "link", "-d", "-j"))
		compareText(t, "link", run(t, "rdma", "-d", "link", "show"), run(t, *rdmatraceBin, "link", "-d", "-o", "text"))
	})
	t.Run("dev-details", func(t *testing.T) {
		theirs := run(t, "rdma", "-d", "-j", "dev", "show")
		ours := withoutKeys(t, run(t, *rdmatraceBin, "dev", "-d", "-j"), "protocol", "ports")
		compareObjects(t, "dev", theirs, ours)
		if !strings.Contains(string(ours), `"adaptive-moderation"`) {
			t.Errorf("dev -d shows no adaptive-moderation: %s", ours)
		}
	})
}

// withoutKeys drops keys from every object of a JSON array.
func withoutKeys(t *testing.T, js []byte, keys ...string) []byte {
	t.Helper()
	var objs []map[string]any
	if err := json.Unmarshal(js, &objs); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	for _, o := range objs {
		for _, k := range keys {
			delete(o, k)
		}
	}
	out, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// resTextMatchesIproute2 compares `rdmatrace res <type> -o text` with
// `rdma res show <type>` line by line, while the workloads are stopped.
func resTextMatchesIproute2(t *testing.T) {
	for _, rt := range rdma.ResourceTypes {
		typ := rt.String()
		t.Run(typ, func(t *testing.T) {
			needResDump(t, typ)
			compareText(t, typ, run(t, "rdma", "res", "show", typ), run(t, *rdmatraceBin, "res", typ, "-o", "text"))
		})
	}
}

// compareText compares iproute2's text with rdmatrace's line by line, word
// by word (iproute2 leaves a blank at the end of each line).
func compareText(t *testing.T, typ string, theirs, ours []byte) {
	t.Helper()
	diffs := iproute2cmp.CompareText(typ, string(theirs), string(ours))
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) > 0 {
		t.Logf("rdma:\n%s\nrdmatrace:\n%s", theirs, ours)
	}
}
