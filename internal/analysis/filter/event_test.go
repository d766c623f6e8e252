package filter

import (
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// trace's filters take iproute2's words, with the values `res` takes.
func TestEventFilterTakesIproute2Words(t *testing.T) {
	rping := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvHasRes | rdma.EvHasOwner | rdma.EvUser | rdma.EvHasDev,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Owner: rdma.Owner{PID: 1234, TID: 1235, Comm: "rping"}}}
	srpt := rdma.Event{Kind: rdma.EvDestroy, Flags: rdma.EvHasRes | rdma.EvHasDev, Resource: rdma.Resource{Type: rdma.ResCQ, DevName: "rxe1", Owner: rdma.Owner{KernName: "ib_srpt"}}}
	for _, tc := range []struct {
		words         string
		rping, srptOK bool
	}{
		{"", true, true},
		{"qp", true, false},
		{"qp pid 1234 comm rping", true, false},
		{"pid 1235", true, false}, // the thread
		{"pid 1000-1300,5", true, false},
		{"pid 1", false, false},
		{"comm ib_srpt", false, true},
		{"comm rping,ib_srpt", true, true},
		{"dev rxe1", false, true},
		{"res cq,qp event destroy", false, true},
		{"event create", true, false},
		{"cq dev rxe1", false, true},
	} {
		f, err := ParseEvents(strings.Fields(tc.words))
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		if got := f.Match(&rping); got != tc.rping {
			t.Errorf("%q on rping's QP: %v, want %v", tc.words, got, tc.rping)
		}
		if got := f.Match(&srpt); got != tc.srptOK {
			t.Errorf("%q on ib_srpt's CQ: %v, want %v", tc.words, got, tc.srptOK)
		}
	}
}

func TestBadEventFiltersSayWhatIsExpected(t *testing.T) {
	for words, want := range map[string]string{
		"colour red":   `unknown event filter "colour": valid filters are cgroup, comm, container, dev, event, job, pid, pod, res`,
		"queue":        `unknown resource type "queue"`,
		"pid x":        `filter pid: bad number "x"`,
		"pid 5-1":      `filter pid: bad range "5-1"`,
		"comm a,,b":    `filter comm: empty value in "a,,b"`,
		"event bogus":  `filter event: unknown event "bogus"`,
		"res qp,queue": `filter res: unknown resource type "queue"`,
	} {
		_, err := ParseEvents(strings.Fields(words))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", words, err, want)
		}
	}
}

// cm-error and failure select by what an event reports, beside the kinds.
func TestEventWordsCMErrorAndFailureSelectFailures(t *testing.T) {
	rejected := rdma.Event{Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM, CMEvent: rdma.CMRejected, Status: 8}
	established := rdma.Event{Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM, CMEvent: rdma.CMEvEstablished}
	qpErr := rdma.Event{Kind: rdma.EvModify, Flags: rdma.EvHasRes, Resource: rdma.Resource{Type: rdma.ResQP}}
	qpErr.SetState(uint8(rdma.QPStateErr))
	create := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvHasRes}
	for _, tc := range []struct {
		words                       string
		rej, est, qpErrOK, createOK bool
	}{
		{"event cm-error", true, false, false, false},
		{"event failure", true, false, true, false},
		{"event FAILURE", true, false, true, false},
		{"event failure,create", true, false, true, true},
		{"event cm-error event create", true, false, false, true},
		{"event cm_event_handler", true, true, false, false},
	} {
		f, err := ParseEvents(strings.Fields(tc.words))
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		for _, c := range []struct {
			name string
			e    *rdma.Event
			want bool
		}{{"REJECTED", &rejected, tc.rej}, {"ESTABLISHED", &established, tc.est}, {"QP to ERR", &qpErr, tc.qpErrOK}, {"create", &create, tc.createOK}} {
			if got := f.Match(c.e); got != c.want {
				t.Errorf("%q on %s: %v, want %v", tc.words, c.name, got, c.want)
			}
		}
	}
}

func TestAnUnknownEventWordNamesTheFailureWords(t *testing.T) {
	_, err := ParseEvents([]string{"event", "oops"})
	if err == nil || !strings.Contains(err.Error(), "or cm-error (rdma_cm events that report an error), failure (every failure)") {
		t.Errorf("error %v", err)
	}
}
