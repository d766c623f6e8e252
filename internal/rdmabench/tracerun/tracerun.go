// Package tracerun runs `rdmatrace trace -j` as its own process beside a
// program that wants its own activity traced (rdmabench), and reads what
// it recorded back as rdma.Event values on CLOCK_MONOTONIC.
package tracerun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// Options say which rdmatrace to run and whom it follows.
type Options struct {
	Path   string        // rdmatrace binary; "" finds it (Find)
	Follow []int         // processes whose off-CPU spells are traced
	Dir    string        // where its output goes ("": a new temporary directory)
	Wait   time.Duration // for its hooks to attach; 0 means 60 s (the guest's emulated CPU is slow)
	// CPUs the tracer runs on (nil: wherever this process may), and its
	// nice value (0: this process's): set before it runs its first
	// instruction, so every thread it makes has them too.
	CPUs []int
	Nice int
	// Plain runs trace as a user would during a job's start: its own
	// --poll, and no --follow-pid (no scheduler hooks, no spans), so that
	// what is measured is what `rdmatrace trace -j` costs and loses. Extra
	// are more of trace's flags (e.g. --ring-size), after the others.
	Plain bool
	Extra []string
}

// Run is a running tracer.
type Run struct {
	cmd     *exec.Cmd
	dir     string
	tmp     bool
	out     string // its NDJSON
	errPath string // its stderr
	offset  int64  // its clock: wall - monotonic ns
	read    int64  // bytes of out already turned into events
	errRead int64  // bytes of its stderr already looked at for warnings
	// readLines counts the lines EachLine has read (for bad lines'
	// numbers; Each and EachUntil do not count them).
	readLines int
	// final are the warnings Stop read before removing the directory
	// (the tracer's loss summary comes as it exits).
	final   []string
	stopped bool
	done    chan error
	// summary is the tracer's last counts line, read by Stop; usage what
	// the kernel says the process used, at its exit.
	summary Summary
	exit    Usage
}

// Find locates rdmatrace: path if given, else next to this executable,
// else in the sbin beside its bin (the packages' and make install's layout:
// rdmabench in /usr/bin, rdmatrace in /usr/sbin, which a user's PATH
// often lacks), else on PATH.
func Find(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("--rdmatrace %s: %w", path, err)
		}
		return path, nil
	}
	if exe, err := os.Executable(); err == nil {
		for _, p := range besides(exe) {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	p, err := exec.LookPath("rdmatrace")
	if err != nil {
		return "", errors.New("rdmatrace not found next to this program, in its sbin, nor on PATH: give --rdmatrace PATH, or --no-trace")
	}
	return p, nil
}

// besides lists where rdmatrace is looked for near the program exe, in
// order: its own directory, then PREFIX/sbin when exe is in PREFIX/bin.
func besides(exe string) []string {
	dir := filepath.Dir(exe)
	out := []string{filepath.Join(dir, "rdmatrace")}
	if filepath.Base(dir) == "bin" {
		out = append(out, filepath.Join(filepath.Dir(dir), "sbin", "rdmatrace"))
	}
	return out
}

// Start starts the tracer and returns once every hook it can attach is
// attached (its ready file exists).
func Start(o Options) (*Run, error) {
	path, err := Find(o.Path)
	if err != nil {
		return nil, err
	}
	r := &Run{dir: o.Dir, done: make(chan error, 1)}
	if r.dir == "" {
		if r.dir, err = os.MkdirTemp("", "rdmabench-trace-"); err != nil {
			return nil, err
		}
		r.tmp = true
	}
	r.out, r.errPath = filepath.Join(r.dir, "trace.ndjson"), filepath.Join(r.dir, "trace.err")
	ready := filepath.Join(r.dir, "ready")
	// Made as every file rdmatrace writes: Options.Dir may be shared.
	// Under sudo, files in the user's directory are the user's, made as
	// that user (the tracer's ready file too); a directory of our own
	// stays root's, and so does what the tracer writes in it.
	owner := safefile.Invoker(os.Getenv)
	env := os.Environ()
	if r.tmp {
		owner, env = nil, withoutSudo(env)
	}
	out, err := safefile.Create(r.out, owner)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	errf, err := safefile.Create(r.errPath, owner)
	if err != nil {
		return nil, err
	}
	defer errf.Close()
	// The benchmark joins events after its run: it needs them complete,
	// not soon. Reading every 250 ms instead of 20 wakes the tracer, which
	// takes a CPU from a busy-polling end each time, a twelfth as often.
	// --bpf: without BPF there are no spans to join, and netlink's polled
	// objects are no trace of the benchmark; the run is then untraced.
	args := []string{"trace", "-j", "--bpf", "--no-snapshot", "--ready-file", ready}
	if !o.Plain {
		args = append(args, "--poll", poll.String())
		for _, p := range o.Follow {
			args = append(args, "--follow-pid", strconv.Itoa(p))
		}
	}
	args = append(args, o.Extra...)
	r.cmd = exec.Command(path, args...)
	r.cmd.Stdout, r.cmd.Stderr, r.cmd.Env = out, errf, env
	if err := startPlaced(r.cmd, o.CPUs, o.Nice); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	wait := o.Wait
	if wait == 0 {
		wait = 60 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		if b, err := os.ReadFile(ready); err == nil && bytes.Count(b, []byte("\n")) >= 2 {
			if r.offset, err = clockOffset(b); err != nil {
				r.Stop()
				return nil, fmt.Errorf("%s: %w", ready, err)
			}
			return r, nil
		}
		select {
		case err := <-r.done:
			return nil, fmt.Errorf("rdmatrace exited before it was ready (%v): %s", err, r.stderrLine())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("rdmatrace not ready after %v: %s", wait, r.stderrLine())
		}
	}
}

// withoutSudo is env without sudo's SUDO_UID and SUDO_GID: the tracer
// then writes as root, not as the user who ran sudo.
func withoutSudo(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SUDO_UID=") && !strings.HasPrefix(kv, "SUDO_GID=") {
			out = append(out, kv)
		}
	}
	return out
}

