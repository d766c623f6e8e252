package formats

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"testing"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// sample is one resource of every type, shaped like what rxe reports during
// an rping run, plus the awkward cases: no port, a hostile comm, withheld
// keys, IPv6, an SRQ with ranges.
func sample() []rdma.Resource {
	return []rdma.Resource{
		{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: 1, QPType: rdma.QPTypeGSI, QPState: rdma.QPStateRTS, SQPSN: 38,
			Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType | rdma.HasState | rdma.HasSQPSN, Owner: rdma.Owner{KernName: "ib_core"}},
		{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: 17, RQPN: 18, QPType: rdma.QPTypeRC, QPState: rdma.QPStateRTS,
			RQPSN: 12095070, SQPSN: 2795781, PathMig: 0, PDN: 25,
			Has:   rdma.HasPort | rdma.HasLQPN | rdma.HasRQPN | rdma.HasQPType | rdma.HasState | rdma.HasRQPSN | rdma.HasSQPSN | rdma.HasPathMig | rdma.HasPDN | rdma.HasPID,
			Owner: rdma.Owner{PID: 6433, Comm: "rping"}},
		{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", LQPN: 19, QPType: rdma.QPTypeRC, QPState: rdma.QPStateReset, PDN: 26,
			Has:   rdma.HasLQPN | rdma.HasQPType | rdma.HasState | rdma.HasSQPSN | rdma.HasPDN | rdma.HasPID,
			Owner: rdma.Owner{PID: 6500, Comm: "evil\x1b]0;title\a"}},
		{Type: rdma.ResCMID, DevIndex: 1, DevName: "rxe0", Port: 1, CMIDN: 22, CMState: rdma.CMListen, PS: rdma.PSTCP,
			Src: netip.MustParseAddrPort("10.99.0.1:7174"), Dst: netip.MustParseAddrPort("0.0.0.0:0"),
			Has:   rdma.HasPort | rdma.HasCMIDN | rdma.HasState | rdma.HasPS | rdma.HasPID | rdma.HasSrcAddr | rdma.HasDstAddr,
			Owner: rdma.Owner{PID: 6429, Comm: "rping"}},
		{Type: rdma.ResCMID, DevIndex: 1, DevName: "rxe0", Port: 1, CMIDN: 23, LQPN: 17, QPType: rdma.QPTypeRC, CMState: rdma.CMConnect, PS: rdma.PSIB,
			Src: netip.MustParseAddrPort("[fe80::1]:52459"), Dst: netip.MustParseAddrPort("[::ffff:10.99.0.1]:7174"),
			Has:   rdma.HasPort | rdma.HasCMIDN | rdma.HasLQPN | rdma.HasQPType | rdma.HasState | rdma.HasPS | rdma.HasPID | rdma.HasSrcAddr | rdma.HasDstAddr,
			Owner: rdma.Owner{PID: 6433, Comm: "rping"}},
		{Type: rdma.ResCQ, DevIndex: 0, DevName: "rxe_lo", CQN: 1, CQE: 1023, Users: 2, PollCtx: 2, DIM: false,
			Has: rdma.HasCQN | rdma.HasCQE | rdma.HasUsers | rdma.HasPollCtx | rdma.HasDIM, Owner: rdma.Owner{KernName: "ib_core"}},
		{Type: rdma.ResMR, DevIndex: 1, DevName: "rxe0", MRN: 4, RKey: 0x1a2b, LKey: 0x1a2b, MRLen: 4096, PDN: 25,
			Has: rdma.HasMRN | rdma.HasRKey | rdma.HasLKey | rdma.HasMRLen | rdma.HasPDN | rdma.HasPID, Owner: rdma.Owner{PID: 6433, Comm: "rping"}},
		{Type: rdma.ResMR, DevIndex: 1, DevName: "rxe0", MRN: 5, MRLen: 64, PDN: 25, Withheld: rdma.HasRKey | rdma.HasLKey,
			Has: rdma.HasMRN | rdma.HasMRLen | rdma.HasPDN | rdma.HasPID, Owner: rdma.Owner{PID: 6433}},
		{Type: rdma.ResPD, DevIndex: 1, DevName: "rxe0", PDN: 0, LocalDMALKey: 0x1d3, Users: 1,
			Has: rdma.HasPDN | rdma.HasLocalDMALKey | rdma.HasUsers, Owner: rdma.Owner{KernName: "ib_core"}},
		{Type: rdma.ResCTX, DevIndex: 1, DevName: "rxe0", CTXN: 14, Has: rdma.HasCTXN | rdma.HasPID, Owner: rdma.Owner{PID: 6429, Comm: "rping", Place: podPlace}},
		{Type: rdma.ResSRQ, DevIndex: 1, DevName: "rxe0", SRQN: 3, SRQType: 0, PDN: 2, CQN: 4,
			QPs: []rdma.QPRange{{Min: 5, Max: 5}, {Min: 10, Max: 20}},
			Has: rdma.HasSRQN | rdma.HasSRQType | rdma.HasPDN | rdma.HasCQN | rdma.HasPID, Owner: rdma.Owner{PID: 7000, Comm: "ib_srq_pp"}},
	}
}

