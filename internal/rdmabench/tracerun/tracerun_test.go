package tracerun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fake is an rdmatrace stand-in: it checks its arguments, says it is ready
// with a clock offset of 1 s, writes two events and a bad line, and exits
// 0 on SIGINT as rdmatrace does. On stderr: the hooks it attached and a
// loss warning.
const fake = `#!/bin/sh
case "$*" in *"--follow-pid 4242"*) ;; *) echo "no --follow-pid: $*" >&2; exit 3;; esac
while [ "$1" != "--ready-file" ]; do shift; done
trap 'echo "rdmatrace: WARNING: the kernel skipped 2 runs of its programs" >&2; exit 0' INT
echo '{"time":"1970-01-01T00:00:03.5Z","event":"off-cpu","pid":5,"comm":"b","dur-us":2,"wait-us":0,"preempted":true,"next-pid":9,"next-comm":"hog"}'
echo 'not json'
echo '{"time":"1970-01-01T00:00:04Z","event":"span","func":"ib_uverbs_reg_mr","pid":6,"comm":"n","dur-us":1.5}'
echo 'rdmatrace: hooks attached: 2: sched:sched_switch (tp_btf), sched:sched_wakeup (tp_btf)' >&2
echo 'rdmatrace: WARNING: 3 events dropped (ring buffer full; 3 in all): use a larger --ring-size' >&2
printf '1\nclock-offset 1000000000\n' > "$2"
while :; do sleep 0.05; done
`

func TestStartReadStop(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rdmatrace")
	if err := os.WriteFile(bin, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Start(Options{Path: bin, Follow: []int{4242}})
	if err != nil {
		t.Fatal(err)
	}
	evs, bad, err := r.Events()
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || len(bad) != 1 || !strings.Contains(bad[0].Error(), "trace.ndjson:2:") {
		t.Fatalf("events %+v, bad lines %v: want 2 events and line 2 bad", evs, bad)
	}
	if evs[0].Mono != 2_500_000_000 || evs[1].Mono != 3_000_000_000 || evs[1].Span.Dur != 1500 {
		t.Errorf("monotonic times %d, %d (dur %d): want the wall times less the 1 s offset", evs[0].Mono, evs[1].Mono, evs[1].Span.Dur)
	}
	if again, _, _ := r.Events(); len(again) != 0 {
		t.Errorf("a second read gave %d events again", len(again))
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "3 events dropped") {
		t.Errorf("warnings %q: want the one loss warning, not the hooks line", w)
	}
	if w := r.Warnings(); len(w) != 0 {
		t.Errorf("a second look gave %q again", w)
	}
	dir := r.Dir()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "skipped 2 runs") {
		t.Errorf("warnings after Stop %q: want the one the tracer wrote as it exited", w)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind", dir)
	}
}

func TestAMissingTracerIsOneLine(t *testing.T) {
	_, err := Start(Options{Path: "/nonexistent/rdmatrace"})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--rdmatrace") {
		t.Errorf("error %v: want one line naming --rdmatrace", err)
	}
}

func TestATracerThatFailsSaysWhy(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rdmatrace")
	os.WriteFile(bin, []byte("#!/bin/sh\necho 'rdmatrace: loading BPF programs needs CAP_BPF' >&2\nexit 1\n"), 0o755)
	_, err := Start(Options{Path: bin})
	if err == nil || !strings.Contains(err.Error(), "CAP_BPF") {
		t.Errorf("error %v: want rdmatrace's own reason", err)
	}
}

