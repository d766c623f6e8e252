//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
)

// rdmabench against the tools it imitates, on rxe0 in the same boot:
// perftest for lat, cmtime for conn. Every figure here is soft-RoCE under
// qemu: emulation, useful for comparing two programs on the same emulated
// stack, never a hardware number.

var rdmabenchBin = flag.String("rdmabench", "bin/rdmabench", "the rdmabench binary under test")

// benchRuns is how many alternating runs of each program a comparison
// takes: the spread between runs under TCG is larger than between programs.
const benchRuns = 3

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// benchOut runs rdmabench and returns its stdout; a failure shows stderr.
func benchOut(t *testing.T, args ...string) []byte {
	t.Helper()
	out, stderr, err := runStatus(*rdmabenchBin, args...)
	if err != nil {
		t.Fatalf("rdmabench %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// records parses rdmabench's NDJSON and returns the records of one kind
// as its own record type T (report's): every line must be a record, and
// each of kind must decode as T with no key T lacks.
func records[T any](t *testing.T, out []byte, kind string) []T {
	t.Helper()
	var recs []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var head struct {
			Record *string `json:"record"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("not NDJSON: %q: %v", sc.Text(), err)
		}
		if head.Record == nil {
			t.Fatalf("record without a record key: %s", sc.Text())
		}
		if *head.Record != kind {
			continue
		}
		var r T
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a %s record that is not a %T: %v: %s", kind, r, err, sc.Text())
		}
		recs = append(recs, r)
	}
	return recs
}

// nothingLeft checks with rdmatrace res that no rdmabench object is left.
func nothingLeft(t *testing.T) {
	t.Helper()
	// The kernel frees a killed process's objects as its files close.
	time.Sleep(500 * time.Millisecond)
	for _, typ := range []string{"qp", "cm_id", "cq", "mr", "pd", "ctx"} {
		out, stderr, err := runStatus(*rdmatraceBin, "res", typ, "comm", "rdmabench", "-j")
		if err != nil && strings.Contains(string(stderr), "cannot dump "+typ) {
			t.Logf("kernel %s cannot dump %s resources: not checked", release(t), typ)
			continue
		}
		if err != nil {
			t.Errorf("rdmatrace res %s comm rdmabench: %v\n%s", typ, err, stderr)
			continue
		}
		if s := strings.TrimSpace(string(out)); s != "[]" {
			t.Errorf("rdmatrace res %s comm rdmabench: %s", typ, s)
		}
	}
}

// perftestTypical runs a perftest latency pair (-R: over rdma_cm, as
// rdmabench) and returns the client's t_typical.
func perftestTypical(t *testing.T, tool string, size, iters int) float64 {
	t.Helper()
	for attempt := 1; ; attempt++ {
		v, out, err := perftestOnce(t, tool, size, iters)
		if err == nil {
			return v
		}
		// A perftest client that comes right after the listen is sometimes
		// rejected (see startPair): once more on a new port.
		if attempt == 2 {
			t.Fatalf("%s: %v\n%s", tool, err, out)
		}
		t.Logf("%s, attempt %d: %v", tool, attempt, err)
	}
}

func perftestOnce(t *testing.T, tool string, size, iters int) (float64, string, error) {
	w := &workload{t: t}
	defer w.stop()
	ports += 10
	port := fmt.Sprint(ports)
	args := []string{"-d", device, "-R", "-F", "-p", port, "-s", fmt.Sprint(size), "-n", fmt.Sprint(iters)}
	w.start(tool, args...)
	waitListening(t, port)
	time.Sleep(time.Second)
	out, stderr, err := runStatus(tool, append(args, addr)...)
	if err != nil {
		return 0, string(out) + string(stderr), err
	}
	// The result row: #bytes #iterations t_min t_max t_typical ...
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == fmt.Sprint(size) && f[1] == fmt.Sprint(iters) {
			if v, err := strconv.ParseFloat(f[4], 64); err == nil {
				return v, "", nil
			}
		}
	}
	return 0, string(out), fmt.Errorf("no result row")
}

func rdmabenchTypical(t *testing.T, op string, size, iters int) float64 {
	t.Helper()
	ports += 10
	// Untraced: this compares the measurement with perftest's; what the
	// tracer adds is measured by the traced runs themselves.
	out := benchOut(t, "lat", "--no-trace", "--op", op, "-d", device, "-p", fmt.Sprint(ports), "-s", fmt.Sprint(size), "-n", fmt.Sprint(iters), "-j")
	sum := records[report.LatRecord](t, out, report.RecordLat)
	if len(sum) != 1 {
		t.Fatalf("%d summary records:\n%s", len(sum), out)
	}
	return sum[0].LatUS.Typical
}

// pairedRatio runs ours and theirs alternately (who goes first alternates
// too) until it has want pairs with finite values, at most 2·want rounds,
// and returns the median of the per-pair ratios: a pair runs within seconds,
// so load on the host (other guests, builds) hits both of its runs alike,
// while it can change a run's median tenfold between pairs.
func pairedRatio(t *testing.T, want int, ours, theirs func() float64) (ratio float64, o, th []float64) {
	var ratios []float64
	for i := 0; len(ratios) < want && i < 2*want; i++ {
		var a, b float64
		if i%2 == 0 {
			b, a = theirs(), ours()
		} else {
			a, b = ours(), theirs()
		}
		o, th = append(o, a), append(th, b)
		if math.IsInf(a, 0) || math.IsInf(b, 0) || b <= 0 { // perftest prints inf when its clock calibration fails
			continue
		}
		ratios = append(ratios, a/b)
	}
	if len(ratios) < want {
		t.Fatalf("only %d usable pairs: ours %v, theirs %v", len(ratios), o, th)
	}
	return median(ratios), o, th
}

// finite leaves out perftest's inf (a failed clock calibration) and zeros.
func finite(v []float64) []float64 {
	var out []float64
	for _, x := range v {
		if !math.IsInf(x, 0) && !math.IsNaN(x) && x > 0 {
			out = append(out, x)
		}
	}
	return out
}

// TestBenchLatMatchesPerftest compares rdmabench lat's median with
// perftest's t_typical: same device, size and iterations, same boot,
// alternating. A measurement judged within a band, so it runs under make
// bench: the landing path checks rdmabench's output by the other tests.
func TestBenchLatMatchesPerftest(t *testing.T) {
	needBenchRun(t)
	needDevice(t)
	const size, iters = 2, 1000
	for _, c := range []struct{ op, tool string }{{"write", "ib_write_lat"}, {"send", "ib_send_lat"}} {
		t.Run(c.op, func(t *testing.T) {
			var ours, theirs, paired []float64
			in := func(r float64) bool { return r >= 0.8 && r <= 1.25 }
			var ratio, medians float64
			// Another round of 5 pairs when the rounds so far are outside
			// the band on every measure, judged on all of them, three
			// rounds at most: sid under TCG once gave ib_send_lat runs of
			// 108 to 248 µs in one round, and 6.12's ib_write_lat 98 to
			// 405 µs in two (a fresh-clone CI failed at 0.728 and 0.748).
			for round := 1; round <= 3; round++ {
				p, o, th := pairedRatio(t, 5,
					func() float64 { return rdmabenchTypical(t, c.op, size, iters) },
					func() float64 { return perftestTypical(t, c.tool, size, iters) })
				ours, theirs, paired = append(ours, o...), append(theirs, th...), append(paired, p)
				// Each tool's best run: a busy host only adds to a run's
				// median (a CI run saw runs of one tool from 34 to 65 µs,
				// which made a paired ratio 0.77), so the fastest run of
				// each is the one least disturbed.
				// But one lucky run of one tool moves the best runs' ratio
				// (6.1 on a loaded host: ib_send_lat 13.7 µs once, 17-20
				// otherwise: 1.45), where the ratio of the runs' medians
				// holds; a measurement off by more than the band moves both.
				ratio = slices.Min(finite(ours)) / slices.Min(finite(theirs))
				medians = median(finite(ours)) / median(finite(theirs))
				t.Logf("%s, %d bytes, %d iterations, soft-RoCE under qemu (emulation, not hardware), round %d: t_typical µs, rdmabench %v, %s %v: best runs' ratio %.3f, runs' medians' ratio %.3f, median of paired ratios %v",
					c.op, size, iters, round, ours, c.tool, theirs, ratio, medians, paired)
				if in(ratio) || in(medians) {
					break
				}
			}
			if !in(ratio) && !in(medians) {
				// The band is held on 6.1 and 6.12, the kernels issue 11
				// asks it of. Elsewhere perftest's own runs may spread
				// wider than the band (sid, preemptible, under TCG: 104 to
				// 223 µs in one round), and then no ratio can be judged
				// against it: said, and the test skips that check only.
				spread := slices.Max(finite(theirs)) / slices.Min(finite(theirs))
				rel := release(t)
				if !strings.HasPrefix(rel, "6.1.") && !strings.HasPrefix(rel, "6.12.") && spread > 1.5 {
					nothingLeft(t)
					t.Skipf("kernel %s: %s's own runs spread x%.2f, wider than the 0.8-1.25 band: rdmabench/%s = %.3f (best runs), %.3f (medians) not judged",
						rel, c.tool, spread, c.tool, ratio, medians)
				}
				t.Errorf("rdmabench/%s = %.3f (best runs), %.3f (medians), both outside 0.8-1.25", c.tool, ratio, medians)
			}
			nothingLeft(t)
		})
	}
}

// cmtimeSteps runs a cmtime pair with one connection and returns each
// step's time in µs.
func cmtimeSteps(t *testing.T) map[string]float64 {
	t.Helper()
	w := &workload{t: t}
	defer w.stop()
	ports += 10
	port := fmt.Sprint(ports)
	w.start("cmtime", "-b", addr, "-p", port)
	waitListening(t, port)
	out, stderr, err := runStatus("cmtime", "-s", addr, "-p", port, "-c", "1")
	if err != nil {
		t.Fatalf("cmtime client: %v\n%s%s", err, out, stderr)
	}
	steps := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		name, vals, ok := strings.Cut(l, ":")
		f := strings.Fields(vals)
		if !ok || len(f) != 4 {
			continue
		}
		if ms, err := strconv.ParseFloat(f[0], 64); err == nil {
			steps[strings.TrimSpace(name)] = ms * 1000
		}
	}
	if _, ok := steps["connect"]; !ok {
		t.Fatalf("cmtime printed no connect step:\n%s", out)
	}
	return steps
}

// TestBenchConnAgainstCmtime compares the first connection of a fresh
// rdmabench conn with cmtime's single connection (cmtime -c 1: cmtime 44
// runs all its connections at once, so only one connection is the same
// measurement), step for step: connect, and the sum of the steps; and checks
// that the client's steps cover its total.
func TestBenchConnAgainstCmtime(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	var ourTotal, theirTotal float64
	var coverage []float64 // share of each run's total that its steps cover
	cm := func() float64 {
		s := cmtimeSteps(t)
		theirTotal = 0
		for _, v := range s {
			theirTotal += v
		}
		return s["connect"]
	}
	ours := func() float64 {
		ports += 10
		out := benchOut(t, "conn", "--no-trace", "-d", device, "-p", fmt.Sprint(ports), "-n", "1", "-j")
		conns := records[report.ConnRecord](t, out, "connection")
		if len(conns) != 1 {
			t.Fatalf("%d connection records, want 1", len(conns))
		}
		c := conns[0]
		ourTotal = c.TotalUS
		var sum, connect float64
		for _, st := range c.Client.Steps {
			sum += st.DurUS
			if st.Name == "connect" {
				connect = st.DurUS
			}
		}
		// Steps never overlap, so more than the total is a bug at once; less
		// is judged over all runs below, because a vCPU preempted between two
		// steps (qemu on a loaded host) opens a gap of milliseconds in one run.
		if sum > ourTotal*1.0001 {
			t.Errorf("the client's steps add up to %.0f µs, more than its %.0f µs total", sum, ourTotal)
		}
		coverage = append(coverage, sum/ourTotal)
		if c.Server == nil {
			t.Error("the connection has no server side")
		}
		return connect
	}
	var totals []float64
	rc, ourC, theirC := pairedRatio(t, 5, func() float64 {
		v := ours()
		totals = append(totals, ourTotal)
		return v
	}, func() float64 {
		v := cm()
		totals = append(totals, theirTotal)
		return v
	})
	t.Logf("soft-RoCE under qemu (emulation, not hardware): connect µs, rdmabench %v, cmtime %v: median of paired ratios %.2f; "+
		"totals (ours and cmtime's sum of steps, in run order) %v", ourC, theirC, rc, totals)
	// The same steps on the same stack. cmtime 44 is slower by its own
	// design: its client's main thread spins in sched_yield while another
	// thread takes the events, and its server hands each request to a
	// worker thread, wakeups that cost milliseconds on qemu's 2 CPUs (on
	// 6.12 the paired ratio was 0.58 over 5 pairs, every pair below 1;
	// on 6.1 with a loaded host 0.39). The band catches a connect that
	// leaves a step out (far below) or adds one (far above).
	if rc < 0.2 || rc > 2.5 {
		t.Errorf("connect ratio %.2f outside 0.2-2.5", rc)
	}
	// A step left out of the client's list shows in every run; a scheduling
	// gap in one (CI saw 48 of 55 ms covered once) does not move the median.
	t.Logf("share of each total covered by the client's steps: %.3f", coverage)
	if m := median(coverage); m < 0.95 {
		t.Errorf("the client's steps cover a median %.1f%% of the total, want at least 95%%", 100*m)
	}
	nothingLeft(t)
}

// TestBenchCtrlRegistrationGrowsWithSize checks the reg_mr sweep: time grows
// with size, on prefaulted and on untouched memory (a measurement: make
// bench).
func TestBenchCtrlRegistrationGrowsWithSize(t *testing.T) {
	needBenchRun(t)
	needDevice(t)
	out := benchOut(t, "ctrl", "-d", device, "-n", "3", "--sizes", "4K-256M", "-j")
	sum := records[report.CtrlSummary](t, out, "summary")
	if len(sum) != 1 {
		t.Fatalf("%d summaries", len(sum))
	}
	fits := sum[0].RegFit
	if len(fits) != 2 {
		t.Fatalf("reg-fit: %+v", fits)
	}
	for _, f := range fits {
		t.Logf("soft-RoCE under qemu (emulation): reg_mr, prefault %v: %.0f µs per GiB + %.0f µs, r² %.3f over %d registrations",
			f.Prefault, f.USPerGiB, f.InterceptUS, f.R2, f.N)
		if f.USPerGiB <= 0 {
			t.Errorf("registration does not grow with size: %+v", f)
		}
	}
	// And directly: the largest size's fastest registration slower than the
	// smallest size's (the minimum: host load adds milliseconds at random).
	fastest := map[string]float64{}
	for _, o := range sum[0].Ops {
		if o.Op == "reg-mr" && o.Prefault != nil {
			fastest[fmt.Sprintf("%d/%v", o.Size, *o.Prefault)] = o.Min
		}
	}
	for _, pf := range []string{"true", "false"} {
		small, large := fastest["4096/"+pf], fastest[fmt.Sprintf("%d/%s", 256<<20, pf)]
		if !(large > small) {
			t.Errorf("prefault %s: reg_mr of 256M took at least %.0f µs, of 4K at least %.0f µs", pf, large, small)
		}
	}
	if n := len(records[report.OpRecord](t, out, "op")); n != 11*3+2*2*3*9 {
		t.Errorf("%d op records", n)
	}
	nothingLeft(t)
}

// badRun runs rdmabench expecting a failure: non-zero status and exactly
// one line on stderr that contains want.
func badRun(t *testing.T, want string, cmd *exec.Cmd) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	if err == nil {
		t.Fatalf("%s succeeded:\n%s", strings.Join(cmd.Args, " "), o.String())
	}
	msg := strings.TrimRight(e.String(), "\n")
	if strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("%s: stderr %q, want one line containing %q", strings.Join(cmd.Args, " "), msg, want)
	}
	t.Logf("%s -> %v after %v: %s", strings.Join(cmd.Args[1:], " "), err, time.Since(start).Round(time.Millisecond), msg)
}

// bench runs rdmabench untraced: the bad-input cases test its own errors,
// one line each, where a kernel without module BTF would add the line
// that says tracing is unavailable.
func bench(args ...string) *exec.Cmd {
	return exec.Command(*rdmabenchBin, append([]string{args[0], "--no-trace"}, args[1:]...)...)
}

func TestBenchBadInput(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	port := func() string { ports += 10; return fmt.Sprint(ports) }
	cases := []struct {
		name, want string
		cmd        func() *exec.Cmd
	}{
		{"no device", "no RDMA device rxe9 (there is ", func() *exec.Cmd { return bench("lat", "-d", "rxe9") }},
		{"no such port", "device rxe0 has no port 2 (it has 1)", func() *exec.Cmd { return bench("lat", "-d", device, "-i", "2") }},
		{"no such GID", "device rxe0 port 1 has no GID at index 100", func() *exec.Cmd { return bench("ctrl", "-d", device, "-x", "100") }},
		{"size beyond the device", "beyond the largest message of rxe0 port 1", func() *exec.Cmd { return bench("lat", "-d", device, "-s", "4G") }},
		{"nobody listens", "no server listens on that port", func() *exec.Cmd {
			return bench("lat", "-d", device, "--client", addr, "-p", port(), "--timeout", "20s")
		}},
		{"unreachable server", "resolve address 10.99.0.77", func() *exec.Cmd {
			return bench("conn", "-d", device, "--client", "10.99.0.77", "-p", port(), "-n", "1", "--timeout", "20s")
		}},
		{"memlock too small", "memlock limit (65536 bytes) is too small: raise it with ulimit -l", func() *exec.Cmd {
			// Root may lock any amount (CAP_IPC_LOCK): drop it.
			return exec.Command("prlimit", "--memlock=65536:65536", "setpriv", "--bounding-set", "-ipc_lock", "--inh-caps", "-ipc_lock",
				*rdmabenchBin, "ctrl", "--no-trace", "-d", device, "-n", "1", "--sizes", "1M", "--prefault", "yes")
		}},
		{"missing libibverbs", "libibverbs.so.1", func() *exec.Cmd {
			// A private mount namespace where the library is an empty file.
			return exec.Command("unshare", "-m", "sh", "-c",
				`lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libibverbs.so.1) && mount --bind /dev/null "$lib" && exec "$0" lat`, *rdmabenchBin)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			badRun(t, c.want, c.cmd())
			nothingLeft(t)
		})
	}
	t.Run("server dies mid-run", func(t *testing.T) {
		w := &workload{t: t}
		defer w.stop()
		p := port()
		srv := w.start(*rdmabenchBin, "lat", "-d", device, "--server", "-p", p, "--timeout", "5s")
		waitListening(t, p)
		// Untraced, so that it connects at once. The server is killed once
		// both ends hold their RC QP in RTS: on a timer, sid's slower boot
		// once killed it before the client had connected (REJECTED).
		cli := bench("lat", "-d", device, "--client", addr, "-p", p, "-D", "60", "--timeout", "5s")
		go func() {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				var qps []map[string]any
				out, _ := exec.Command("rdma", "-j", "res", "show", "qp").Output()
				_ = json.Unmarshal(out, &qps)
				rts := 0
				for _, q := range qps {
					if q["type"] == "RC" && q["state"] == "RTS" {
						rts++
					}
				}
				if rts >= 2 {
					break
				}
			}
			time.Sleep(time.Second)
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		}()
		badRun(t, "the peer stopped answering", cli)
		nothingLeft(t)
	})
}

// TestBenchLatTablesAndFiles runs lat on two sizes as a perftest user
// would read it: untraced, one table (one header, a row per size) and
// --plot/--perfetto written from the samples; traced (where the tracer
// runs), the same headline table, then the traced pass's table with each
// size's traced/untraced, the outliers, and the files with their causes.
func TestBenchLatTablesAndFiles(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	check := func(t *testing.T, traced bool, args ...string) {
		dir := t.TempDir()
		svg, js := filepath.Join(dir, "lat.svg"), filepath.Join(dir, "lat.json")
		ports += 10
		out := string(benchOut(t, append([]string{"lat", "-d", device, "-p", fmt.Sprint(ports), "-s", "2,64", "-n", "500",
			"--plot", svg, "--perfetto", js}, args...)...))
		t.Logf("rdmabench lat %v:\n%s", args, out)
		tables := 1
		if traced {
			tables = 2
		}
		if n := strings.Count(out, "#bytes #iterations"); n != tables {
			t.Errorf("%d column lines, want %d", n, tables)
		}
		if n := strings.Count(out, "Latency Test (rdmabench)"); n != 1 {
			t.Errorf("%d headers, want one for both sizes", n)
		}
		rows := regexp.MustCompile(`(?m)^ (2|64) +500 +`).FindAllString(out, -1)
		if len(rows) != 2*tables {
			t.Errorf("%d result rows, want %d", len(rows), 2*tables)
		}
		ratios := regexp.MustCompile(`(?m)^ (2|64) +500 .*   x[0-9.]+$`).FindAllString(out, -1)
		if traced && len(ratios) != 2 {
			t.Errorf("%d traced rows with their traced/untraced, want 2", len(ratios))
		}
		if traced && !strings.Contains(out, " Outliers       :") {
			t.Error("a traced run lists no outliers section")
		}
		b, err := os.ReadFile(svg)
		if err != nil || !strings.Contains(string(b), "<svg") {
			t.Errorf("--plot: %d bytes (%v)", len(b), err)
		}
		if untraced := strings.Contains(string(b), "untraced"); untraced == traced {
			t.Errorf("the plot's title says untraced: %v, the run was traced: %v", untraced, traced)
		}
		b, err = os.ReadFile(js)
		var tl struct {
			TraceEvents []struct {
				Name string `json:"name"`
				Ph   string `json:"ph"`
			} `json:"traceEvents"`
		}
		if err == nil {
			err = json.Unmarshal(b, &tl)
		}
		points := 0
		for _, e := range tl.TraceEvents {
			if e.Name == "latency" && e.Ph == "C" {
				points++
			}
		}
		if err != nil || points != 1000 {
			t.Errorf("--perfetto: %d latency points (%v), want the 1000 samples of the drawn pass", points, err)
		}
	}
	t.Run("untraced", func(t *testing.T) { check(t, false, "--no-trace") })
	t.Run("traced", func(t *testing.T) {
		needModuleBTF(t)
		check(t, true, "--trace", "--rdmatrace", *rdmatraceBin)
	})
	nothingLeft(t)
}