// startPlaced starts cmd on cpus at nice, as taskset and nice would: a
// child inherits the CPU affinity and nice value of the thread that forks
// it, so a thread of its own is given them, forks, and is then let go of
// by the runtime (a goroutine that exits locked ends its thread), so that
// nothing else of this process ever runs with them.
func startPlaced(cmd *exec.Cmd, cpus []int, nice int) error {
	if len(cpus) == 0 && nice == 0 {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if len(cpus) > 0 {
			var set unix.CPUSet
			for _, c := range cpus {
				set.Set(c)
			}
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				done <- fmt.Errorf("CPUs %v for the tracer: %w", cpus, err)
				return
			}
		}
		if nice != 0 {
			// PRIO_PROCESS with who 0 is the calling thread on Linux.
			if err := unix.Setpriority(unix.PRIO_PROCESS, 0, nice); err != nil {
				done <- fmt.Errorf("nice %d for the tracer: %w", nice, err)
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}

// clockOffset reads the ready file's "clock-offset NS" line.
func clockOffset(b []byte) (int64, error) {
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "clock-offset "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no clock-offset line: expected an rdmatrace with --follow-pid")
}

// stderrLine is the last line rdmatrace wrote on stderr, for errors.
func (r *Run) stderrLine() string {
	b, _ := os.ReadFile(r.errPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// poll is how often the tracer reads its ring buffer while events flow.
const poll = 250 * time.Millisecond

// settle is how long events of the moment before may still be on their
// way: in the ring buffer until the reader's next look (poll), then in
// its output buffer. Shorter than poll, the last events of a run were
// read with the next run's, too late to explain its outliers.
const settle = poll + 150*time.Millisecond

// Events reads what the tracer recorded since the last call: complete
// lines only. Bad lines are returned as errors beside the events.
func (r *Run) Events() ([]rdma.Event, []error, error) {
	var evs []rdma.Event
	bad, err := r.Each(func(e *rdma.Event) { evs = append(evs, *e) })
	return evs, bad, err
}

// Each is Events as a stream: fn gets each event recorded since the last
// call, one at a time, in the file's order; the event is reused for the
// next one (copy what you keep). Memory does not grow with the trace.
func (r *Run) Each(fn func(*rdma.Event)) ([]error, error) {
	time.Sleep(settle)
	return r.each(fn)
}

// catchUp bounds how long EachUntil waits for a tracer that lags.
const catchUp = 10 * time.Second

// EachUntil is Each for a run that ended at until (CLOCK_MONOTONIC ns): a
// tracer behind a flood may not have read that far yet. It reads on
// until the tracer has written an event from until on, or has written
// nothing more for a while (it is idle: everything is out), or catchUp
// has passed; behind still, it says so in an error among the bad ones.
func (r *Run) EachUntil(until int64, fn func(*rdma.Event)) ([]error, error) {
	deadline := time.Now().Add(catchUp)
	reached := false
	var bad []error
	for {
		time.Sleep(settle)
		from := r.read
		b, err := r.each(func(e *rdma.Event) {
			reached = reached || int64(e.Mono) >= until
			fn(e)
		})
		bad = append(bad, b...)
		if err != nil || reached || r.read == from {
			return bad, err
		}
		if time.Now().After(deadline) {
			return append(bad, fmt.Errorf("the tracer had not caught up with the run's end %v after it: the last outliers may lack causes", catchUp)), nil
		}
	}
}

// Settle waits until the tracer's output has not grown for quiet, or
// limit has passed (an error: it is still writing), and returns when
// (CLOCK_MONOTONIC ns, within a tenth of a second) it last grew: after a
// burst, how far the tracer lagged behind it. It only looks at the file's
// size: reading what was written (EachLine) takes a while of its own.
func (r *Run) Settle(quiet, limit time.Duration) (last int64, err error) {
	const look = 100 * time.Millisecond
	deadline := time.Now().Add(limit)
	size := int64(-1)
	still := time.Duration(0)
	for {
		st, err := os.Stat(r.out)
		if err != nil {
			return last, err
		}
		if st.Size() != size {
			size, last, still = st.Size(), monoNow(), 0
		} else if still += look; still >= quiet {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("the tracer was still writing events %v after the run's end", limit)
		}
		time.Sleep(look)
	}
}

// EachLine reads what the tracer wrote since the last read, complete
// lines only, counting them all but decoding only those keep takes (the
// JSON decoding of a line is the cost, under an emulated CPU most of all):
// fn gets each of those events, reused for the next. Bad lines come back
// as errors, the first maxBad of them.
func (r *Run) EachLine(keep func(line []byte) bool, fn func(*rdma.Event)) (lines int, bad []error, err error) {
	f, err := os.Open(r.out)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	end, err := lastLineEnd(f, r.read)
	if err != nil {
		return 0, nil, err
	}
	if _, err := f.Seek(r.read, io.SeekStart); err != nil {
		return 0, nil, err
	}
	rd := bufio.NewReaderSize(io.LimitReader(f, end-r.read), 1<<20)
	more := 0
	defer func() {
		if more > 0 {
			bad = append(bad, &lineerr.Error{Source: r.out, More: more})
		}
	}()
	// The line numbers of bad lines count from the file's start.
	for r.readLines++; ; r.readLines++ {
		line, err := rd.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than any event: bad, and skipped whole.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = rd.ReadSlice('\n')
			}
			lines++
			bad, more = appendBad(bad, more, &lineerr.Error{Source: r.out, Line: r.readLines, Expected: "an event of rdmatrace trace -j", Found: "a line of over 1 MiB"})
			continue
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return lines, bad, err
		}
		lines++
		if !keep(line) {
			continue
		}
		var ev rdma.Event
		derr := replay.NewReader(bytes.NewReader(line), r.out).Next(&ev)
		var le *lineerr.Error
		switch {
		case derr == nil:
			ev.Mono = uint64(ev.Time.UnixNano() - r.offset)
			fn(&ev)
		case errors.As(derr, &le):
			le.Line = r.readLines
			bad, more = appendBad(bad, more, le)
		case !errors.Is(derr, io.EOF):
			return lines, bad, derr
		}
	}
	r.readLines--
	r.read = end
	return lines, bad, nil
}

// maxBad bounds the bad lines EachLine returns, as every reader's are.
const maxBad = 20

func appendBad(bad []error, more int, e *lineerr.Error) ([]error, int) {
	if len(bad) < maxBad {
		return append(bad, e), more
	}
	return bad, more + 1
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func (r *Run) each(fn func(*rdma.Event)) ([]error, error) {
	f, err := os.Open(r.out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	end, err := lastLineEnd(f, r.read)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(r.read, io.SeekStart); err != nil {
		return nil, err
	}
	bad, err := ParseEach(bufio.NewReaderSize(io.LimitReader(f, end-r.read), 1<<16), r.out, r.offset, fn)
	r.read = end
	return bad, err
}

// lastLineEnd is the offset just past the last newline of f at or after
// from (from itself if there is none): where complete lines end.
func lastLineEnd(f *os.File, from int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for hi := st.Size(); hi > from; {
		lo := max(from, hi-int64(len(buf)))
		n, err := f.ReadAt(buf[:hi-lo], lo)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return lo + int64(i) + 1, nil
		}
		hi = lo
	}
	return from, nil
}

// Parse reads trace -j lines and puts each event back on CLOCK_MONOTONIC
// with the tracer's clock offset.
func Parse(in io.Reader, source string, offset int64) ([]rdma.Event, []error, error) {
	var evs []rdma.Event
	bad, err := ParseEach(in, source, offset, func(e *rdma.Event) { evs = append(evs, *e) })
	return evs, bad, err
}

// ParseEach is Parse as a stream: fn gets each event (reused for the
// next: copy what you keep). The bad lines are bounded as every reader's
// are (lineerr.Limit): the first ones, then one error counting the rest.
func ParseEach(in io.Reader, source string, offset int64, fn func(*rdma.Event)) (bad []error, err error) {
	rd := replay.NewReader(in, source)
	var ev rdma.Event
	for {
		ev = rdma.Event{}
		err := rd.Next(&ev)
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		var re *lineerr.Error
		if errors.As(err, &re) {
			bad = append(bad, err)
			continue
		}
		if err != nil {
			return bad, err
		}
		ev.Mono = uint64(ev.Time.UnixNano() - offset)
		fn(&ev)
	}
}

// Warnings are the lines the tracer wrote on stderr since the last call
// that say it lost events (ring buffer full, programs skipped or missed):
// a benchmark must pass them on, or an outlier with nothing to explain it
// would be read as one nothing disturbed.
func (r *Run) Warnings() []string {
	if r.stopped {
		w := r.final
		r.final = nil
		return w
	}
	f, err := os.Open(r.errPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(r.errRead, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(f)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	r.errRead += int64(len(b))
	var w []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "WARNING") {
			w = append(w, l)
		}
	}
	return w
}

// stopWait is how long Stop lets the tracer end. Its stop reads what is
// queued (at most 2 s), then detaches every hook, each detach waiting for
// the kernel's grace periods: 2.6 s for 42 links on an emulated 6.12, and
// over 10 s on an emulated machine that was also running other guests.
const stopWait = 30 * time.Second

// Stop ends the tracer (SIGINT: it reads what is queued, then exits) and
// removes its temporary directory.
func (r *Run) Stop() error {
	if r.cmd == nil { // Recorded
		r.final, r.stopped = r.Warnings(), true
		return nil
	}
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(syscall.SIGINT)
	}
	var err error
	select {
	case err = <-r.done:
	case <-time.After(stopWait):
		_ = r.cmd.Process.Kill()
		err = <-r.done
		err = fmt.Errorf("rdmatrace did not stop in %v after SIGINT, killed: %v", stopWait, err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("rdmatrace: %v: %s", err, r.stderrLine())
	}
	r.final, r.stopped = r.Warnings(), true
	if b, rerr := os.ReadFile(r.errPath); rerr == nil {
		r.summary = ParseSummary(b)
	}
	if st := r.cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.exit = Usage{CPU: st.UserTime() + st.SystemTime(), PeakRSS: ru.Maxrss << 10}
		}
	}
	if r.tmp {
		os.RemoveAll(r.dir)
	}
	return err
}

// Dir is where the tracer's output is.
func (r *Run) Dir() string { return r.dir }

// Recorded reads a trace already recorded in path (trace -j output, e.g. a
// --trace-dir's trace.ndjson) as if a tracer were writing it, with the
// given clock offset (wall − monotonic ns, the ready file's): for replays
// and for measuring the benchmark's side without a tracer. Stop only tells
// the warnings of traceErr ("" : none).
func Recorded(path, traceErr string, offset int64) *Run {
	return &Run{dir: filepath.Dir(path), out: path, errPath: traceErr, offset: offset}
}

// Sleeps counts the times the tracer's threads have gone to sleep so far
// (voluntary context switches, /proc/PID/task/*/status): each ended with a
// wakeup that took a CPU, maybe from the benchmark. ok is false for a
// recorded trace or when /proc cannot tell.
func (r *Run) Sleeps() (n int64, ok bool) {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0, false
	}
	return Sleeps(fmt.Sprintf("/proc/%d/task", r.cmd.Process.Pid))
}

