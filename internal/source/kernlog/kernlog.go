// Package kernlog finds the kernel's reports of RDMA resource leaks and of
// device removals that hang in kernel logs (dmesg, dmesg -T, journalctl
// text, or bare lines), for post-mortems. It recognises:
//
//   - the named restrack report of kernels up to 6.9 and of MLNX_OFED
//     ("restrack: User QP object allocated by rping is not freed", after
//     "infiniband DEV: BUG: RESTRACK detected leak of resources");
//   - the bare WARNING at drivers/infiniband/core/restrack.c that newer
//     kernels (and Debian's 6.1 and 6.12, with the backport) print instead,
//     one per type still tracked, without names (its first line in both
//     forms: "WARNING: CPU: N PID: P at FILE:LINE FUNC", and on newer kernels
//     (sid's 7.2 here) "WARNING: FILE:LINE at FUNC, CPU#N: COMM/PID");
//   - rxe's WARNING at rxe_pool.c (its own objects left at dealloc);
//   - hung-task reports whose stack is inside a device unregistration
//     (ib_uverbs_remove_one waiting for processes to close their files);
//   - mlx5's QP error syndrome ("mlx5_0/1: QP 137 error: local protection
//     error (0x41 0x0 0x0)"), printed since Linux 6.3 when a QP gets a
//     fatal or access error event on a device that reports syndromes.
//
// Everything else in a log is skipped; that is not an error. A report cut
// short (a new one starts, or the log ends) is returned marked Truncated,
// with an error naming the source and line.
package kernlog

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// MaxFrames bounds the frames kept per report; the rest are counted.
const MaxFrames = 64

var (
	// "[   40.644129] ", "[   40.644129][ T1234] ", "[Sun Nov 22 10:00:00 2026] "
	dmesgStamp = regexp.MustCompile(`^\[\s*(\d+\.\d+)\](?:\[\s*[TC]\d+\])?\s?`)
	dateStamp  = regexp.MustCompile(`^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?`)
	// journalctl: "Nov 22 10:00:00 host kernel: " (-o short), with
	// microseconds (short-precise), an ISO time (short-iso, -iso-precise),
	// a weekday, date and zone (short-full), the time since boot
	// (short-monotonic) or since the epoch (short-unix).
	journal = regexp.MustCompile(`^((?:\d{4}-\d\d-\d\dT[\d:.,+-]+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|` +
		`[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+|\[\s*\d+\.\d+\]|\d+\.\d+)) \S+ kernel: `)

	warning = regexp.MustCompile(`^WARNING: CPU: \d+ PID: (\d+) at (\S+:\d+) ([A-Za-z0-9_.]+)\+0x`)
	// Newer kernels (sid's 7.2 here): "WARNING: FILE:LINE at FUNC+0x../0x..
	// [MOD], CPU#N: COMM/PID"; the comm may hold any character, the pid
	// is after its last slash.
	warningComm = regexp.MustCompile(`^WARNING: (\S+:\d+) at ([A-Za-z0-9_.]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[[A-Za-z0-9_]+\])?, CPU#\d+: (.*)/(\d+)\s*$`)
	cpuComm     = regexp.MustCompile(`^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)`)
	frame       = regexp.MustCompile(`^\s*()([A-Za-z0-9_.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[([A-Za-z0-9_]+)\])?\s*$`)
	hung        = regexp.MustCompile(`^INFO: task (.+):(\d+) blocked for more than (\d+) seconds\.`)
	bugLeak     = regexp.MustCompile(`^infiniband (\S+): BUG: RESTRACK detected leak of resources`)
	notFreed    = regexp.MustCompile(`^restrack: (Kernel|User) (\S+) object allocated by (.+) is not freed\s*$`)
	// mlx5_ib_qp_err_syndrome(), drivers/infiniband/hw/mlx5/qp.c (Linux
	// 6.3 on), on a QP's fatal or access error event:
	// pr_err("%s/%d: QP %d error: %s (0x%x 0x%x 0x%x)\n", device, port,
	// qp_num, ib_wc_status_msg(syndrome), vendor_error_syndrome,
	// hw_syndrome_type, hw_error_syndrome); the syndrome is the CQE's, not
	// a status (rdma.MLX5SyndromeOfMessage).
	qpSyndrome = regexp.MustCompile(`^([^\s/]+)/(\d+): QP (\d+) error: (.+) \(0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+)\)\s*$`)
)

// restrackTypes are the object types as restrack.c's type2str names them.
var restrackTypes = func() string {
	var names []string
	for t := rdma.ResPD; t <= rdma.ResSRQ; t++ {
		names = append(names, strings.ToUpper(t.String()))
	}
	return strings.Join(names, ", ")
}()

