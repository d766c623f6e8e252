package report

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

func latReport() *LatReport {
	var samples []bench.Sample
	for i := 0; i < 1002; i++ {
		samples = append(samples, bench.Sample{Start: int64(i) * 50000, Lat: int64(20000 + (i%97)*300)})
	}
	return &LatReport{Op: "write", Dev: "rxe0", Addr: "10.99.0.1:18515", OneProcess: true, Size: 2, Iters: 1002,
		Client: BenchThread{PID: 300, TID: 302, CPU: 1}, Server: BenchThread{PID: 300, TID: 301, CPU: 0}, Inline: true,
		ClockNs: 24.56, EmptyPollNs: 41.04, Emulated: "soft-RoCE (rxe) under qemu TCG: emulation, not hardware latency",
		Tracing: "off", Summary: bench.Summarize(samples)}
}

func TestLatTableGolden(t *testing.T) {
	golden.Check(t, "../../../testdata/formats/bench-lat.txt", []byte(tableOf(t, latReport())))
}

func TestLatTableWithTheServerElsewhereGolden(t *testing.T) {
	r := latReport()
	r.Op, r.OneProcess, r.Server, r.Emulated, r.Inline = "read", false, BenchThread{}, "", false
	r.Dev = "mlx5_0\x1b[31m"
	out := tableOf(t, r)
	golden.Check(t, "../../../testdata/formats/bench-lat-client.txt", []byte(out))
	if strings.ContainsAny(out, "\x1b\t") {
		t.Error("a control character reached the table")
	}
}

// -a is one table, as perftest prints it: one header, one column line, a
// row per size.
func TestLatAllSizesIsOneTableGolden(t *testing.T) {
	var b bytes.Buffer
	var sizes []int
	for s := 2; s <= 8<<20; s *= 2 {
		sizes = append(sizes, s)
	}
	tab := LatTable{W: &b, Sizes: sizes}
	for _, s := range sizes {
		r := latReport()
		r.Size, r.Inline, r.MaxInline = s, s <= 220, 220
		r.Summary.Typical += float64(s) / 1e4
		if err := tab.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.End(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-lat-all.txt", b.Bytes())
	out := b.String()
	if n := strings.Count(out, "#bytes"); n != 1 {
		t.Errorf("%d column lines, want 1", n)
	}
	if n := strings.Count(out, "Device "); n != 1 {
		t.Errorf("%d headers, want 1", n)
	}
	if !strings.Contains(out, "Message sizes   : 2 to 8388608 bytes, 23 sizes, inline up to 220 bytes") {
		t.Errorf("the header does not say the sizes:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 12+1+23+1 {
		t.Errorf("%d lines, want a 12-line header, the column line, 23 rows and the closing line", n)
	}
}

func TestLatJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLatJSON(&b, latReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-lat.ndjson", b.Bytes())
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["record"] != "summary" {
		t.Errorf("not a summary record: %v %v", m, err)
	}
	lat := m["lat-us"].(map[string]any)
	for _, k := range []string{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9", "max"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("lat-us has no %s", k)
		}
	}
}

func connReport() *ConnReport {
	var conns []bench.Conn
	for i := 0; i < 3; i++ {
		base := int64(1_000_000_000 + i*100_000_000)
		var steps []bench.Step
		at := base
		for j, n := range []string{"create-id", "resolve-addr", "resolve-route", "create-qp", "connect", "disconnect", "destroy"} {
			d := int64((j + 1) * 1000_000 * (i + 1))
			steps = append(steps, bench.Step{Name: n, Start: at, Dur: d})
			at += d + 1000
		}
		src := netip.MustParseAddrPort("10.99.0.1:40000")
		dst := netip.MustParseAddrPort("10.99.0.1:18516")
		src = netip.AddrPortFrom(src.Addr(), src.Port()+uint16(i))
		srv := bench.Side{PID: 50, TID: 52, Src: dst, Dst: src, Steps: []bench.Step{
			{Name: "create-qp", Start: base + 5_000_000, Dur: 200_000}, {Name: "accept", Start: base + 5_300_000, Dur: 3_000_000},
			{Name: "disconnect", Start: base + 20_000_000, Dur: 50_000}, {Name: "destroy", Start: base + 20_060_000, Dur: 400_000}}}
		conns = append(conns, bench.Conn{Index: i + 1, Client: bench.Side{PID: 50, TID: 51 + 2*i, Src: src, Dst: dst, Steps: steps},
			Server: srv, Start: base, End: at - 1000})
	}
	return &ConnReport{Addr: "10.99.0.1:18516", Concurrency: 1, OneProcess: true, Tracing: "off", Emulated: "soft-RoCE", Conns: conns}
}

func TestConnTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteConnTable(&b, connReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-conn.txt", b.Bytes())
}

func TestConnJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteConnJSON(&b, connReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-conn.ndjson", b.Bytes())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d records, want 3 connections and a summary", len(lines))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["record"] == nil {
			t.Errorf("record without a record key: %s (%v)", l, err)
		}
	}
}

