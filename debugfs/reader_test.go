package debugfs

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// readAll reads every record (copied) and every line error of an input.
func readAll(t testing.TB, in io.Reader, source string) (recs []Record, lerrs []*lineerr.Error) {
	t.Helper()
	rd := NewReader(in, source)
	for {
		rec, err := rd.Next()
		var le *lineerr.Error
		switch {
		case errors.As(err, &le):
			lerrs = append(lerrs, le)
		case err == io.EOF:
			return recs, lerrs
		case err != nil:
			t.Fatalf("%s: unexpected error %v", source, err)
		default:
			recs = append(recs, *rec)
		}
	}
}

func readString(t testing.TB, s string) ([]Record, []*lineerr.Error) {
	return readAll(t, strings.NewReader(s), "test")
}

const hdr = "TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\n"

func TestEveryArrivalFormReadsTheSameRecords(t *testing.T) {
	// The same two IDs of mlx4_0 and one of mthca0, in every wrapping.
	want := []string{"mlx4_0 LISTEN 0.0.0.0:18515", "mlx4_0 CONNECT 10.1.0.5:18515", "mthca0 CONNECT 192.30.3.249:46079"}
	for _, name := range []string{"grep-h.txt", "grep-rn.txt", "headtail.txt"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("../testdata/debugfs/in", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, lerrs := readAll(t, f, name)
			if len(lerrs) != 0 {
				t.Fatalf("errors: %v", lerrs)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Res.DevName+" "+r.Res.CMState.String()+" "+r.Res.Src.String())
				if !strings.Contains(r.Origin, "rdma_cm/"+r.Res.DevName) {
					t.Errorf("line %d: origin %q does not name the device file", r.Line, r.Origin)
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestRowsAreAssignedToColumnsByForm(t *testing.T) {
	v4 := func(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
	for _, tc := range []struct {
		name   string
		header string
		row    string
		check  func(r *rdma.Resource) bool
	}{
		{"a listener has no TYPE, NET_DEV or DST_ADDR", hdr, "mthca0 0 0.0.0.0:7174 TCP LISTEN 0",
			func(r *rdma.Resource) bool {
				return r.DevType == "" && r.DevName == "mthca0" && r.Has&rdma.HasPort == 0 && r.Netdev == "" &&
					r.Src == v4("0.0.0.0:7174") && r.Has&rdma.HasDstAddr == 0 && r.PS == rdma.PSTCP && r.CMState == rdma.CMListen && r.Has&rdma.HasLQPN == 0
			}},
		{"a full row fills every column", hdr, "IB mthca0 1 ib0 192.30.3.249:46079 192.30.3.248:7174 TCP CONNECT 132102",
			func(r *rdma.Resource) bool {
				return r.DevType == "IB" && r.Port == 1 && r.Netdev == "ib0" && r.Dst == v4("192.30.3.248:7174") && r.LQPN == 132102
			}},
		{"a row without NET_DEV keeps TYPE", hdr, "IB mthca0 1 192.30.3.249:46079 192.30.3.248:7174 TCP CONNECT 5",
			func(r *rdma.Resource) bool { return r.DevType == "IB" && r.Netdev == "" && r.Has&rdma.HasDstAddr != 0 }},
		{"a device named like a TYPE is a device when TYPE is left out", hdr, "IB 1 ib0 1.2.3.4:5 TCP ADDR_BOUND 0",
			func(r *rdma.Resource) bool { return r.DevType == "" && r.DevName == "IB" && r.Netdev == "ib0" }},
		{"IB is a SPACE as well as a TYPE", hdr, "IB mthca0 1 ib0 1.2.3.4:5 IB ROUTE_QUERY 0",
			func(r *rdma.Resource) bool { return r.DevType == "IB" && r.PS == rdma.PSIB }},
		{"names are case-insensitive", hdr, "eth mlx4_0 1 eth2 1.2.3.4:5 ipoib connect 7",
			func(r *rdma.Resource) bool {
				return r.DevType == "ETH" && r.PS == rdma.PSIPoIB && r.CMState == rdma.CMConnect
			}},
		{"a bracketed IPv6 address keeps its zone apart", hdr, "ETH mlx5_0 1 enp1s0 [fe80::1%enp1s0]:4791 [2001:db8::2]:9 TCP CONNECT 1",
			func(r *rdma.Resource) bool {
				return r.Src.Addr() == netip.MustParseAddr("fe80::1") && r.SrcZone == "enp1s0" && r.Src.Port() == 4791 && r.DstZone == ""
			}},
		{"an unbracketed IPv6 address ends at the last colon", hdr, "mlx5_0 0 fe80::1:7174 TCP LISTEN 0",
			func(r *rdma.Resource) bool {
				return r.Src.Addr() == netip.MustParseAddr("fe80::1") && r.Src.Port() == 7174
			}},
		{"PID and COMM columns", strings.TrimSuffix(hdr, "\n") + " PID COMM\n", "IB mthca0 1 ib0 1.2.3.4:5 TCP LISTEN 0 812 rping",
			func(r *rdma.Resource) bool {
				return r.Has&rdma.HasPID != 0 && r.Owner.PID == 812 && r.Owner.Comm == "rping"
			}},
		{"a bracketed COMM without PID is a kernel owner", strings.TrimSuffix(hdr, "\n") + " PID COMM\n", "mthca0 0 0.0.0.0:1 TCP LISTEN 0 [nvmet_rdma]",
			func(r *rdma.Resource) bool {
				return r.Has&rdma.HasPID == 0 && r.Owner.KernName == "nvmet_rdma" && r.Owner.Comm == ""
			}},
		{"a last COMM takes a name with blanks", strings.TrimSuffix(hdr, "\n") + " PID COMM\n", "IB mthca0 1 ib0 1.2.3.4:5 6.7.8.9:10 TCP CONNECT 3 812 fio  worker 2",
			func(r *rdma.Resource) bool { return r.Owner.Comm == "fio  worker 2" }},
		{"unknown columns are named extras", strings.TrimSuffix(hdr, "\n") + " TOS FLAVOR\n", "mthca0 0 0.0.0.0:1 TCP LISTEN 0 16 vanilla",
			func(r *rdma.Resource) bool {
				return len(r.Extra) == 2 && r.Extra[0] == (rdma.KV{Key: "TOS", Value: "16"}) && r.Extra[1] == (rdma.KV{Key: "FLAVOR", Value: "vanilla"})
			}},
		{"a left-out numeric extra lets the next take the cell", strings.TrimSuffix(hdr, "\n") + " TOS FLAVOR\n", "mthca0 0 0.0.0.0:1 TCP LISTEN 0 vanilla",
			func(r *rdma.Resource) bool { return len(r.Extra) == 1 && r.Extra[0].Key == "FLAVOR" }},
		{"escaped cells are decoded", strings.TrimSuffix(hdr, "\n") + " PID COMM\n", `mthca0 0 0.0.0.0:1 TCP LISTEN 0 1 a\x20b\\c\x1b`,
			func(r *rdma.Resource) bool { return r.Owner.Comm == "a b\\c\x1b" }},
		{"a reordered header is followed", "DEVICE STATE SPACE SRC_ADDR PORT QP_NUM\n", "mlx4_0 LISTEN UDP 0.0.0.0:1 0 0",
			func(r *rdma.Resource) bool {
				return r.DevName == "mlx4_0" && r.PS == rdma.PSUDP && r.CMState == rdma.CMListen
			}},
		{"SDP, which the kernel no longer knows", hdr, "mthca0 0 0.0.0.0:1 SDP LISTEN 0",
			func(r *rdma.Resource) bool { return r.PS == rdma.PSSDP }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, lerrs := readString(t, tc.header+tc.row+"\n")
			if len(lerrs) != 0 || len(recs) != 1 {
				t.Fatalf("got %d records, errors %v", len(recs), lerrs)
			}
			if !tc.check(&recs[0].Res) {
				t.Errorf("%q read as %+v", tc.row, recs[0].Res)
			}
		})
	}
}

func TestEveryBadLineIsReportedAndReadingGoesOn(t *testing.T) {
	in := hdr +
		"IB mthca0 1 ib0 1.2.3.4:5 6.7.8.9:10 TCP CONNECT 1\n" +
		"IB mthca0 1 ib0 1.2.3.4:5 6.7.8.9:10 FOO CONNECT 1\n" +
		"\x00\x01\x02\n" +
		"IB mthca0 1 ib0 1.2.3.4:5 6.7.8.9:10 TCP CONNECT 2\n" +
		"IB mthca0 1 ib0 1.2.3.4:5 6.7.8.9:10 TCP" // truncated
	recs, lerrs := readString(t, in)
	if len(recs) != 2 || recs[0].Line != 2 || recs[1].Line != 5 {
		t.Fatalf("records %+v", recs)
	}
	want := []string{
		`test:3: expected SPACE (TCP, UDP, IPOIB, IB or SDP), found "FOO"`,
		`test:4: expected PORT (a port number), found end of line`,
		`test:6: expected STATE (`,
	}
	if len(lerrs) != len(want) {
		t.Fatalf("errors %v", lerrs)
	}
	for i, w := range want {
		if !strings.HasPrefix(lerrs[i].Error(), w) {
			t.Errorf("error %d = %q, want prefix %q", i, lerrs[i].Error(), w)
		}
	}
	if !strings.Contains(lerrs[2].Error(), "truncated") {
		t.Errorf("the truncated last line is not called so: %v", lerrs[2])
	}
}

func TestHostileInputGivesErrorsNotPanicsOrMemory(t *testing.T) {
	garbage := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	long := append(bytes.Repeat([]byte("A"), 10<<20), '\n')
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"binary garbage", garbage},
		{"a 10 MB line", append(append([]byte(hdr), long...), "mthca0 0 0.0.0.0:1 TCP LISTEN 0\n"...)},
		{"a 10 MB line without a line end", long[:len(long)-1]},
		{"NUL bytes", []byte(hdr + "\x00\x00\x00\nmthca0\x00 0 0.0.0.0:1 TCP LISTEN 0\n\x00")},
		{"a 10 MB JSON string", append(append([]byte(`[{"ifname":"`), long[:len(long)-1]...), `"}]`...)},
		{"deeply nested JSON", bytes.Repeat([]byte("["), 1<<16)},
		{"a header of 1000 columns", []byte(strings.Repeat("DEVICE STATE X", 300) + "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			recs, lerrs := readAll(t, bytes.NewReader(tc.in), "hostile")
			runtime.ReadMemStats(&after)
			if len(lerrs) == 0 {
				t.Errorf("no error for %d bytes of hostile input (%d records)", len(tc.in), len(recs))
			}
			// Everything allocated while reading bounds the peak: it
			// must stay well below the 10 MB of the longest input.
			if total := after.TotalAlloc - before.TotalAlloc; total > 6<<20 {
				t.Errorf("reading allocated %d bytes", total)
			} else {
				t.Logf("reading allocated %d bytes", total)
			}
		})
	}
}

func TestTenMegabyteLineIsOneErrorAndTheNextLineIsRead(t *testing.T) {
	in := hdr + strings.Repeat("x", 10<<20) + "\nmthca0 0 0.0.0.0:1 TCP LISTEN 0\n"
	recs, lerrs := readString(t, in)
	if len(recs) != 1 || recs[0].Line != 3 || len(lerrs) != 1 || lerrs[0].Line != 2 {
		t.Fatalf("records %v errors %v", recs, lerrs)
	}
	if want := "test:2: expected a line of at most 65536 bytes, found a line of 10485761 bytes"; lerrs[0].Error() != want {
		t.Errorf("got %q, want %q", lerrs[0].Error(), want)
	}
}

func TestRdmaTextAndJSONReadIntoTheSameModel(t *testing.T) {
	text := "link rxe0/1 cm-idn 3 lqpn 17 qp-type RC state CONNECT ps TCP pid 812 comm rping src-addr 10.0.0.1:7174 dst-addr 10.0.0.2:43970 \n"
	js := `[{"ifindex":0,"ifname":"rxe0","port":1,"cm-idn":3,"lqpn":17,"qp-type":"RC","state":"CONNECT","ps":"TCP","pid":812,"comm":"rping","src-addr":"10.0.0.1:7174","dst-addr":"10.0.0.2:43970"}]`
	a, errA := readString(t, text)
	b, errB := readString(t, js)
	if len(errA)+len(errB) != 0 || len(a) != 1 || len(b) != 1 {
		t.Fatalf("text %v %v, json %v %v", a, errA, b, errB)
	}
	if a[0].Kind != KindRdmaText || b[0].Kind != KindRdmaJSON {
		t.Errorf("kinds %v %v", a[0].Kind, b[0].Kind)
	}
	ra, rb := a[0].Res, b[0].Res
	if !equalResources(&ra, &rb) {
		t.Errorf("text gives %+v\njson gives %+v", ra, rb)
	}
	if ra.CMIDN != 3 || ra.QPType != rdma.QPTypeRC || ra.Owner.PID != 812 || ra.Dst.Port() != 43970 {
		t.Errorf("text read as %+v", ra)
	}
}

func TestPrettyDriverLinesJoinTheirRecord(t *testing.T) {
	in := "link rxe0/1 lqpn 17 type RC state RTS sq-psn 9 pid 1 comm a \n    drv_sqsize 128 drv_rqsize 64 \nlink rxe0/1 lqpn 18 type RC state RTS sq-psn 9 pid 1 comm a \n"
	recs, lerrs := readString(t, in)
	if len(lerrs) != 0 || len(recs) != 2 {
		t.Fatalf("%v %v", recs, lerrs)
	}
	if x := recs[0].Res.Extra; len(x) != 2 || x[1] != (rdma.KV{Key: "drv_rqsize", Value: "64"}) {
		t.Errorf("extras %v", x)
	}
	if recs[1].Res.LQPN != 18 || len(recs[1].Res.Extra) != 0 {
		t.Errorf("second record %+v", recs[1].Res)
	}
}

func TestDirectoryTreeReadsOnlyFilesWithRDMAState(t *testing.T) {
	ins, err := Inputs("../testdata/debugfs/in/tree", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range ins {
		names = append(names, strings.TrimPrefix(filepath.ToSlash(in.Name), "../testdata/debugfs/in/tree/"))
	}
	want := "bundle/sos_commands/rdma/rdma_-j_res_show_cm_id bundle/sos_commands/rdma/rdma_res_show_cm_id bundle/sys/kernel/debug/rdma_cm/mlx4_0 bundle/sys/kernel/debug/rdma_cm/mthca0"
	if strings.Join(names, " ") != want {
		t.Errorf("inputs %v", names)
	}
}

// equalResources compares what the readers fill in (not the device index,
// which only JSON carries).
func equalResources(a, b *rdma.Resource) bool {
	x, y := *a, *b
	x.DevIndex, y.DevIndex = 0, 0
	return reflect.DeepEqual(x, y)
}

// TestReadsRdmaJSONCapturedInTheGuest reads `rdma -j res show cm_id|qp`
// as iproute2 wrote it on Debian 6.1 and 6.12 guests (the netlink
// fixtures), and tells the other resources' output apart.
func TestReadsRdmaJSONCapturedInTheGuest(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		for _, res := range []string{"cm_id", "qp", "cq", "summary"} {
			path := filepath.Join("../testdata/netlink", k, "rdma", res+".json")
			f, err := os.Open(path)
			if err != nil {
				t.Skipf("no capture: %v", err)
			}
			recs, lerrs := readAll(t, f, path)
			f.Close()
			switch res {
			case "cm_id", "qp":
				if len(lerrs) != 0 || len(recs) == 0 {
					t.Errorf("%s: %d records, errors %v", path, len(recs), lerrs)
				}
				for _, r := range recs {
					if r.Res.Type.String() != res || r.Res.DevName == "" || r.Res.Has&rdma.HasState == 0 {
						t.Errorf("%s:%d read as %+v", path, r.Line, r.Res)
					}
				}
			default:
				if len(recs) != 0 || len(lerrs) == 0 || !strings.Contains(lerrs[0].Found, "rdma -j res show") {
					t.Errorf("%s: %d records, errors %v", path, len(recs), lerrs)
				}
			}
		}
	}
}

// A large file of lines that are not RDMA state shows lineerr.Shown of
// them, counts the others, and is given up after lineerr.GiveUp in a row.
func TestBadLinesAreBoundedAndAWrongFileGivenUp(t *testing.T) {
	rd := NewReader(strings.NewReader(strings.Repeat("junk line\n", 3*lineerr.GiveUp)), "big.txt")
	var errs []string
	for {
		_, err := rd.Next()
		if err == io.EOF {
			break
		}
		var le *lineerr.Error
		if !errors.As(err, &le) {
			t.Fatalf("error %v", err)
		}
		errs = append(errs, err.Error())
	}
	if len(errs) != lineerr.Shown+2 ||
		!strings.HasPrefix(errs[lineerr.Shown], "big.txt:10000: expected a line of RDMA state (a legacy rdma_cm dump, `rdma res show` text or JSON) in the last 10000 lines, found none") ||
		errs[lineerr.Shown+1] != "big.txt: … and 9979 more bad lines (not shown)" {
		t.Errorf("%d errors: %q", len(errs), errs[min(len(errs), lineerr.Shown-1):])
	}
}
