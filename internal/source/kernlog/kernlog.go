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
	"bytes"
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
	warning = regexp.MustCompile(`^WARNING: CPU: \d+ PID: (\d+) at (\S+:\d+) ([A-Za-z0-9_.]+)\+0x`)
	// Newer kernels (sid's 7.2 here): "WARNING: FILE:LINE at FUNC+0x../0x..
	// [MOD], CPU#N: COMM/PID"; the comm may hold any character, the pid
	// is after its last slash.
	warningComm = regexp.MustCompile(`^WARNING: (\S+:\d+) at ([A-Za-z0-9_.]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[[A-Za-z0-9_]+\])?, CPU#\d+: (.*)/(\d+)\s*$`)
	cpuComm     = regexp.MustCompile(`^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)`)
	hung        = regexp.MustCompile(`^INFO: task (.+):(\d+) blocked for more than (\d+) seconds\.`)
	notFreed    = regexp.MustCompile(`^restrack: (Kernel|User) (\S+) object allocated by (.+) is not freed\s*$`)
	// The time prefixes, the device of a named report, frames and mlx5's
	// QP error syndromes are matched by hand (match.go): they are on
	// every line, or are looked for on every line, or come in floods.
)

// Prefixes that decide what a line may be, before anything costlier.
var (
	restrackWord = []byte("restrack: ")
	restrackCut  = []byte("restrack: ------------[ cut here ]")
	cutHere      = []byte("------------[ cut here ]------------")
	warningWord  = []byte("WARNING: ")
	infinibandIn = []byte("infiniband/")
	infoTask     = []byte("INFO: task ")
	endTrace     = []byte("---[ end trace")
	cpuWord      = []byte("CPU: ")
	irqOpen      = []byte("<IRQ>")
	irqClose     = []byte("</IRQ>")
	guess        = []byte("? ")
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
		if err == nil {
			r.feed(line)
			continue
		}
		if errors.Is(err, io.EOF) {
			r.eof = true
			r.cut("the end of the log")
			continue
		}
		var le *lineerr.Error
		if errors.As(err, &le) {
			r.errs = append(r.errs, err)
			continue
		}
		// Told after the errors not shown; a report being read is cut by
		// it.
		r.eof, r.err = true, err
		r.cut("the end of what could be read")
	}
}

func (r *Reader) readLine() ([]byte, error) {
	b, err := r.lr.Next()
	r.line = r.lr.Line()
	if err == io.EOF {
		r.line++ // a report cut by the end is cut after the last line
	}
	return b, err
}

// stamp is a line's time prefix as the line has it, in the forms it was
// found in: read into times only for a line that makes a report (most
// make none), and valid only while the line is.
type stamp struct {
	journal []byte // journalctl's time, nil: none
	secs    []byte // dmesg's seconds since boot
	date    []byte // dmesg -T's date
}

// split separates a line's time prefix from its text: journalctl's, then
// on what follows it dmesg's or dmesg -T's (journalctl -k may carry both).
func split(line []byte) (st stamp, body []byte) {
	if len(line) > 0 && line[0] == '[' {
		// dmesg's prefix, or journalctl's short-monotonic one: the same
		// "[   40.644129]", then " HOST kernel: " for journalctl's.
		secs, closed, n := matchDmesg(line)
		switch {
		case n == 0:
			if date, n := matchDate(line); n > 0 {
				return stamp{date: date}, line[n:]
			}
			return st, line
		case hostKernel(line, closed) == 0:
			return stamp{secs: secs}, line[n:]
		}
		st.journal, line = line[:closed], line[hostKernel(line, closed):]
	} else if j, n := matchJournal(line); n > 0 {
		st.journal, line = j, line[n:]
	}
	if secs, _, n := matchDmesg(line); n > 0 {
		st.secs = secs
		return st, line[n:]
	}
	if date, n := matchDate(line); n > 0 {
		st.date = date
		return st, line[n:]
	}
	return st, line
}

// stamped reports whether the line had a time prefix of any form.
func (st *stamp) stamped() bool { return st.journal != nil || st.secs != nil || st.date != nil }