// rdmaWaits are the functions a blocked unregistration waits in, innermost
// first.
var rdmaWaits = []string{"ib_uverbs_remove_one", "cma_process_remove", "cma_remove_one", "remove_client_context",
	"disable_device", "__ib_unregister_device", "ib_unregister_device_and_put", "ib_unregister_driver",
	"ib_unregister_device", "ib_unregister_device_queued"}

// Reader reads reports from a log.
type Reader struct {
	loc    *time.Location // of wall-clock stamps that name no zone; nil: time.Local
	lr     *lines.Reader
	source string
	line   int                // of the line being read; at the end, one past the last
	cur    *rdma.KernelReport // a WARNING or hung task being read
	inCall bool               // inside its call trace
	device string             // of the named report being read
	queue  []*rdma.KernelReport
	errs   []error
	eof    bool
	limit  lineerr.Limit
	err    error // what ended the input early: told last
	// stamped counts lines with a kernel log prefix: a file with none
	// (and no report) is probably not a kernel log at all.
	stamped int
}

// NewReader reads the log r, called source in errors and reports.
func NewReader(r io.Reader, source string) *Reader {
	return &Reader{lr: lines.NewReader(r, source), source: source}
}

// SetLocation sets the zone of wall-clock stamps that name none (dmesg -T,
// journalctl -o short): the zone of the machine that wrote the log.
// time.Local unless set.
func (r *Reader) SetLocation(loc *time.Location) { r.loc = loc }

// Stamped is how many lines so far began as kernel log lines do (a dmesg
// or dmesg -T time, or journalctl's "HOST kernel:").
func (r *Reader) Stamped() int { return r.stamped }

// Next returns the next report, io.EOF at the end, or a *lineerr.Error (call Next
// again to go on). Of a log's errors, the first lineerr.Shown are returned
// each and the rest counted in one error at the end.
func (r *Reader) Next() (*rdma.KernelReport, error) {
	for {
		if len(r.errs) > 0 {
			err := r.errs[0]
			r.errs = r.errs[1:]
			var le *lineerr.Error
			if errors.As(err, &le) {
				if le = r.limit.Bad(le); le == nil {
					continue
				}
				return nil, le
			}
			return nil, err
		}
		if len(r.queue) > 0 {
			rep := r.queue[0]
			r.queue = r.queue[1:]
			r.limit.Good()
			return rep, nil
		}
		if r.eof {
			if le := r.limit.End(); le != nil {
				return nil, le
			}
			if r.err != nil {
				return nil, r.err
			}
			return nil, io.EOF
		}
		line, err := r.readLine()
		if errors.Is(err, io.EOF) {
			r.eof = true
			r.cut("the end of the log")
			continue
		}
		if err != nil {
			var le *lineerr.Error
			if errors.As(err, &le) {
				r.errs = append(r.errs, err)
				continue
			}
			// Told after the errors not shown; a report being read is
			// cut by it.
			r.eof, r.err = true, err
			r.cut("the end of what could be read")
			continue
		}
		r.feed(line)
	}
}

func (r *Reader) readLine() (string, error) {
	b, err := r.lr.Next()
	r.line = r.lr.Line()
	if err == io.EOF {
		r.line++ // a report cut by the end is cut after the last line
	}
	return string(b), err
}

// stamp is a line's time as its prefix gives it.
type stamp struct {
	text    string
	secs    float64 // since boot
	hasSecs bool
	wall    time.Time
	hasWall bool
	noYear  bool
}

// split separates a line's time prefix from its text.
func (r *Reader) split(line string) (st stamp, body string) {
	if m := journal.FindStringSubmatch(line); m != nil {
		st.text, line = m[1], line[len(m[0]):]
		if s, ok := strings.CutPrefix(m[1], "["); ok { // short-monotonic
			secs, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "]")), 64)
			st.secs, st.hasSecs = secs, err == nil
		} else {
			st.wall, st.noYear, st.hasWall = r.wallOf(m[1])
		}
	}
	if m := dmesgStamp.FindStringSubmatch(line); m != nil {
		s, err := strconv.ParseFloat(m[1], 64)
		if st.text == "" {
			st.text = "[" + m[1] + "]"
		}
		st.secs, st.hasSecs = s, err == nil
		return st, line[len(m[0]):]
	}
	if m := dateStamp.FindStringSubmatch(line); m != nil {
		st.text = m[1]
		st.wall, st.noYear, st.hasWall = r.wallOf(m[1])
		return st, line[len(m[0]):]
	}
	return st, line
}

