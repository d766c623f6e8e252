package kernlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// render is a stable text form of what a log gives.
func render(r *Reader) string {
	var b strings.Builder
	for {
		rep, err := r.Next()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		fmt.Fprintf(&b, "%s:%d %s stamp=%q", rep.Source, rep.Line, rep.Kind, rep.Stamp)
		if rep.HasSeconds {
			fmt.Fprintf(&b, " seconds=%.6f", rep.Seconds)
		}
		if rep.HasWall {
			fmt.Fprintf(&b, " wall=%s", rep.Wall.Format(time.RFC3339Nano))
			if rep.WallNoYear {
				b.WriteString(" (no year)")
			}
		}
		switch rep.Kind {
		case rdma.KernQPErrSyndrome:
			fmt.Fprintf(&b, " device=%q port=%d qpn=%d status=%q", rep.Device, rep.Port, rep.QPN, rep.StatusMsg)
			if rep.HasSyndrome {
				fmt.Fprintf(&b, " cqe-syndrome=0x%x", rep.Syndrome)
			}
			if rep.HasWCStatus {
				fmt.Fprintf(&b, " wc=%s", rep.WCStatus)
			}
			fmt.Fprintf(&b, " vendor=0x%x hw-type=0x%x hw=0x%x\n", rep.VendorSyndrome, rep.HWSyndromeType, rep.HWSyndrome)
			continue
		case rdma.KernRestrackNamed:
			owner := rep.Owner.Comm
			if rep.Owner.Kernel() {
				owner = rep.Owner.KernName
			}
			fmt.Fprintf(&b, " device=%q kernel=%v res=%s owner=%q\n", rep.Device, rep.Owner.Kernel(), rep.Res, owner)
			continue
		case rdma.KernHungUnregister:
			fmt.Fprintf(&b, " task=%s pid=%d blocked=%ds waits-in=%s", rep.Task, rep.PID, rep.BlockedSecs, rep.WaitsIn)
		default:
			fmt.Fprintf(&b, " task=%s pid=%d at=%s in=%s", rep.Task, rep.PID, rep.Location, rep.Function)
		}
		if rep.Truncated {
			b.WriteString(" truncated")
		}
		b.WriteString("\n  frames:")
		for _, f := range rep.Frames {
			b.WriteString(" " + f.Func)
			if f.Module != "" {
				b.WriteString("[" + f.Module + "]")
			}
		}
		if rep.MoreFrames > 0 {
			fmt.Fprintf(&b, " +%d", rep.MoreFrames)
		}
		b.WriteString("\n")
	}
}

// TestGoldens reads every log of testdata/kernlog: the debian-* ones are
// real (the leaking test module's unregistration on 6.1 and 6.12, from
// e2e TestLeaksNamesWhatAKernelModuleLeft, and on sid's 7.2 with the
// newer WARNING line; a hung `rdma link delete` on
// 6.1, saved from a guest run); journal.txt and dmesg-T.txt are the 6.12 one
// in those forms; the mlx5-syndrome ones are written after mlx5_ib's format
// string (drivers/infiniband/hw/mlx5/qp.c, 6.3 on) in each log form, as
// only mlx5 hardware prints it; named-restrack.dmesg is written after the kernel's
// format strings (restrack.c before 6.10, syzbot's caller ids), as no
// kernel here prints it.
func TestGoldens(t *testing.T) {
	ins, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "kernlog", "*"))
	n := 0
	for _, in := range ins {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(data), filepath.Base(in))
		r.SetLocation(time.UTC) // the zone of the logs' machines
		got := render(r)
		golden.Check(t, in+".golden", []byte(got))
	}
	if n < 7 {
		t.Errorf("only %d logs in testdata/kernlog", n)
	}
}

// TestEachWarningIsOneReport: on both kernels the leaking module gives 3
// restrack.c WARNINGs (PD, CQ, QP) by the `rdma` task, and the rxe pool
// ones, with the frames that show it was an unregistration.
func TestEachWarningIsOneReport(t *testing.T) {
	for _, k := range []string{"6.1", "6.12", "sid-7.2"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "kernlog", "debian-"+k+"-kmod-leak.dmesg"))
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(data), k)
		counts := map[rdma.KernelReportKind]int{}
		for {
			rep, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			counts[rep.Kind]++
			if rep.Task != "rdma" || rep.PID == 0 || rep.Truncated {
				t.Errorf("%s: %+v", k, rep)
			}
			unreg := false
			for _, f := range rep.Frames {
				unreg = unreg || f.Func == "__ib_unregister_device"
			}
			if !unreg {
				t.Errorf("%s line %d: no __ib_unregister_device frame: %v", k, rep.Line, rep.Frames)
			}
		}
		if counts[rdma.KernRestrackWarning] != 3 || counts[rdma.KernDriverWarning] == 0 {
			t.Errorf("%s: %v, want 3 restrack WARNINGs and some rxe pool ones", k, counts)
		}
	}
}