func TestEachStreamsCompleteLinesOnlyAndBoundsTheBadOnes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.ndjson")
	line := `{"time":"1970-01-01T00:00:03.5Z","event":"off-cpu","pid":5,"comm":"b","dur-us":2,"wait-us":0,"preempted":true,"next-pid":9,"next-comm":"hog"}` + "\n"
	body := strings.Repeat(line, 1000) + strings.Repeat("not json\n", lineerr.Shown+5) + line + line[:20]
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Recorded(path, "", 1_000_000_000)
	n := 0
	bad, err := r.Each(func(e *rdma.Event) {
		if e.Mono != 2_500_000_000 {
			t.Fatalf("event at %d, want the wall time less the offset", e.Mono)
		}
		n++
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1001 || len(bad) != lineerr.Shown+1 || !strings.Contains(bad[lineerr.Shown].Error(), "5 more bad lines") {
		t.Fatalf("%d events, %d bad (last %v): want 1001, and %d bad lines then one counting 5 more", n, len(bad), bad[len(bad)-1], lineerr.Shown)
	}
	// The line being written is read once complete.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(line[20:])
	f.Close()
	if evs, _, _ := r.Events(); len(evs) != 1 {
		t.Errorf("%d events after the last line was completed, want 1", len(evs))
	}
}

func TestEachUntilWaitsForATracerThatLags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.ndjson")
	at := func(s int) string {
		return `{"time":"1970-01-01T00:00:0` + string(rune('0'+s)) + `Z","event":"off-cpu","pid":5,"comm":"b","dur-us":2,"wait-us":0,"next-pid":9,"next-comm":"hog"}` + "\n"
	}
	if err := os.WriteFile(path, []byte(at(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The tracer writes the run's last seconds a line at
	// a time, faster than a settle, but far behind.
	go func() {
		for s := 2; s <= 5; s++ {
			time.Sleep(settle / 2)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(at(s))
			f.Close()
		}
	}()
	r := Recorded(path, "", 0)
	var got []uint64
	bad, err := r.EachUntil(4e9, func(e *rdma.Event) { got = append(got, e.Mono/1e9) })
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	// A line more may have come before the last look.
	if len(got) < 4 || got[3] != 4 {
		t.Errorf("events at %v s: want those up to the run's end at 4 s", got)
	}
}

// The tracer runs where it is put, as taskset and nice would place it, and
// this process keeps its own CPUs and priority.
func TestStartPlacedPinsAndNicesTheChildOnly(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024; i++ {
		if before.IsSet(i) {
			cpu = i
			break
		}
	}
	var out strings.Builder
	cmd := exec.Command("/bin/sh", "-c", `grep Cpus_allowed_list /proc/self/status; cut -d" " -f19 /proc/self/stat`)
	cmd.Stdout = &out
	if err := startPlaced(cmd, []int{cpu}, 7); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Cpus_allowed_list:\t%d\n7\n", cpu)
	if out.String() != want {
		t.Errorf("the child says %q, want %q", out.String(), want)
	}
	for range 20 { // the thread that forked may not be this one: ask several
		var now unix.CPUSet
		if err := unix.SchedGetaffinity(0, &now); err != nil || now != before {
			t.Fatalf("this process's CPUs changed: %v (%v), were %v", now, err, before)
		}
		if p, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil || p != 20 {
			t.Fatalf("this thread's priority %d (%v), want nice 0 (20)", p, err)
		}
		runtime.Gosched()
	}
}

func TestSleepsSumsTheThreadsVoluntarySwitches(t *testing.T) {
	dir := t.TempDir()
	for name, status := range map[string]string{
		"10": "Name:\trdmatrace\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t7\n",
		"11": "Name:\trdmatrace\nvoluntary_ctxt_switches:\t2\n",
		"12": "Name:\tgone\n", // no count: not a number to add
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, ok := Sleeps(dir); n != 42 || !ok {
		t.Errorf("Sleeps = %d, %v; want 42, true", n, ok)
	}
	if _, ok := Sleeps(filepath.Join(dir, "none")); ok {
		t.Error("a missing directory told a count")
	}
	if n, ok := Sleeps(fmt.Sprintf("/proc/%d/task", os.Getpid())); !ok || n < 0 {
		t.Errorf("this process: %d, %v", n, ok)
	}
	if _, ok := Recorded("x", "", 0).Sleeps(); ok {
		t.Error("a recorded trace told a count")
	}
}

// The packages install rdmabench in /usr/bin and rdmatrace in /usr/sbin:
// rdmabench must find it there, not only next to itself or on PATH (a
// user's PATH often has no sbin).
func TestBesidesLooksInTheSbinBesideBin(t *testing.T) {
	for _, c := range []struct {
		exe  string
		want []string
	}{
		{"/usr/bin/rdmabench", []string{"/usr/bin/rdmatrace", "/usr/sbin/rdmatrace"}},
		{"/usr/local/bin/rdmabench", []string{"/usr/local/bin/rdmatrace", "/usr/local/sbin/rdmatrace"}},
		{"/src/rdmatrace/bin/rdmabench", []string{"/src/rdmatrace/bin/rdmatrace", "/src/rdmatrace/sbin/rdmatrace"}},
		{"/opt/rdmabench", []string{"/opt/rdmatrace"}},
	} {
		if got := besides(c.exe); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("besides(%s) = %v, want %v", c.exe, got, c.want)
		}
	}
}