// Sleeps sums voluntary_ctxt_switches over the status files of the tasks
// under dir (a /proc/PID/task directory).
func Sleeps(dir string) (n int64, ok bool) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
		if err != nil {
			continue // the thread has exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, found := strings.CutPrefix(l, "voluntary_ctxt_switches:"); found {
				if x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n, ok = n+x, true
				}
			}
		}
	}
	return n, ok
}

// Summary is what the tracer's last line of counts says ("events: N seen,
// N shown, N dropped").
type Summary struct {
	Seen, Shown, Dropped uint64
	OK                   bool // the line was found
}

var summaryLine = regexp.MustCompile(`events: ([0-9]+) seen, ([0-9]+) shown, ([0-9]+) dropped`)

// ParseSummary finds the last counts line in the tracer's stderr.
func ParseSummary(stderr []byte) Summary {
	m := summaryLine.FindAllSubmatch(stderr, -1)
	if len(m) == 0 {
		return Summary{}
	}
	last := m[len(m)-1]
	var s Summary
	var err [3]error
	s.Seen, err[0] = strconv.ParseUint(string(last[1]), 10, 64)
	s.Shown, err[1] = strconv.ParseUint(string(last[2]), 10, 64)
	s.Dropped, err[2] = strconv.ParseUint(string(last[3]), 10, 64)
	s.OK = err[0] == nil && err[1] == nil && err[2] == nil
	return s
}

