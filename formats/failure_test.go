package formats

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// failureSample is what the tracer reports when a port flaps under a
// connected rping and when a peer dies mid-transfer: the port's events
// with the objects on it (and one looked up with nothing there, and one
// not looked up), a user QP's async event with its peer, rxe moving a QP
// to ERR, its first error completion, and the counts at its destroy.
func failureSample() []rdma.Event {
	at := func(us int64) time.Time {
		return time.Unix(1700000000, 0).Add(time.Duration(us) * time.Microsecond).UTC()
	}
	ip := rdma.Owner{PID: 300, TID: 300, Comm: "ip"}
	rping := rdma.Owner{PID: 212, TID: 212, Comm: "rping"}
	peer := netip.MustParseAddr("::ffff:10.99.0.2")
	qp := rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", DevIndex: 1, Port: 1, LQPN: 17, QPType: rdma.QPTypeRC,
		Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType, Owner: rping}
	qpFlags := rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser
	port := rdma.Resource{DevName: "rxe0", DevIndex: 1, Port: 1, Has: rdma.HasPort}
	kworker := rdma.Owner{PID: 40, TID: 40, Comm: "kworker/0:2"}
	return []rdma.Event{
		{Mono: 1000, Time: at(1), Kind: rdma.EvAsync, Resource: port, Flags: rdma.EvHasDev, Actor: ip,
			Fault: rdma.Fault{IBEvent: rdma.IBEventPortErr, OnPort: []string{"2 QP, 2 CQ, 1 PD, 2 cm_id of rping[212]", "1 QP, 1 CQ of [rdma_cm]"}}},
		{Mono: 2000, Time: at(2), Kind: rdma.EvAsync, Resource: qp, ID: 17, Flags: qpFlags, Actor: kworker,
			Fault: rdma.Fault{IBEvent: 1, PeerGID: peer, PeerQPN: 18}},
		{Mono: 3000, Time: at(3), Kind: rdma.EvQPError, Resource: qp, ID: 17, Flags: qpFlags, Actor: kworker,
			Fault: rdma.Fault{Report: rdma.QPErrFirst, WCStatus: 12, Count: 1, PeerGID: peer, PeerQPN: 18}},
		{Mono: 4000, Time: at(4), Kind: rdma.EvQPError, Resource: qp, ID: 17, Flags: qpFlags, Actor: kworker,
			Fault: rdma.Fault{Report: rdma.QPErrDriver, PeerGID: peer, PeerQPN: 18}},
		{Mono: 5000, Time: at(5), Kind: rdma.EvQPError, Resource: qp, ID: 17, Flags: qpFlags, Actor: rping,
			Fault: rdma.Fault{Report: rdma.QPErrTotal, WCStatus: rdma.WCFlushErr, Count: 15, PeerGID: peer, PeerQPN: 18}},
		{Mono: 6000, Time: at(6), Kind: rdma.EvAsync, Resource: port, Flags: rdma.EvHasDev, Actor: ip,
			Fault: rdma.Fault{IBEvent: rdma.IBEventPortActive, OnPort: []string{}}},
		{Mono: 7000, Time: at(7), Kind: rdma.EvAsync, Resource: rdma.Resource{DevName: "rxe0", DevIndex: 1}, Flags: rdma.EvHasDev, Actor: ip,
			Fault: rdma.Fault{IBEvent: 18, OnPort: []string{"a\x1b[2Jb[9]"}}},
	}
}

func TestFailureEventsGolden(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // the human view prints local time
	defer func() { time.Local = local }()
	var nd, txt bytes.Buffer
	w := NewNDJSONWriter(&nd)
	for _, e := range failureSample() {
		if err := w.Write(EventObject(&e)); err != nil {
			t.Fatal(err)
		}
		txt.WriteString(EventLine(&e) + "\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../testdata/formats/failures.ndjson", nd.Bytes())
	golden.Check(t, "../testdata/formats/failures.txt", txt.Bytes())
	if bytes.ContainsAny(txt.Bytes(), "\x1b") || bytes.ContainsAny(nd.Bytes(), "\x1b") {
		t.Error("a control character reached the output")
	}
}
