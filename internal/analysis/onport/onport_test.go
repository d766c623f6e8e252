package onport

import (
	"errors"
	"slices"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

func resources() []rdma.Resource {
	rping := rdma.Owner{PID: 212, TID: 212, Comm: "rping"}
	cm := rdma.Owner{KernName: "rdma_cm"}
	qp := func(dev string, port uint32, o rdma.Owner) rdma.Resource {
		return rdma.Resource{Type: rdma.ResQP, DevName: dev, Port: port, Has: rdma.HasPort, Owner: o}
	}
	return []rdma.Resource{
		qp("rxe0", 1, rping), qp("rxe0", 1, rping), qp("rxe0", 2, rping), qp("rxe0", 1, cm), qp("rxe1", 1, rping),
		{Type: rdma.ResCMID, DevName: "rxe0", Port: 1, Has: rdma.HasPort, Owner: rping},
		{Type: rdma.ResCQ, DevName: "rxe0", Owner: rping}, {Type: rdma.ResCQ, DevName: "rxe0", Owner: rping},
		{Type: rdma.ResPD, DevName: "rxe0", Owner: rping}, {Type: rdma.ResCQ, DevName: "rxe0", Owner: cm},
		{Type: rdma.ResMR, DevName: "rxe1", Owner: rping},
	}
}

func TestSummaryCountsThePortsObjectsPerOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		dev  string
		port uint32
		want []string
	}{
		{"port 1 of rxe0: its QPs and cm_ids, the device's CQs and PDs", "rxe0", 1,
			[]string{"1 qp, 1 cq of [rdma_cm]", "2 qp, 1 cm_id, 2 cq, 1 pd of rping[212]"}},
		{"port 2: one QP there, the device's others", "rxe0", 2, []string{"1 cq of [rdma_cm]", "1 qp, 2 cq, 1 pd of rping[212]"}},
		{"the whole device (port 0)", "rxe0", 0, []string{"1 qp, 1 cq of [rdma_cm]", "3 qp, 1 cm_id, 2 cq, 1 pd of rping[212]"}},
		{"another device", "rxe1", 1, []string{"1 qp, 1 mr of rping[212]"}},
		{"a device with nothing: empty, not nil", "siw0", 1, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summary(resources(), tc.dev, tc.port)
			if !slices.Equal(got, tc.want) || got == nil {
				t.Errorf("Summary = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestLookupAnswersPortEventsOnly(t *testing.T) {
	calls := 0
	l := &Lookup{take: func(nldev.Owners) ([]rdma.Resource, error) { calls++; return resources(), nil }}
	port := rdma.Event{Kind: rdma.EvAsync, Resource: rdma.Resource{DevName: "rxe0", Port: 1, Has: rdma.HasPort}, Flags: rdma.EvHasDev}
	if got := l.Names(&port); len(got) != 2 {
		t.Errorf("port event: %q", got)
	}
	qp := port
	qp.Type, qp.Flags = rdma.ResQP, qp.Flags|rdma.EvHasRes
	create := port
	create.Kind = rdma.EvCreate
	for _, e := range []*rdma.Event{&qp, &create} {
		if got := l.Names(e); got != nil {
			t.Errorf("%s of %s: %q, want nil", e.Kind, e.Type, got)
		}
	}
	if calls != 1 {
		t.Errorf("%d listings, want 1 (for the port event)", calls)
	}
	l.take = func(nldev.Owners) ([]rdma.Resource, error) { return nil, errors.New("no netlink") }
	if got := l.Names(&port); got != nil {
		t.Errorf("without netlink: %q, want nil (not looked up)", got)
	}
}