// wallLayouts are the wall-clock stamps of dmesg -T and journalctl's short
// forms (-o short without a year; short-iso, short-iso-precise, short-full);
// a fraction of a second after the seconds is read without being named.
var wallLayouts = []string{"Mon Jan _2 15:04:05 2006", "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05Z07:00",
	"Mon 2006-01-02 15:04:05 MST"}

// wallOf reads a stamp's wall-clock time: zoneless ones in the reader's
// zone; journalctl's short-unix is seconds since the epoch.
func (r *Reader) wallOf(s string) (t time.Time, noYear, ok bool) {
	loc := r.loc
	if loc == nil {
		loc = time.Local
	}
	if sec, frac, found := strings.Cut(s, "."); found && !strings.ContainsAny(s, " -:") {
		secs, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err1 != nil || err2 != nil {
			return time.Time{}, false, false
		}
		return time.Unix(secs, ns).In(loc), false, true
	}
	for _, l := range wallLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, false, true
		}
	}
	if t, err := time.ParseInLocation("Jan _2 15:04:05", s, loc); err == nil {
		return t, true, true
	}
	return time.Time{}, false, false
}

// syndrome queues a QP error syndrome line (qpSyndrome's match m). A
// number too large for its field (the kernel prints 24-bit QP numbers and
// 32-bit syndromes) is an error naming the line.
func (r *Reader) syndrome(m []string, st stamp) {
	var v [5]uint64
	for i, f := range []struct {
		s    string
		base int
	}{{m[2], 10}, {m[3], 10}, {m[5], 16}, {m[6], 16}, {m[7], 16}} {
		n, err := strconv.ParseUint(f.s, f.base, 32)
		if err != nil {
			r.errs = append(r.errs, &lineerr.Error{Source: r.source, Line: r.line,
				Expected: "an mlx5 QP error syndrome with 32-bit numbers (DEV/PORT: QP N error: STATUS (0xV 0xT 0xE))", Found: lineerr.Quote([]byte(f.s))})
			return
		}
		v[i] = n
	}
	rep := r.report(rdma.KernQPErrSyndrome, st)
	rep.Device, rep.Port, rep.QPN, rep.StatusMsg = m[1], uint32(v[0]), uint32(v[1]), m[4]
	rep.VendorSyndrome, rep.HWSyndromeType, rep.HWSyndrome = uint32(v[2]), uint32(v[3]), uint32(v[4])
	rep.Syndrome, rep.HasSyndrome = rdma.MLX5SyndromeOfMessage(m[4])
	if rep.HasSyndrome {
		rep.WCStatus, rep.HasWCStatus = rdma.MLX5SyndromeStatus(rep.Syndrome)
	}
	r.queue = append(r.queue, rep)
}

// cut ends the report being read before its end: truncated.
func (r *Reader) cut(why string) {
	if r.cur == nil {
		return
	}
	rep := r.cur
	r.cur, r.inCall = nil, false
	if rep.Kind == 0 {
		return // a cut-here line with no RDMA WARNING after it
	}
	if rep.Kind == rdma.KernHungUnregister && len(rep.Frames) > 0 && !r.eof {
		// Hung-task reports have no end marker on older kernels: the call
		// trace ending is their end.
		r.finish(rep)
		return
	}
	rep.Truncated = true
	r.errs = append(r.errs, &lineerr.Error{Source: r.source, Line: r.line,
		Expected: fmt.Sprintf("the call trace and end of the %s report of line %d", rep.Kind, rep.Line), Found: why})
	r.finish(rep)
}

// finish queues a complete (or truncated) report if it is about RDMA.
func (r *Reader) finish(rep *rdma.KernelReport) {
	if rep.Kind == rdma.KernHungUnregister {
		rep.WaitsIn = waitsIn(rep.Frames)
		if rep.WaitsIn == "" {
			return // a hung task elsewhere
		}
	}
	r.queue = append(r.queue, rep)
}

func waitsIn(fs []rdma.Frame) string {
	for _, w := range rdmaWaits {
		for _, f := range fs {
			if f.Func == w {
				return w
			}
		}
	}
	return ""
}

func (r *Reader) start(kind rdma.KernelReportKind, st stamp) *rdma.KernelReport {
	r.cut("a new report")
	r.cur = r.report(kind, st)
	return r.cur
}

// report is a new report of the line being read.
func (r *Reader) report(kind rdma.KernelReportKind, st stamp) *rdma.KernelReport {
	return &rdma.KernelReport{Kind: kind, Source: r.source, Line: r.line, Stamp: st.text, Seconds: st.secs, HasSeconds: st.hasSecs,
		Wall: st.wall, HasWall: st.hasWall, WallNoYear: st.noYear}
}

