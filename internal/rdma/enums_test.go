package rdma

import (
	"strings"
	"testing"
)

// Every name a String method prints parses back to the same value, in any
// case, and an unknown name's error lists the valid ones.
func TestEnumNamesRoundTrip(t *testing.T) {
	type enum struct {
		kind   string
		values []uint32
		str    func(uint32) string
		parse  func(string) (uint32, error)
		list   string
	}
	seq := func(n uint32) []uint32 {
		v := make([]uint32, n)
		for i := range v {
			v[i] = uint32(i)
		}
		return v
	}
	enums := []enum{
		{"QP type", append(seq(7), 8, 9, 10, 0xFF),
			func(v uint32) string { return QPType(v).String() },
			func(s string) (uint32, error) { v, err := ParseQPType(s); return uint32(v), err },
			QPTypeNames()},
		{"QP state", seq(7),
			func(v uint32) string { return QPState(v).String() },
			func(s string) (uint32, error) { v, err := ParseQPState(s); return uint32(v), err },
			QPStateNames()},
		{"path-mig-state", seq(3),
			func(v uint32) string { return PathMigState(v).String() },
			func(s string) (uint32, error) { v, err := ParsePathMigState(s); return uint32(v), err },
			PathMigStateNames()},
		{"rdma_cm state", seq(11),
			func(v uint32) string { return CMState(v).String() },
			func(s string) (uint32, error) { v, err := ParseCMState(s); return uint32(v), err },
			CMStateNames()},
		{"port space", []uint32{0x0002, 0x013F, 0x0106, 0x0111},
			func(v uint32) string { return PortSpace(v).String() },
			func(s string) (uint32, error) { v, err := ParsePortSpace(s); return uint32(v), err },
			PortSpaceNames()},
		{"poll-ctx", seq(4),
			func(v uint32) string { return PollCtx(v).String() },
			func(s string) (uint32, error) { v, err := ParsePollCtx(s); return uint32(v), err },
			PollCtxNames()},
		{"SRQ type", seq(3),
			func(v uint32) string { return SRQType(v).String() },
			func(s string) (uint32, error) { v, err := ParseSRQType(s); return uint32(v), err },
			SRQTypeNames()},
		{"rdma_cm event", seq(16),
			func(v uint32) string { return CMEvent(v).String() },
			func(s string) (uint32, error) { v, err := ParseCMEvent(s); return uint32(v), err },
			CMEventNames()},
	}
	for _, e := range enums {
		seen := map[string]bool{}
		for _, v := range e.values {
			name := e.str(v)
			if name == "" || name == "UNKNOWN" || name == "---" || seen[name] {
				t.Errorf("%s %#x: name %q is empty, a placeholder or printed twice", e.kind, v, name)
				continue
			}
			seen[name] = true
			for _, s := range []string{name, strings.ToLower(name)} {
				got, err := e.parse(s)
				if err != nil || got != v {
					t.Errorf("%s: parse(%q) = %#x, %v; want %#x", e.kind, s, got, err, v)
				}
			}
		}
		_, err := e.parse("no-such-value")
		if err == nil {
			t.Errorf("%s: an unknown name parsed", e.kind)
			continue
		}
		if !strings.Contains(err.Error(), `"no-such-value"`) || !strings.Contains(err.Error(), e.list) {
			t.Errorf("%s: error %q does not name the input and list %q", e.kind, err, e.list)
		}
	}
}

// The kernel's numbers, not iproute2's readings of them, decide the names.
func TestEnumKernelValues(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{PortSpace(0x013F).String(), "IB"}, // iproute2 prints IPoIB here
		{PortSpace(0x0002).String(), "IPoIB"},
		{PortSpace(0x0106).String(), "TCP"},
		{PortSpace(0x0111).String(), "UDP"},
		{PortSpace(0x0999).String(), "---"},
		{PollCtx(0).String(), "SOFTIRQ"}, // iproute2 6.1 prints DIRECT for 0
		{PollCtx(3).String(), "DIRECT"},
		{QPType(2).String(), "RC"},
		{QPType(4).String(), "UD"},
		{QPType(7).String(), "UNKNOWN"}, // a gap in ib_qp_type
		{QPType(0xFF).String(), "DRIVER"},
		{QPState(3).String(), "RTS"},
		{QPState(9).String(), "UNKNOWN"},
		{CMState(8).String(), "LISTEN"},
		{CMEvent(9).String(), "ESTABLISHED"},
		{CMEvent(42).String(), "EVENT_42"},
		{ResType(3).String(), "cm_id"},
		{ResType(9).String(), "restrack-9"},
		{NodeType(1).String(), "ca"},
		{PortState(4).String(), "ACTIVE"},
		{PhysState(5).String(), "LINK_UP"},
		{PhysState(8).String(), "UNKNOWN"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestParseResType(t *testing.T) {
	for in, want := range map[string]ResType{
		"qp": ResQP, "QP": ResQP, "cm_id": ResCMID, "cm": ResCMID, "c": 0, "s": ResSRQ, "ctx": ResCTX, "m": ResMR,
	} {
		got, err := ParseResType(in)
		if in == "c" { // cq, cm_id and ctx: ambiguous
			if err == nil {
				t.Errorf("ParseResType(%q) = %v, want an error for an ambiguous prefix", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseResType(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	_, err := ParseResType("")
	if err == nil || !strings.Contains(err.Error(), "pd, cq, qp, cm_id, mr, ctx, srq") {
		t.Errorf("ParseResType(\"\") error %v does not list the types", err)
	}
}

func TestParseEventKind(t *testing.T) {
	got, err := ParseEventKind("CREATE")
	if err != nil || len(got) != 1 || got[0] != EvCreate {
		t.Errorf("ParseEventKind(CREATE) = %v, %v", got, err)
	}
	cm, err := ParseEventKind("cm")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range cm {
		if !strings.HasPrefix(k.String(), "cm_") {
			t.Errorf("cm includes %v", k)
		}
	}
	if len(cm) < 10 {
		t.Errorf("cm names %d events, want every rdma_cm one", len(cm))
	}
	if _, err := ParseEventKind("bogus"); err == nil || !strings.Contains(err.Error(), "dev_unregister") {
		t.Errorf("ParseEventKind(bogus) error %v does not list the events", err)
	}
}

func TestParseResTypeTellsAmbiguousFromUnknown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"c", `ambiguous resource type "c": it could be cq, cm_id, ctx`},
		{"cm", ""}, // cm_id
		{"x", `unknown resource type "x": valid types are`},
	} {
		_, err := ParseResType(tc.in)
		if tc.want == "" {
			if err != nil {
				t.Errorf("ParseResType(%q): %v", tc.in, err)
			}
		} else if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseResType(%q) = %v, want %q...", tc.in, err, tc.want)
		}
	}
}