// Summary is the tracer's counts as it exited (after Stop; OK false
// before, or when it wrote none).
func (r *Run) Summary() Summary { return r.summary }

// Usage is what the tracer process used: CPU (user and system, all its
// threads) and memory.
type Usage struct {
	CPU     time.Duration
	RSS     int64 // bytes resident now (0 at exit)
	PeakRSS int64 // bytes, the most it held resident (VmHWM, ru_maxrss)
}

// Usage reads what the tracer has used so far from /proc; after Stop, the
// kernel's account of it at its exit (no RSS then).
func (r *Run) Usage() (Usage, error) {
	if r.stopped {
		return r.exit, nil
	}
	if r.cmd == nil || r.cmd.Process == nil {
		return Usage{}, errors.New("no tracer process")
	}
	return ProcUsage(fmt.Sprintf("/proc/%d", r.cmd.Process.Pid))
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture (sysconf(_SC_CLK_TCK) without cgo).
const clockTicks = 100

// ProcUsage reads a process's CPU time from dir/stat (utime and stime,
// fields 14 and 15, after the command in parentheses) and its memory from
// dir/status (VmRSS, VmHWM).
func ProcUsage(dir string) (Usage, error) {
	var u Usage
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return u, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return u, fmt.Errorf("%s/stat: no command in parentheses", dir)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return u, fmt.Errorf("%s/stat: %d fields after the command, want at least 13", dir, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("%s/stat: utime %q, stime %q: not numbers", dir, f[11], f[12])
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTicks
	sb, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(sb), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return u, fmt.Errorf("%s/status: %s %q: not a number of kB", dir, k, strings.TrimSpace(v))
		}
		if k == "VmRSS" {
			u.RSS = kb << 10
		} else {
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// PID is the tracer's process (0: none, a recorded trace).
func (r *Run) PID() int {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}