func TestConnSharesOfTheClientStepsAddUpToTheirCover(t *testing.T) {
	var b bytes.Buffer
	r := connReport()
	if err := WriteConnJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var sm ConnSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sm); err != nil {
		t.Fatal(err)
	}
	var share float64
	for _, s := range sm.Steps {
		if s.Side == "client" {
			share += s.Share
		}
	}
	// The fixture leaves 1 µs between steps: 6 gaps of 1 µs in 28+ ms.
	if share < 0.999 || share > 1.0001 {
		t.Errorf("client shares add up to %v", share)
	}
}

func ctrlReport() *CtrlReport {
	var ops []bench.Op
	at := int64(5_000_000_000)
	for i, n := range []string{"open-device", "alloc-pd", "create-cq", "create-qp", "modify-qp-init", "modify-qp-rtr", "modify-qp-rts", "destroy-qp", "destroy-cq", "dealloc-pd", "close-device"} {
		ops = append(ops, bench.Op{Name: n, TID: 7, Start: at, Dur: int64(10_000 * (i + 1))})
		at += 1_000_000
	}
	for _, size := range []int64{4096, 1 << 20, 64 << 20} {
		for _, pf := range []bool{true, false} {
			d := 3000 + size/1000
			if !pf {
				d *= 3
			}
			ops = append(ops, bench.Op{Name: "reg-mr", Size: size, Prefault: pf, TID: 7, Start: at, Dur: d},
				bench.Op{Name: "dereg-mr", Size: size, Prefault: pf, TID: 7, Start: at + d, Dur: d / 2})
			at += 10_000_000
		}
	}
	return &CtrlReport{Dev: "rxe0", Tracing: "off", Emulated: "soft-RoCE", Ops: ops}
}

func TestCtrlTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCtrlTable(&b, ctrlReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-ctrl.txt", b.Bytes())
}

func TestCtrlJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCtrlJSON(&b, ctrlReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-ctrl.ndjson", b.Bytes())
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{4096: "4K", 1 << 20: "1M", 1 << 30: "1G", 3 << 30: "3G", 1000: "1000", 1536: "1536"} {
		if got := SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %s, want %s", n, got, want)
		}
	}
}

// A traced run's headline is its untraced pass; the traced pass follows
// in a table of its own with what the tracer cost.
func TestLatTracerCostIsShown(t *testing.T) {
	head := latReport()
	r := latReport()
	r.Tracing = "rdmatrace trace, beside the benchmark, on CPU 0, nice 19"
	r.Summary.Typical = head.Summary.Typical * 1.25
	r.Untraced = &head.Summary
	r.Causes = map[string]int{"off-cpu": 3, "reg-mr": 1}
	r.Tracer = &TracerActivity{Wakeups: 12, Seconds: 1.5}
	var txt, js bytes.Buffer
	tab := LatTable{W: &txt, Sizes: []int{2}, Trace: "rdmatrace"}
	for _, step := range []func() error{func() error { return tab.Row(head) }, tab.End, func() error { return tab.TracedRow(r) }, tab.TracedEnd} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteLatJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-lat-traced.txt", txt.Bytes())
	golden.Check(t, "../../../testdata/formats/bench-lat-traced.ndjson", js.Bytes())
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || m["tracer-ratio"] != 1.25 {
		t.Errorf("tracer-ratio %v (%v), want 1.25", m["tracer-ratio"], err)
	}
	if !strings.Contains(txt.String(), "   x1.25\n") {
		t.Errorf("no tracer cost:\n%s", txt.String())
	}
	if !strings.Contains(txt.String(), " Tracer wakeups  : 12 in 1.50 s (8.0 a second) at 2 bytes\n") || m["tracer-wakeups"] != 12.0 {
		t.Errorf("no tracer wakeups: %v\n%s", m["tracer-wakeups"], txt.String())
	}
	if m["record"] != RecordLatTraced {
		t.Errorf("a traced series is a %v record, want %s", m["record"], RecordLatTraced)
	}
}

func TestALongSeriesSaysItsPercentilesComeFromAHistogram(t *testing.T) {
	r := latReport()
	if !strings.Contains(tableOf(t, r), "one C call runs a series") {
		t.Error("a short series should say one C call ran it")
	}
	r.Summary.FromHistogram, r.Summary.N = true, 5_000_000
	out := tableOf(t, r)
	for _, want := range []string{"one C call per 65536 samples", "Percentiles     : t_typical and the percentiles from a histogram"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	var b bytes.Buffer
	if err := WriteLatJSON(&b, r); err != nil || !strings.Contains(b.String(), `"from-histogram":true`) {
		t.Errorf("JSON %s (%v): want from-histogram", b.String(), err)
	}
}

func tableOf(t *testing.T, r *LatReport) string {
	t.Helper()
	var b bytes.Buffer
	tab := LatTable{W: &b}
	if err := tab.Row(r); err != nil {
		t.Fatal(err)
	}
	if err := tab.End(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
