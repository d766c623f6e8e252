package records

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// flatten is what VictoriaLogs makes of a record's attributes: every
// value as text, arrays as JSON.
func flatten(node string, t time.Time, kvs []attribute.KeyValue) Fields {
	f := Fields{KeyNode: node, KeyTime: t.UTC().Format(time.RFC3339Nano)}
	for _, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.INT64:
			f[string(kv.Key)] = strconv.FormatInt(kv.Value.AsInt64(), 10)
		case attribute.BOOL:
			f[string(kv.Key)] = strconv.FormatBool(kv.Value.AsBool())
		case attribute.STRINGSLICE:
			b, _ := json.Marshal(kv.Value.AsStringSlice())
			f[string(kv.Key)] = string(b)
		default:
			f[string(kv.Key)] = kv.Value.Emit()
		}
	}
	return f
}

// A QP record reads back as it was written, through a store's text.
func TestQPRecordsRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 123456789, time.UTC)
	for _, q := range []rdma.QPIdentity{
		{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 17, Type: rdma.QPTypeRC, Created: t0, State: rdma.QPStateRTS,
			LocalGID: netip.MustParseAddr("::ffff:10.98.1.2"), RemoteGID: netip.MustParseAddr("fe80::5054:ff:fe00:9801"), RemoteQPN: 18, HasRemoteQPN: true,
			Owner:       rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{Cgroup: "/a", Runtime: "containerd", ContainerID: "3f", PodUID: "12", NetNS: 4026531840}},
			Transitions: []rdma.QPTransition{{State: rdma.QPStateRTR, At: t0.Add(2)}, {State: rdma.QPStateErr, At: t0.Add(3)}},
			Change:      rdma.QPEnded, Time: t0.Add(time.Second), Fate: rdma.FateSignal, Ended: t0.Add(time.Second), Signal: 9},
		{Node: "node-b", Dev: "rxe0", QPN: 1, Type: rdma.QPTypeGSI, Created: t0, CreatedSeen: true, Owner: rdma.Owner{KernName: "ib_core"},
			Change: rdma.QPExists, Time: t0},
		{Node: "n", Dev: "mlx5_0", Port: 2, QPN: 5, Type: rdma.QPTypeUD, Created: t0, Owner: rdma.Owner{PID: 5, TID: 5, Comm: "x"},
			Change: rdma.QPEnded, Time: t0, Fate: rdma.FateOwnerExit, Ended: t0, ExitCode: 3, HasExit: true},
	} {
		got, err := ParseQP(flatten(q.Node, q.Time, QPAttributes(nil, &q)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, q) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, q)
		}
	}
}

func TestGIDRecordsRoundTrip(t *testing.T) {
	r := rdma.GIDRecord{Node: "node-b", Time: time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC),
		GIDEntry: rdma.GIDEntry{DevName: "rxe0", Port: 1, Index: 1, GID: netip.MustParseAddr("::ffff:10.98.1.2"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "eth0.5", HasVLAN: true, VLAN: 5}}
	got, err := ParseGID(flatten(r.Node, r.Time, GIDAttributes(nil, &r.GIDEntry)))
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("read back %+v, %v\nwant %+v", got, err, r)
	}
}

// A record missing what names it, or with a value that is not what its
// field holds, is an error naming the field and the value.
func TestABadRecordSaysWhichField(t *testing.T) {
	good := func() Fields {
		q := rdma.QPIdentity{Node: "b", Dev: "rxe0", QPN: 1, Created: time.Unix(1, 0), Change: rdma.QPCreated, Time: time.Unix(1, 0)}
		return flatten(q.Node, q.Time, QPAttributes(nil, &q))
	}
	for key, tc := range map[string]struct{ value, want string }{
		KeyQPN:         {"seventeen", `field rdma.qp.num: expected a number, found "seventeen"`},
		KeyCreated:     {"", `field rdma.qp.created: expected a time in ns since 1970`},
		KeyFate:        {"eaten", `field rdma.qp.fate: expected alive, destroyed`},
		KeyRemoteGID:   {"10.0.0.1%eth0", `field rdma.remote.gid: expected a GID`},
		KeyTransitions: {`["RTS yesterday"]`, `field rdma.qp.transitions: expected STATE TIME`},
		KeyNode:        {"", `field host.name: expected a value`},
	} {
		f := good()
		f[key] = tc.value
		if _, err := ParseQP(f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want %q", key, tc.value, err, tc.want)
		}
	}
	f := good()
	delete(f, KeyDevice)
	if _, err := ParseQP(f); err == nil || !strings.Contains(err.Error(), "rdma.device") {
		t.Errorf("no device: %v", err)
	}
}
