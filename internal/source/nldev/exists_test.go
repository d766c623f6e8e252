package nldev

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestExistsEventOwnedByAThreadNamesItsProcess(t *testing.T) {
	root := t.TempDir()
	for pid, files := range map[string]map[string]string{
		"812": {"comm": "rping\n", "status": "Tgid:\t812\n", "cgroup": "0::/user.slice\n"},
		"813": {"comm": "rping-worker\n", "status": "Tgid:\t812\n", "cgroup": "0::/user.slice\n"},
	} {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(root, pid, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	x := enrich.New(enrich.Options{ProcRoot: root, CgroupRoot: t.TempDir()})
	qp := rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", LQPN: 17, Has: rdma.HasPID | rdma.HasLQPN, Owner: rdma.Owner{PID: 813}}
	e := ExistsEvent(&qp, time.Unix(1, 0), x)
	if e.Kind != rdma.EvExists || !e.Has(rdma.EvHasOwner) || !e.Has(rdma.EvUser) {
		t.Fatalf("event %+v, want an exists event of a user object", e)
	}
	if o := e.Owner; o.PID != 812 || o.TID != 813 || o.Comm != "rping-worker" || o.Place == nil || o.Place.Cgroup != "/user.slice" {
		t.Errorf("owner %+v (place %+v), want process 812, thread 813, the thread's comm, the process's place", o, o.Place)
	}
	kern := rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", LQPN: 1, Has: rdma.HasLQPN, Owner: rdma.Owner{KernName: "ib_core"}}
	if e := ExistsEvent(&kern, time.Unix(1, 0), x); e.Has(rdma.EvHasOwner) || e.Owner != (rdma.Owner{KernName: "ib_core"}) {
		t.Errorf("kernel object's event owner %+v, flags %#x", e.Owner, e.Flags)
	}
}

// An exists event is the dumped resource itself: every attribute and its
// presence as netlink gave them, no copy that could drop one.
func TestExistsEventCarriesTheDumpedResource(t *testing.T) {
	x := enrich.New(enrich.Options{ProcRoot: t.TempDir(), CgroupRoot: t.TempDir()})
	cm := rdma.Resource{Type: rdma.ResCMID, DevName: "siw0", DevIndex: 3, Port: 1, CMIDN: 9, CMState: rdma.CMListen, PS: rdma.PSTCP,
		Src: netip.MustParseAddrPort("10.99.1.1:7400"), Has: rdma.HasPort | rdma.HasCMIDN | rdma.HasState | rdma.HasPS | rdma.HasSrcAddr,
		Owner: rdma.Owner{KernName: "rdma_cm"}}
	e := ExistsEvent(&cm, time.Unix(1, 0), x)
	want := cm
	if !reflect.DeepEqual(e.Resource, want) {
		t.Errorf("event's resource\n %+v\nwant\n %+v", e.Resource, want)
	}
	if e.ID != 9 || e.State() != uint8(rdma.CMListen) || !e.Given(rdma.HasPort|rdma.HasState|rdma.HasSrcAddr) || e.Given(rdma.HasDstAddr) {
		t.Errorf("event %+v: want id 9, LISTEN, port, state and source but no destination", e)
	}
}