func (r *Reader) feed(line string) {
	st, body := r.split(line)
	if st.text != "" {
		r.stamped++
	}
	trimmed := strings.TrimSpace(body)

	// The named form: one line per object.
	if strings.HasPrefix(trimmed, "restrack: ") {
		if strings.HasPrefix(trimmed, "restrack: ------------[ cut here ]") {
			// Cut-here lines open and close each named report: the device
			// of one is not the next one's (a log cut or grepped may lack
			// the "infiniband DEV: BUG" line that names it).
			r.device = ""
			return
		}
		if m := notFreed.FindStringSubmatch(trimmed); m != nil {
			res, ok := rdma.ResTypeNamed(m[2])
			if !ok {
				// restrack.c's type2str names every type it tracks.
				r.errs = append(r.errs, &lineerr.Error{Source: r.source, Line: r.line,
					Expected: "a restrack object type (" + restrackTypes + ")", Found: lineerr.Quote([]byte(m[2]))})
				return
			}
			owner := rdma.Owner{Comm: m[3]}
			if m[1] == "Kernel" {
				owner = rdma.Owner{KernName: m[3]}
			}
			rep := r.report(rdma.KernRestrackNamed, st)
			rep.Device, rep.Res, rep.Owner = r.device, res, owner
			r.queue = append(r.queue, rep)
		}
		return
	}
	if m := bugLeak.FindStringSubmatch(trimmed); m != nil {
		r.device = m[1]
		return
	}
	if strings.Contains(trimmed, ": QP ") {
		if m := qpSyndrome.FindStringSubmatch(trimmed); m != nil {
			r.syndrome(m, st)
			return
		}
	}

	switch {
	case strings.HasPrefix(trimmed, "------------[ cut here ]------------"):
		r.start(0, st) // its kind comes with the WARNING line
		return
	case strings.HasPrefix(trimmed, "WARNING: "):
		var pid, loc, fn, task string
		if m := warning.FindStringSubmatch(trimmed); m != nil {
			pid, loc, fn = m[1], m[2], m[3]
		} else if m := warningComm.FindStringSubmatch(trimmed); m != nil {
			loc, fn, task, pid = m[1], m[2], m[3], m[4]
		}
		rep := r.cur
		if rep == nil || rep.Kind != 0 {
			rep = r.start(0, st) // a WARNING without its cut-here line
		}
		switch {
		case strings.Contains(loc, "infiniband/core/restrack.c"):
			rep.Kind = rdma.KernRestrackWarning
		case strings.Contains(loc, "infiniband/sw/rxe/rxe_pool.c"):
			rep.Kind = rdma.KernDriverWarning
		default:
			r.cur = nil // not about RDMA resources, or a form not known
			return
		}
		rep.PID, _ = strconv.Atoi(pid)
		rep.Location, rep.Function, rep.Task = loc, fn, task
		return
	case strings.HasPrefix(trimmed, "INFO: task "):
		if m := hung.FindStringSubmatch(trimmed); m != nil {
			rep := r.start(rdma.KernHungUnregister, st)
			rep.Task = m[1]
			rep.PID, _ = strconv.Atoi(m[2])
			rep.BlockedSecs, _ = strconv.Atoi(m[3])
		}
		return
	}

	rep := r.cur
	if rep == nil {
		return
	}
	if rep.Kind == 0 {
		if strings.HasPrefix(trimmed, "---[ end trace") {
			r.cur = nil
		}
		return // between cut-here and the WARNING line
	}
	switch {
	case strings.HasPrefix(trimmed, "---[ end trace"):
		r.cur, r.inCall = nil, false
		r.finish(rep)
	case rep.Task == "" && cpuComm.MatchString(trimmed):
		rep.Task = cpuComm.FindStringSubmatch(trimmed)[2]
	case trimmed == "Call Trace:":
		r.inCall = true
	case trimmed == "<TASK>" || strings.HasPrefix(trimmed, "<IRQ>") || strings.HasPrefix(trimmed, "</IRQ>"):
	case trimmed == "</TASK>":
		r.inCall = false
		if rep.Kind == rdma.KernHungUnregister {
			r.cur = nil
			r.finish(rep)
		}
	case r.inCall && strings.HasPrefix(trimmed, "? "):
		// "? func+0x...": a guess from the stack, not a caller.
	case r.inCall:
		m := frame.FindStringSubmatch(body)
		if m == nil {
			r.inCall = false
			if rep.Kind == rdma.KernHungUnregister && len(rep.Frames) > 0 {
				r.cur = nil // older kernels: the trace ends without </TASK>
				r.finish(rep)
			}
			return
		}
		if len(rep.Frames) < MaxFrames {
			rep.Frames = append(rep.Frames, rdma.Frame{Func: m[2], Module: m[3]})
		} else {
			rep.MoreFrames++
		}
	}
}
