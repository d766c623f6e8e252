package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/iproute2cmp"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// TestReplayMatchesIproute2 runs on any machine: it decodes netlink replies
// recorded from Debian's 6.1 and 6.12 kernels in the guest (make capture)
// and renders them, and compares the result with what iproute2's `rdma -j`
// printed for the same state at the same moment.
func TestReplayMatchesIproute2(t *testing.T) {
	// go test runs in e2e/; the guest runs the test binary from the
	// checkout's top.
	kernels, _ := filepath.Glob("../testdata/netlink/*")
	if len(kernels) == 0 {
		kernels, _ = filepath.Glob("testdata/netlink/*")
	}
	if len(kernels) < 2 {
		t.Fatalf("recorded replies for %d kernels in testdata/netlink, want 6.1 and 6.12", len(kernels))
	}
	for _, dir := range kernels {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			comms := map[string]string{}
			b, err := os.ReadFile(filepath.Join(dir, "comm.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &comms); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"summary", "qp", "cm_id", "cq", "mr", "pd", "ctx", "srq"} {
				t.Run(name, func(t *testing.T) {
					ours := replay(t, filepath.Join(dir, "netlink", name), name, comms)
					theirs, err := os.ReadFile(filepath.Join(dir, "rdma", name+".json"))
					if err != nil {
						t.Fatal(err)
					}
					typ := name
					if name == "summary" {
						typ = ""
					}
					diffs, err := iproute2cmp.Compare(typ, theirs, ours)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range diffs {
						t.Error(d)
					}
					if strings.TrimSpace(string(theirs)) == "[]" && name != "srq" {
						t.Errorf("the %s recording is empty: it proves nothing", name)
					}
				})
			}
		})
	}
}

// replay decodes one recorded command's replies the way `rdmatrace res`
// does and renders them as its -j output.
func replay(t *testing.T, dir, name string, comms map[string]string) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.nl"))
	sort.Strings(files)
	var objs []formats.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := nldev.UnmarshalMessages(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch {
		case name == "summary":
			for _, m := range msgs {
				s, err := nldev.DecodeSummary(m.Data)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				objs = append(objs, formats.SummaryObject(&s))
			}
		case strings.HasSuffix(f, "-cmd1.nl"): // the device listing
		default:
			typ, err := rdma.ParseResType(name)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := nldev.DecodeDump(typ, msgs, false)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for i := range rs {
				if rs[i].Has&rdma.HasPID != 0 {
					rs[i].Owner.Comm = comms[strconv.FormatUint(uint64(rs[i].Owner.PID), 10)]
				}
				objs = append(objs, formats.ResourceObject(&rs[i]))
			}
		}
	}
	var out []byte
	out = append(out, '[')
	for i, o := range objs {
		if i > 0 {
			out = append(out, ',')
		}
		out = formats.AppendJSON(out, o)
	}
	return append(out, ']')
}