func TestHostileInput(t *testing.T) {
	in := "\x00\x01garbage\n" + strings.Repeat("y", lines.Max+5) + "\nINFO: task x:1 blocked for more than 1 seconds.\nCall Trace:\n ib_uverbs_remove_one+0x1/0x2 [ib_uverbs]\n"
	r := NewReader(strings.NewReader(in), "bad")
	var errs []string
	reps := 0
	for {
		rep, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		reps++
		if !rep.Truncated || rep.WaitsIn != "ib_uverbs_remove_one" {
			t.Errorf("report %+v", rep)
		}
	}
	if reps != 1 || len(errs) != 2 || !strings.HasPrefix(errs[0], "bad:2: expected a line of at most") || !strings.HasPrefix(errs[1], "bad:6: expected the call trace and end of the hung-unregister report of line 3") {
		t.Errorf("%d reports, errors %q", reps, errs)
	}
}

// TestWarningWithCommTakesThePIDAfterTheLastSlash: on newer kernels the WARNING
// line ends "CPU#N: COMM/PID", and a comm may hold slashes, commas and
// what looks like that ending.
func TestWarningWithCommTakesThePIDAfterTheLastSlash(t *testing.T) {
	in := "------------[ cut here ]------------\n" +
		"WARNING: drivers/infiniband/core/restrack.c:52 at rdma_restrack_clean+0x4d/0x60 [ib_core], CPU#1: a/b, CPU#2: x/77\n" +
		"---[ end trace 0000000000000000 ]---\n" +
		"WARNING: fs/inode.c:1 at iput+0x1/0x2, CPU#0: sh/5\n"
	r := NewReader(strings.NewReader(in), "comm")
	rep, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != rdma.KernRestrackWarning || rep.Task != "a/b, CPU#2: x" || rep.PID != 77 ||
		rep.Location != "drivers/infiniband/core/restrack.c:52" || rep.Function != "rdma_restrack_clean" {
		t.Errorf("%+v", rep)
	}
	if rep, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("a WARNING not about RDMA gave %+v, %v", rep, err)
	}
}

func FuzzReader(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "kernlog", "*"))
	for _, in := range ins {
		if data, err := os.ReadFile(in); err == nil && !strings.HasSuffix(in, ".golden") {
			f.Add(data[:min(len(data), 3000)])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz")
		for i := 0; i < 1000000; i++ {
			rep, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			var le *lineerr.Error
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("not a report error: %v", err)
			}
			if rep != nil && len(rep.Frames) > MaxFrames {
				t.Fatalf("%d frames", len(rep.Frames))
			}
		}
		t.Fatal("no end")
	})
}

// A named report whose "infiniband DEV: BUG" line is missing (a grepped or
// cut log) names no device: the previous report's device is not carried
// over to it.
func TestNamedReportWithoutItsDeviceLineNamesNone(t *testing.T) {
	log := `[  10.000000] restrack: ------------[ cut here ]------------
[  10.000001] infiniband rxe0: BUG: RESTRACK detected leak of resources
[  10.000002] restrack: User QP object allocated by rping is not freed
[  10.000003] restrack: ------------[ cut here ]------------
[  20.000000] restrack: ------------[ cut here ]------------
[  20.000002] restrack: Kernel PD object allocated by ib_core is not freed
[  20.000003] restrack: ------------[ cut here ]------------
`
	r := NewReader(strings.NewReader(log), "grepped")
	var devs []string
	for {
		rep, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, rep.Device)
	}
	if fmt.Sprintf("%q", devs) != `["rxe0" ""]` {
		t.Errorf("devices %q, want rxe0 then none", devs)
	}
}

// Stamped counts the lines that look like a kernel log's, whatever the
// form, so that a file with none can be told apart from a quiet log.
func TestStampedCountsKernelLogLines(t *testing.T) {
	for in, want := range map[string]int{
		"[    1.000000] Linux version 6.12\n[    1.1] x\n":                            2,
		"[Sun Nov 22 10:00:00 2026] rxe: loaded\n":                                    1,
		"Nov 22 10:00:00 host kernel: rxe: loaded\nNov 22 10:00:01 host sshd[1]: x\n": 1,
		"2026-11-22T10:00:00+0000 host kernel: rxe: loaded\n":                         1,
		"hello\nworld\n\x1f\x8b\x08\x00":                                              0,
	} {
		r := NewReader(strings.NewReader(in), "in")
		for {
			if _, err := r.Next(); errors.Is(err, io.EOF) {
				break
			}
		}
		if r.Stamped() != want {
			t.Errorf("%q: %d stamped lines, want %d", in, r.Stamped(), want)
		}
	}
}

