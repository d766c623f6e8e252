package formats

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// gid's view: the table at once, the changes held until Flush.
func TestGIDViewHoldsChangesUntilFlush(t *testing.T) {
	var out bytes.Buffer
	v := NewGIDView(&out, FormatNDJSON)
	g := rdma.GIDEntry{DevName: "rxe0", Port: 1, Index: 1}
	if err := v.Table([]rdma.GIDEntry{g}); err != nil {
		t.Fatal(err)
	}
	table := out.Len()
	if table == 0 || !strings.Contains(out.String(), `"rxe0"`) {
		t.Fatalf("table %q", out.String())
	}
	if err := v.Change(time.Unix(0, 0), "added", &g); err != nil {
		t.Fatal(err)
	}
	if out.Len() != table {
		t.Errorf("a change was written before Flush: %q", out.String()[table:])
	}
	if err := v.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String()[table:]; !strings.Contains(got, `"change":"added"`) || !strings.HasSuffix(got, "\n") {
		t.Errorf("change after Flush: %q", got)
	}
}
