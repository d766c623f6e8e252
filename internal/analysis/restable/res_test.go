package restable

import (
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// nonZero sets v to a value that is not its zero value.
func nonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		nonZero(t, v.Index(0))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Struct:
		switch v.Interface().(type) {
		case time.Time:
			v.Set(reflect.ValueOf(time.Unix(1, 2)))
		case netip.AddrPort:
			v.Set(reflect.ValueOf(netip.MustParseAddrPort("10.0.0.1:7")))
		default:
			nonZero(t, v.Field(0))
		}
	default:
		t.Fatalf("no value for a %v", v.Type())
	}
}

// The parts of an event that no resource event carries, and the table
// does not keep.
var parts = []string{"Span", "PortBusy", "OffCPU", "SMCFallback", "SMC", "QPAttr", "Fault", "CallFail", "GID"}

// Every field of an event the table keeps comes back from Res: each of
// rdma.Resource's and rdma.Event's, set alone, survives resOf and Event.
// A field added to either must be kept or named a part here.
func TestResKeepsEveryFieldOfAnEvent(t *testing.T) {
	et := reflect.TypeFor[rdma.Event]()
	rt := reflect.TypeFor[rdma.Resource]()
	var dropped []string
	for i := range et.NumField() {
		f := et.Field(i)
		if f.Name == "Resource" {
			for j := range rt.NumField() {
				var e rdma.Event
				nonZero(t, reflect.ValueOf(&e.Resource).Elem().Field(j))
				res := resOf(&e)
				if got := res.Event(); !reflect.DeepEqual(*got, e) {
					t.Errorf("Resource.%s: got %+v, want %+v", rt.Field(j).Name, got.Resource, e.Resource)
				}
			}
			continue
		}
		var e rdma.Event
		nonZero(t, reflect.ValueOf(&e).Elem().Field(i))
		res := resOf(&e)
		if got := res.Event(); !reflect.DeepEqual(*got, e) {
			dropped = append(dropped, f.Name)
		}
	}
	if !slices.Equal(dropped, parts) {
		t.Errorf("fields dropped %v, want the parts %v", dropped, parts)
	}
}

// A table entry is a few hundred bytes, not an event's nine hundred.
func TestResIsAThirdOfAnEvent(t *testing.T) {
	if r, e := reflect.TypeFor[Res]().Size(), reflect.TypeFor[rdma.Event]().Size(); r*2 > e {
		t.Errorf("Res is %d bytes, an event %d", r, e)
	}
}

// BenchmarkTableMemory fills a table with 200 000 resources as a
// recording's creates give them (owners and their places shared, as
// replay gives them), and reports the heap each entry takes.
//
//	go test -run '^$' -bench TableMemory -benchtime 1x ./internal/analysis/restable/
func BenchmarkTableMemory(b *testing.B) {
	const n = 200_000
	place := &rdma.Placement{Cgroup: "/kubepods/pod7/c1", NetNS: 4026531840}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := New(n)
		for i := range n {
			e := rdma.Event{Kind: rdma.EvCreate, Time: time.Unix(1_800_000_000, int64(i)), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser}
			e.Type, e.DevName, e.ID = []rdma.ResType{rdma.ResPD, rdma.ResCQ, rdma.ResMR, rdma.ResQP}[i%4], "rxe0", uint32(i)
			if e.Type == rdma.ResQP {
				e.LQPN, e.QPType, e.Port = uint32(i), rdma.QPTypeRC, 1
				e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType | rdma.HasPort
			}
			e.Owner = rdma.Owner{PID: uint32(1000 + i%5000), TID: uint32(1000 + i%5000), Comm: "app", Place: place}
			tab.Apply(&e)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entry")
		runtime.KeepAlive(tab)
	}
}