// podPlace is a process in a Kubernetes pod's container, in pid and
// network namespaces of its own.
var podPlace = &rdma.Placement{
	Cgroup:      "/kubepods.slice/kubepods-pod0d1e2f3a_4b5c_6d7e_8f90_a1b2c3d4e5f6.slice/cri-containerd-4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b.scope",
	Runtime:     "containerd",
	ContainerID: "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b",
	PodUID:      "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", NSPid: 7, NetNS: 4026532301,
}

func TestResourceJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	jw := NewJSONArrayWriter(&buf)
	for _, r := range sample() {
		if err := jw.Write(ResourceObject(&r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	var parsed []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, buf.Bytes())
	}
	if bytes.Contains(buf.Bytes(), []byte{0x1b}) {
		t.Error("JSON output carries a raw escape character")
	}
	golden.Check(t, "../testdata/formats/resources.json", buf.Bytes())
}

func TestResourceNDJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	nw := NewNDJSONWriter(&buf)
	for _, r := range sample() {
		if err := nw.Write(ResourceObject(&r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../testdata/formats/resources.ndjson", buf.Bytes())
}

func TestResourceTextGolden(t *testing.T) {
	var buf bytes.Buffer
	tw := NewTextWriter(&buf)
	for _, r := range sample() {
		if err := tw.Resource(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../testdata/formats/resources.txt", buf.Bytes())
}

func TestResourceTableGolden(t *testing.T) {
	var buf bytes.Buffer
	all := sample()
	for _, typ := range rdma.ResourceTypes {
		var rs []rdma.Resource
		for _, r := range all {
			if r.Type == typ {
				rs = append(rs, r)
			}
		}
		if err := ResourceTable(typ, rs).Render(&buf); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("\n")
	}
	noControls(t, buf.Bytes())
	golden.Check(t, "../testdata/formats/resources.table", buf.Bytes())
}

func TestSummaryAndDeviceObjects(t *testing.T) {
	s := rdma.Summary{DevIndex: 1, DevName: "rxe0", Counts: []rdma.Count{{Name: "pd", Value: 5}, {Name: "cq", Value: 3}}}
	got := string(AppendJSON(nil, SummaryObject(&s)))
	if want := `{"ifindex":1,"ifname":"rxe0","pd":5,"cq":3}`; got != want {
		t.Errorf("summary = %s, want %s", got, want)
	}
	on := true
	d := rdma.Device{Index: 2, Name: "rxe0", NodeType: 1, NodeGUID: 0x505400fffe123456, SysImageGUID: 0x505400fffe123456, Ports: 1, DIM: &on, Protocol: "roce", CapFlags: 1<<1 | 1<<21}
	got = string(AppendJSON(nil, DeviceObject(&d, true)))
	if want := `{"ifindex":2,"ifname":"rxe0","node_type":"ca","node_guid":"5054:00ff:fe12:3456","sys_image_guid":"5054:00ff:fe12:3456","adaptive-moderation":true,"protocol":"roce","ports":1,"caps":["BAD_PKEY_CNTR","MEM_MGT_EXTENSIONS"]}`; got != want {
		t.Errorf("device = %s\nwant      %s", got, want)
	}
}

func TestJSONStringEscapesEveryControlCharacter(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      `"plain"`,
		"q\"b\\":     `"q\"b\\"`,
		"\x1b[31m":   `"\u001b[31m"`,
		"\x7f\u009b": `"\u007f\u009b"`,
		"\xff":       `"\ufffd"`,
		"a\u2028b":   `"a\u2028b"`,
		"tab\tnl\n":  `"tab\tnl\n"`,
		"ünï":        `"ünï"`,
		// D13: bidi and invisible characters, escaped as JSON escapes.
		"\u202egnipr":    `"\u202egnipr"`,
		"a\u200b\ufeffb": `"a\u200b\ufeffb"`,
		"\u2066x\u2069":  `"\u2066x\u2069"`,
		"tag\U000e0041":  `"tag\udb40\udc41"`,
	} {
		got := string(AppendJSONString(nil, in))
		if got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%s is not a valid JSON string: %v", got, err)
		}
	}
}

func FuzzJSONStringIsValidAndTerminalSafe(f *testing.F) {
	f.Add("\x1b]0;x\a")
	f.Add("\u202egnipr\U000e0041")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("invalid JSON for %q: %s", s, b)
		}
		terminalSafe(t, s, string(b))
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q comes back from %s as %q", s, b, back)
		}
	})
}
