package formats

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A QP left behind after the live table saw it go to ERR says so, in
// both views; one in RTS does not, and its group has no NOTE column.
func TestLeftQPsSayWhenTheyDiedInError(t *testing.T) {
	qp := func(lqpn uint32, st rdma.QPState) rdma.Finding {
		e := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
		e.Type, e.DevName, e.LQPN, e.QPType = rdma.ResQP, "rxe0", lqpn, rdma.QPTypeRC
		e.Owner = rdma.Owner{PID: 300, TID: 300, Comm: "app"}
		e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		e.SetState(uint8(st))
		return rdma.Finding{Report: rdma.LeakEnd, Time: time.Unix(0, 0).UTC(), Res: e, Age: 2 * time.Second}
	}
	dead, alive := qp(17, rdma.QPStateErr), qp(18, rdma.QPStateRTS)
	if js := string(AppendJSON(nil, FindingObject(&dead))); !strings.Contains(js, `"note":"died in error: last state ERR"`) {
		t.Errorf("JSON of a QP left in ERR: %s", js)
	}
	if js := string(AppendJSON(nil, FindingObject(&alive))); strings.Contains(js, `"note"`) {
		t.Errorf("JSON of a QP left in RTS: %s", js)
	}
	var b bytes.Buffer
	lw := NewLeakWriter(&b)
	for _, f := range []*rdma.Finding{&dead, &alive} {
		if err := lw.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	lw.Flush()
	out := b.String()
	if !strings.Contains(out, "NOTE") || !strings.Contains(out, "died in error: last state ERR") {
		t.Errorf("human report:\n%s", out)
	}
	b.Reset()
	lw = NewLeakWriter(&b)
	lw.Write(&alive)
	lw.Flush()
	if strings.Contains(b.String(), "NOTE") {
		t.Errorf("a group without a QP in error has a NOTE column:\n%s", b.String())
	}
}
