package formats

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The why view escapes what processes and the kernel name (a comm, a
// device) in its human lines; -j has the same words, JSON-escaped; an
// empty run says so.
func TestWhyViewEscapesNamesAndSaysWhenNothingWentWrong(t *testing.T) {
	e := rdma.Event{Kind: rdma.EvModify, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	e.Type, e.DevName, e.LQPN = rdma.ResQP, "rxe\u202e0", 17
	e.Owner = rdma.Owner{PID: 7, TID: 7, Comm: "rp\x1bing"}
	e.Resource.Has |= rdma.HasLQPN
	e.SetState(uint8(rdma.QPStateErr))
	f, _ := e.Failure()
	l := why.Line{Time: time.Unix(0, 0), Res: e, What: f.What, Severity: f.Severity, Why: f.Why + " on " + e.DevName}
	var b bytes.Buffer
	w := NewWhyWriter(&b)
	if err := w.Write(l); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if out := b.String(); strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, "qp 17") || !strings.Contains(out, "QP_ERR: QP moved to ERR") {
		t.Errorf("human view %q", out)
	}
	b.Reset()
	js := NewWhySink(&b, FormatNDJSON)
	js.Write(l)
	js.Close()
	if out := b.String(); strings.ContainsAny(out, "\x1b") || !strings.Contains(out, `"what":"QP_ERR","severity":"warn"`) {
		t.Errorf("-j %q", out)
	}
	b.Reset()
	w = NewWhyWriter(&b)
	w.Close()
	if b.String() != "nothing went wrong\n" {
		t.Errorf("empty run: %q", b.String())
	}
}
