package debugfs_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/debugfs"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestWriteLegacyPrintsTheRdmastatLayout(t *testing.T) {
	rs := []rdma.Resource{
		{Type: rdma.ResCMID, DevName: "rxe0", Has: rdma.HasSrcAddr | rdma.HasPS | rdma.HasState | rdma.HasPID,
			Src: netip.MustParseAddrPort("0.0.0.0:7174"), PS: rdma.PSTCP, CMState: rdma.CMListen,
			Owner: rdma.Owner{PID: 812, Comm: "rping"}},
		{Type: rdma.ResCMID, DevName: "rxe0", Port: 1, DevType: "ETH", Netdev: "enp0s3",
			Has: rdma.HasPort | rdma.HasDevType | rdma.HasNetdev | rdma.HasSrcAddr | rdma.HasDstAddr | rdma.HasPS | rdma.HasState | rdma.HasLQPN | rdma.HasPID,
			Src: netip.MustParseAddrPort("[fe80::1]:7174"), SrcZone: "2", Dst: netip.MustParseAddrPort("[fe80::2]:40000"), DstZone: "2",
			PS: rdma.PSTCP, CMState: rdma.CMConnect, LQPN: 17, Owner: rdma.Owner{PID: 812, Comm: "my \x1b[31mrping"}},
		{Type: rdma.ResCMID, DevName: "rxe0", Has: rdma.HasSrcAddr | rdma.HasPS | rdma.HasState,
			Src: netip.MustParseAddrPort("0.0.0.0:4420"), PS: rdma.PSTCP, CMState: rdma.CMListen,
			Owner: rdma.Owner{KernName: "nvmet_rdma"}},
		{Type: rdma.ResQP, DevName: "rxe0", LQPN: 17}, // not an rdma_cm ID: skipped
	}
	var b bytes.Buffer
	if err := debugfs.WriteLegacy(&b, rs, []string{"PID", "COMM"}); err != nil {
		t.Fatal(err)
	}
	want := `TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM
rxe0 0 0.0.0.0:7174 TCP LISTEN 0 812 rping
ETH rxe0 1 enp0s3 [fe80::1%2]:7174 [fe80::2%2]:40000 TCP CONNECT 17 812 my\x20\x1b[31mrping
rxe0 0 0.0.0.0:4420 TCP LISTEN 0 [nvmet_rdma]
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// And it reads back.
	recs, lerrs := read(t, b.Bytes())
	if len(lerrs) != 0 || len(recs) != 3 {
		t.Fatalf("read back %d records, errors %v", len(recs), lerrs)
	}
	for i := range recs {
		if !sameResource(&recs[i].Res, &rs[i]) {
			t.Errorf("record %d read back as\n%+v\nwas\n%+v", i, recs[i].Res, rs[i])
		}
	}
}

func TestWriteLegacyWithNoIDsWritesTheHeader(t *testing.T) {
	var b bytes.Buffer
	if err := debugfs.WriteLegacy(&b, nil, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != "TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\n" {
		t.Errorf("got %q", b.String())
	}
}

// read reads records (copied) and line errors from legacy text.
func read(t testing.TB, in []byte) (recs []debugfs.Record, lerrs []*lineerr.Error) {
	rd := debugfs.NewReader(bytes.NewReader(in), "rt")
	for {
		rec, err := rd.Next()
		var le *lineerr.Error
		switch {
		case errors.As(err, &le):
			lerrs = append(lerrs, le)
		case err == io.EOF:
			return recs, lerrs
		case err != nil:
			t.Fatalf("read: %v", err)
		default:
			recs = append(recs, *rec)
		}
	}
}

// rewrite writes legacy records under their own layouts.
func rewrite(t testing.TB, recs []debugfs.Record) []byte {
	var b bytes.Buffer
	lw := debugfs.NewLegacyWriter(&b)
	for i := range recs {
		if err := lw.Write(&recs[i].Res, recs[i].Layout.Names); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// roundTrip checks that legacy records written and read again are the
// same records, under the same columns.
func roundTrip(t *testing.T, recs []debugfs.Record) {
	t.Helper()
	out := rewrite(t, recs)
	again, lerrs := read(t, out)
	if len(lerrs) != 0 {
		t.Fatalf("the writer's output is rejected: %v\n%s", lerrs, out)
	}
	if len(again) != len(recs) {
		t.Fatalf("%d records became %d:\n%s", len(recs), len(again), out)
	}
	for i := range recs {
		if !sameResource(&recs[i].Res, &again[i].Res) || !slices.Equal(recs[i].Layout.Names, again[i].Layout.Names) {
			t.Fatalf("record %d:\n%+v\nunder %v\nwritten as\n%s\nreads back as\n%+v\nunder %v",
				i, recs[i].Res, recs[i].Layout.Names, out, again[i].Res, again[i].Layout.Names)
		}
	}
}

func sameResource(a, b *rdma.Resource) bool {
	x, y := *a, *b
	if len(x.Extra) == 0 {
		x.Extra = nil
	}
	if len(y.Extra) == 0 {
		y.Extra = nil
	}
	return reflect.DeepEqual(x, y)
}

// randomRow builds a row of random but well-formed cells for columns.
func randomRow(rng *rand.Rand, cols []string) string {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	name := func() string {
		return pick("mthca0", "mlx4_0", "IB", "ib", "eth2", "a\\x20b", "x\\x1by", "UDP", "LISTEN", "cxgb3_0", "dev\\\\0", "n\\xff")
	}
	addr := func() string {
		return pick("0.0.0.0", "192.30.3.249", "10.1.0.5", "[::]", "[fe80::1%ib0]", "[2001:DB8::7]", "fe80::2", "[::ffff:1.2.3.4]") +
			":" + pick("0", "7174", "065535", "42561")
	}
	var cells []string
	for _, c := range cols {
		var v string
		switch c {
		case "TYPE":
			v = pick("", "IB", "IW", "ETH", "eth")
		case "DEVICE":
			v = name()
		case "PORT", "QP_NUM":
			v = pick("0", "1", "2", "132102", "007")
		case "NET_DEV":
			v = pick("", "", name())
		case "SRC_ADDR":
			v = addr()
		case "DST_ADDR":
			v = pick("", addr())
		case "SPACE":
			v = pick("TCP", "UDP", "IPOIB", "IB", "SDP", "ipoib")
		case "STATE":
			v = rdma.CMState(rng.IntN(11)).String()
		case "PID":
			v = pick("", "1", "4711", "0")
		case "COMM":
			v = pick("", "rping", "[nvmet_rdma]", "fio\\x20worker", "123", "x")
		case "TOS":
			v = pick("", "0", "16", "0x10")
		default:
			v = pick("", "v", "7", "IB", "0.0.0.0:1")
		}
		if v != "" {
			cells = append(cells, v)
		}
	}
	return strings.Join(cells, pick(" ", "\t", "  "))
}

func TestLegacyRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	layouts := [][]string{
		rdma.LegacyColumns,
		append(slices.Clip(rdma.LegacyColumns), "PID", "COMM"),
		append(slices.Clip(rdma.LegacyColumns), "TOS", "FLAVOR"),
		append(slices.Clip(rdma.LegacyColumns), "PID", "TOS", "COMM"),
		{"DEVICE", "STATE", "TYPE", "SRC_ADDR", "SPACE", "PORT", "NET_DEV", "QP_NUM", "DST_ADDR"},
	}
	var in strings.Builder
	var cols []string
	for i := 0; i < 20000; i++ {
		if i%50 == 0 {
			cols = layouts[rng.IntN(len(layouts))]
			in.WriteString(strings.Join(cols, " ") + "\n")
		}
		in.WriteString(randomRow(rng, cols) + "\n")
	}
	recs, lerrs := read(t, []byte(in.String()))
	// Random rows can be ambiguous enough to fail (a COMM that takes
	// the place of a missing extra); most must read, and all that read
	// must come back.
	if len(recs) < 15000 {
		t.Fatalf("only %d of 20000 rows read; first errors %v", len(recs), lerrs[:min(5, len(lerrs))])
	}
	roundTrip(t, recs)
}

// FuzzLegacyRoundTrip: whatever the reader makes of any input, writing its
// legacy records and reading them again gives the same records.
func FuzzLegacyRoundTrip(f *testing.F) {
	for _, s := range []string{
		"TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\nmthca0 0 0.0.0.0:7174 TCP LISTEN 0\nIB mthca0 1 ib0 192.30.3.249:46079 192.30.3.248:7174 TCP CONNECT 132102\n",
		"TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM\nIW cxgb3_0 1 eth4 172.16.0.1:60002 172.16.0.9:4420 TCP DISCONNECT 0 812 fio worker\ncxgb3_0 0 0.0.0.0:4420 TCP LISTEN 0 [nvmet_rdma]\n",
		"TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM TOS X\nIB 1 ib0 [fe80::1%ib0]:1 IB LISTEN 0 16 a\\x20b\n",
		"/sys/kernel/debug/rdma_cm/mthca0:mthca0 0 0.0.0.0:7174 TCP LISTEN 0\r\n",
		"link rxe0/1 cm-idn 3 state LISTEN ps TCP src-addr 0.0.0.0:1\n",
		// Rows the writer must guard: a first cell with ':' would read
		// as a grep prefix, "==> x <==" as a head/tail separator.
		"A DEVICE STATE B\nA:A: A LISTEN",
		"DEVICE STATE X\n==>\tLISTEN <==\n",
		// A name with bidi and zero-width characters is written as
		// \uHHHH escapes (D13) and must read back as it was.
		"TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM\nmthca0 0 0.0.0.0:7174 TCP LISTEN 0 7 \u202egnipr\u200b\U000e0041\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, _ := read(t, in)
		legacy := recs[:0]
		for _, r := range recs {
			if r.Kind == debugfs.KindLegacy {
				legacy = append(legacy, r)
			}
		}
		roundTrip(t, legacy)
	})
}

// parse -o legacy: rdma_cm IDs written, QPs counted and said at the end.
func TestLegacySinkCountsWhatItCannotWrite(t *testing.T) {
	var out strings.Builder
	var notes []string
	s := debugfs.NewLegacySink(&out, func(n string) { notes = append(notes, n) })
	for _, typ := range []rdma.ResType{rdma.ResCMID, rdma.ResQP, rdma.ResQP} {
		if err := s.Write(&debugfs.Record{Res: rdma.Resource{Type: typ, DevName: "rxe0"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0] != "2 qp record(s) not written: the legacy layout holds rdma_cm IDs only" || !strings.Contains(out.String(), "rxe0") {
		t.Errorf("notes %q, output %q", notes, out.String())
	}
}