// journalctl's other short forms (-o short-precise, short-iso-precise,
// short-full, short-monotonic, short-unix) give the reports of -o short:
// their prefix was not recognised, so neither were the reports.
func TestJournalShortFormsGiveTheSameReports(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "kernlog", "journal.txt"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(log string) (reports, stamped int) {
		r := NewReader(strings.NewReader(log), "j")
		for {
			rep, err := r.Next()
			if errors.Is(err, io.EOF) {
				return reports, r.Stamped()
			}
			if rep != nil {
				reports++
			}
		}
	}
	wantReports, wantStamped := count(string(data))
	if wantReports == 0 {
		t.Fatal("journal.txt gives no report")
	}
	for form, stamp := range map[string]string{
		"short-precise":     "Nov 22 23:22:54.123456",
		"short-iso-precise": "2026-11-22T23:22:54.123456+00:00",
		"short-full":        "Sun 2026-11-22 23:22:54 UTC",
		"short-monotonic":   "[   50.152630]",
		"short-unix":        "1763853774.123456",
	} {
		log := strings.ReplaceAll(string(data), "Nov 22 23:22:54 guest kernel: ", stamp+" guest kernel: ")
		if reports, stamped := count(log); reports != wantReports || stamped != wantStamped {
			t.Errorf("-o %s: %d reports of %d stamped lines, want %d of %d", form, reports, stamped, wantReports, wantStamped)
		}
	}
}

// A log of a thousand reports each cut by the next gives the thousand
// reports, lineerr.Shown errors and one counting the rest; a read error
// (a truncated archive) is told last, after them.
func TestErrorsAreBoundedAndAReadErrorToldLast(t *testing.T) {
	one := "[ 1.0] ------------[ cut here ]------------\n" +
		"[ 1.0] WARNING: CPU: 0 PID: 7 at drivers/infiniband/core/restrack.c:1 rdma_restrack_clean+0x1/0x2\n"
	in := io.MultiReader(strings.NewReader(strings.Repeat(one, 1000)), iotest.ErrReader(errors.New("xz: unexpected end of data")))
	r := NewReader(in, "big.log")
	reports, errs := 0, []string{}
	var last error
	for {
		rep, err := r.Next()
		var le *lineerr.Error
		switch {
		case err == nil:
			reports++
			if !rep.Truncated {
				t.Fatal("a cut report not marked truncated")
			}
			continue
		case errors.As(err, &le):
			errs = append(errs, err.Error())
			continue
		}
		last = err
		break
	}
	if reports != 1000 || len(errs) != lineerr.Shown+1 || errs[lineerr.Shown] != "big.log: … and 980 more bad lines (not shown)" ||
		last == nil || last.Error() != "xz: unexpected end of data" {
		t.Errorf("%d reports, %d errors (last %q), then %v", reports, len(errs), errs[len(errs)-1], last)
	}
}

// A named report's type and owner are the model's: the type the kernel
// names in upper case, a module as a kernel owner and a process name as a
// user one. A type restrack.c does not name is a line not understood, not
// a report of something else.
func TestNamedReportGivesTheTypeAndTheOwner(t *testing.T) {
	log := `[  10.000002] restrack: User CM_ID object allocated by rping is not freed
[  10.000003] restrack: Kernel COUNTER object allocated by ib_core is not freed
[  10.000004] restrack: User (null) object allocated by rping is not freed
`
	r := NewReader(strings.NewReader(log), "log")
	var got []string
	for {
		rep, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("%v %+v", rep.Res, rep.Owner))
	}
	want := []string{
		"cm_id {PID:0 TID:0 Comm:rping KernName: Place:<nil>}",
		"counter {PID:0 TID:0 Comm: KernName:ib_core Place:<nil>}",
		`log:3: expected a restrack object type (PD, CQ, QP, CM_ID, MR, CTX, COUNTER, SRQ), found "(null)"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Blank lines are passed over in runs (a bomb of newlines costs a byte
// scan), but the first still ends a call trace, and the lines after them
// keep their numbers.
func TestBlankLinesEndACallTraceAndKeepTheLineNumbers(t *testing.T) {
	log := "INFO: task rdma:12 blocked for more than 120 seconds.\nCall Trace:\n ib_uverbs_remove_one+0x3c/0x60 [ib_uverbs]\n" +
		strings.Repeat("\n \t\r\n", 5000) + " __ib_unregister_device+0x1/0x2\n" +
		"------------[ cut here ]------------\n" + strings.Repeat("\n", 100000)
	r := NewReader(strings.NewReader(log), "blank")
	got := render(r)
	want := "blank:1 hung-unregister stamp=\"\" task=rdma pid=12 blocked=120s waits-in=ib_uverbs_remove_one\n  frames: ib_uverbs_remove_one[ib_uverbs]\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if r.line != 3+10000+2+100000+1 {
		t.Errorf("ended at line %d", r.line)
	}
}
