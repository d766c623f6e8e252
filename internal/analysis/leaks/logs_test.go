package leaks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// noteSink keeps what ReadLogs writes, one line each.
type noteSink struct{ out []string }

func (s *noteSink) Report(n ReportNote) {
	s.out = append(s.out, fmt.Sprintf("%s:%d %s matched=%d no-qp=%q repeats=%d", n.Report.Source, n.Report.Line, n.Report.Kind, n.Matched, n.NoQP, n.Repeats))
}
func (s *noteSink) Finding(f *rdma.Finding) { s.out = append(s.out, "  finding "+f.Report.String()) }
func (s *noteSink) Flush() error            { return nil }

func readLogs(t *testing.T, o LogOptions) (*noteSink, []string, LogResult) {
	t.Helper()
	var stderr []string
	o.Warn = func(line string) { stderr = append(stderr, line) }
	sink := &noteSink{}
	res, err := ReadLogs(o, sink)
	if err != nil {
		t.Fatal(err)
	}
	return sink, stderr, res
}

// The post-mortem as `leaks --log` runs it, without the command line: the
// reports of a real log, joined with the recording of the same boot (the
// leaking module's unregistration on 6.12); a file that cannot be read is
// counted as failed and the others still read.
func TestReadLogsJoinsTheReportsWithTheRecording(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "leaklog", "6.12")
	sink, stderr, res := readLogs(t, LogOptions{Logs: []string{filepath.Join(dir, "dmesg.txt"), "nonexistent"},
		Recording: filepath.Join(dir, "trace.ndjson")})
	if res.Reports != 7 || res.Failed != 1 || res.Bad != 0 || len(stderr) != 1 || !strings.Contains(stderr[0], "open nonexistent") {
		t.Errorf("result %+v, stderr %q", res, stderr)
	}
	findings := 0
	for _, l := range sink.out {
		if strings.HasPrefix(l, "  finding") {
			findings++
		}
	}
	if len(sink.out) < 8 || findings == 0 {
		t.Errorf("%d records, %d findings:\n%s", len(sink.out), findings, strings.Join(sink.out, "\n"))
	}
}

// With a recording, the logs' reports are held until it is read: a QP
// error syndrome logged again and again is held once, with its count.
func TestReadLogsHoldsARepeatedSyndromeOnce(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "dmesg-T.txt")
	line := "[Fri Nov 27 07:20:02 2026] mlx5_0/1: QP 137 error: local protection error (0x41 0x0 0x0)\n"
	if err := os.WriteFile(log, []byte(strings.Repeat(line, 50000)), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join("..", "..", "..", "testdata", "leaklog", "mlx5-syndrome", "trace.ndjson")
	sink, stderr, res := readLogs(t, LogOptions{Logs: []string{log}, Recording: rec})
	want := log + `:1 qp-error-syndrome matched=1 no-qp="" repeats=49999`
	if len(sink.out) != 1 || sink.out[0] != want || len(stderr) != 0 || res != (LogResult{}) {
		t.Errorf("records %q, stderr %q, result %+v", sink.out, stderr, res)
	}
}

// With a recording, the logs' reports are held until it is read, and at
// most MaxReports of them: the others are counted (and still make the
// exit status), said in one line with the first.
func TestReadLogsHoldsAtMostMaxReports(t *testing.T) {
	log := filepath.Join(t.TempDir(), "dmesg.txt")
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "[   10.%06d] restrack: User QP object allocated by app%d is not freed\n", i, i)
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join("..", "..", "..", "testdata", "leaklog", "mlx5-syndrome", "trace.ndjson")
	sink, stderr, res := readLogs(t, LogOptions{Logs: []string{log}, Recording: rec, Limits: PostMortemLimits{MaxReports: 10}})
	want := "20 reports past the first 10 of the logs are not shown: a recording is joined with that many at most (first: " + log +
		":11; --log without --recording shows them all)"
	if len(sink.out) != 10 || res.Reports != 30 || len(stderr) != 1 || stderr[0] != want {
		t.Errorf("%d records, result %+v, stderr %q", len(sink.out), res, stderr)
	}
}