// times fills a report's stamp and times from a line's prefix.
func (r *Reader) times(rep *rdma.KernelReport, st stamp) {
	if st.journal != nil {
		j := string(st.journal)
		rep.Stamp = j
		if s, ok := strings.CutPrefix(j, "["); ok { // short-monotonic
			secs, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "]")), 64)
			rep.Seconds, rep.HasSeconds = secs, err == nil
		} else {
			rep.Wall, rep.WallNoYear, rep.HasWall = r.wallOf(j)
		}
	}
	switch {
	case st.secs != nil:
		secs := string(st.secs)
		s, err := strconv.ParseFloat(secs, 64)
		if rep.Stamp == "" {
			rep.Stamp = "[" + secs + "]"
		}
		rep.Seconds, rep.HasSeconds = s, err == nil
	case st.date != nil:
		rep.Stamp = string(st.date)
		rep.Wall, rep.WallNoYear, rep.HasWall = r.wallOf(rep.Stamp)
	}
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

// syndrome queues a QP error syndrome line. A number too large for its
// field (the kernel prints 24-bit QP numbers and 32-bit syndromes) is an
// error naming the line.
func (r *Reader) syndrome(m syndromeLine, st stamp) {
	var v [5]uint32
	for i, f := range []struct {
		s    []byte
		base uint64
	}{{m.port, 10}, {m.qpn, 10}, {m.vendor, 16}, {m.hwType, 16}, {m.hw, 16}} {
		n, ok := parseUint32(f.s, f.base)
		if !ok {
			r.errs = append(r.errs, &lineerr.Error{Source: r.source, Line: r.line,
				Expected: "an mlx5 QP error syndrome with 32-bit numbers (DEV/PORT: QP N error: STATUS (0xV 0xT 0xE))", Found: lineerr.Quote(f.s)})
			return
		}
		v[i] = n
	}
	rep := r.report(rdma.KernQPErrSyndrome, st)
	rep.Device, rep.Port, rep.QPN, rep.StatusMsg = string(m.dev), v[0], v[1], string(m.status)
	rep.VendorSyndrome, rep.HWSyndromeType, rep.HWSyndrome = v[2], v[3], v[4]
	rep.Syndrome, rep.HasSyndrome = rdma.MLX5SyndromeOfMessage(rep.StatusMsg)
	if rep.HasSyndrome {
		rep.WCStatus, rep.HasWCStatus = rdma.MLX5SyndromeStatus(rep.Syndrome)
	}
	r.queue = append(r.queue, rep)
}

// parseUint32 reads decimal or lower-case hexadecimal digits (the matcher
// checked that they are) as strconv.ParseUint(s, base, 32) does: false
// when there are none or they do not fit.
func parseUint32(b []byte, base uint64) (uint32, bool) {
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if c >= 'a' {
			d = uint64(c-'a') + 10
		}
		if n = n*base + d; n > 1<<32-1 {
			return 0, false
		}
	}
	return uint32(n), len(b) > 0
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
	rep := &rdma.KernelReport{Kind: kind, Source: r.source, Line: r.line}
	r.times(rep, st)
	return rep
}

func (r *Reader) feed(line []byte) {
	st, body := split(line)
	if st.stamped() {
		r.stamped++
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 && !st.stamped() {
		// A blank line ends a call trace as any line that is no frame
		// does; the blank lines after it change nothing more, and a run
		// of them (a bomb of newlines) is passed over at once.
		defer r.lr.SkipBlank()
	}

	// The named form: one line per object.
	if bytes.HasPrefix(trimmed, restrackWord) {
		if bytes.HasPrefix(trimmed, restrackCut) {
			// Cut-here lines open and close each named report: the device
			// of one is not the next one's (a log cut or grepped may lack
			// the "infiniband DEV: BUG" line that names it).
			r.device = ""
			return
		}
		if m := notFreed.FindSubmatch(trimmed); m != nil {
			res, ok := rdma.ResTypeNamed(string(m[2]))
			if !ok {
				// restrack.c's type2str names every type it tracks.
				r.errs = append(r.errs, &lineerr.Error{Source: r.source, Line: r.line,
					Expected: "a restrack object type (" + restrackTypes + ")", Found: lineerr.Quote(m[2])})
				return
			}
			owner := rdma.Owner{Comm: string(m[3])}
			if string(m[1]) == "Kernel" {
				owner = rdma.Owner{KernName: string(m[3])}
			}
			rep := r.report(rdma.KernRestrackNamed, st)
			rep.Device, rep.Res, rep.Owner = r.device, res, owner
			r.queue = append(r.queue, rep)
		}
		return
	}
	if dev, ok := matchBugLeak(trimmed); ok {
		r.device = string(dev)
		return
	}
	if m, ok := matchSyndrome(trimmed); ok {
		r.syndrome(m, st)
		return
	}

	switch {
	case bytes.HasPrefix(trimmed, cutHere):
		r.start(0, st) // its kind comes with the WARNING line
		return
	case bytes.HasPrefix(trimmed, warningWord):
		if !bytes.Contains(trimmed, infinibandIn) {
			// Not about RDMA (its location is elsewhere): it ends the
			// report being read, as a new one would.
			r.cut("a new report")
			return
		}
		var pid, loc, fn, task string
		if m := warning.FindSubmatch(trimmed); m != nil {
			pid, loc, fn = string(m[1]), string(m[2]), string(m[3])
		} else if m := warningComm.FindSubmatch(trimmed); m != nil {
			loc, fn, task, pid = string(m[1]), string(m[2]), string(m[3]), string(m[4])
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
	case bytes.HasPrefix(trimmed, infoTask):
		if m := hung.FindSubmatch(trimmed); m != nil {
			rep := r.start(rdma.KernHungUnregister, st)
			rep.Task = string(m[1])
			rep.PID, _ = strconv.Atoi(string(m[2]))
			rep.BlockedSecs, _ = strconv.Atoi(string(m[3]))
		}
		return
	}

	rep := r.cur
	if rep == nil {
		return
	}
	if rep.Kind == 0 {
		if bytes.HasPrefix(trimmed, endTrace) {
			r.cur = nil
		}
		return // between cut-here and the WARNING line
	}
	switch {
	case bytes.HasPrefix(trimmed, endTrace):
		r.cur, r.inCall = nil, false
		r.finish(rep)
	case rep.Task == "" && bytes.HasPrefix(trimmed, cpuWord) && cpuComm.Match(trimmed):
		rep.Task = string(cpuComm.FindSubmatch(trimmed)[2])
	case string(trimmed) == "Call Trace:":
		r.inCall = true
	case string(trimmed) == "<TASK>" || bytes.HasPrefix(trimmed, irqOpen) || bytes.HasPrefix(trimmed, irqClose):
	case string(trimmed) == "</TASK>":
		r.inCall = false
		if rep.Kind == rdma.KernHungUnregister {
			r.cur = nil
			r.finish(rep)
		}
	case r.inCall && bytes.HasPrefix(trimmed, guess):
		// "? func+0x...": a guess from the stack, not a caller.
	case r.inCall:
		fn, mod, ok := matchFrame(body)
		if !ok {
			r.inCall = false
			if rep.Kind == rdma.KernHungUnregister && len(rep.Frames) > 0 {
				r.cur = nil // older kernels: the trace ends without </TASK>
				r.finish(rep)
			}
			return
		}
		if len(rep.Frames) < MaxFrames {
			rep.Frames = append(rep.Frames, rdma.Frame{Func: string(fn), Module: string(mod)})
		} else {
			rep.MoreFrames++
		}
	}
}

// NotALogError is said of a log in which nothing was a kernel log's: no
// report and no line with a kernel log's prefix. It is probably the wrong
// file, and is not passed over in silence.
type NotALogError struct{ Source string }

func (e *NotALogError) Error() string {
	return e.Source + ": not a kernel log: no line of it has the prefix of dmesg, dmesg -T or journalctl -k (gzip, xz, zstd and bzip2 are read)"
}

// Drain reads the rest of the log: each report to each, each line not
// understood to bad (lines.Drain: told, counted, and reading goes on). It
// returns how many lines were bad, and what ended the log early: an error
// reading it (named after it), or a *NotALogError.
func (r *Reader) Drain(each func(*rdma.KernelReport), bad func(*lineerr.Error)) (badLines int, err error) {
	found := 0
	badLines, err = lines.Drain(func() error {
		rep, err := r.Next()
		if err == nil {
			found++
			each(rep)
		}
		return err
	}, bad)
	switch {
	case err != nil:
		return badLines, lines.ReadError(r.source, err)
	case found == 0 && r.stamped == 0:
		return badLines, &NotALogError{Source: r.source}
	}
	return badLines, nil
}
