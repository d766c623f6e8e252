package why

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineSink keeps what ReadRecording writes.
type lineSink struct{ lines []Line }

func (s *lineSink) Write(l Line) error { s.lines = append(s.lines, l); return nil }
func (s *lineSink) Flush() error       { return nil }

const recordingQP137 = `{"time":"2026-11-27T07:20:01Z","event":"create","res":"qp","ifname":"mlx5_0","port":1,"lqpn":137,"type":"RC","pid":4100,"comm":"ib_write_bw"}
`

// readRecording runs ReadRecording over a recording and logs written to
// files, and gives its lines, what it said on stderr and its error.
func readRecording(t *testing.T, recording string, logs ...string) ([]Line, []string, error) {
	t.Helper()
	dir := t.TempDir()
	o := RecordingOptions{Recording: filepath.Join(dir, "rec.ndjson")}
	if err := os.WriteFile(o.Recording, []byte(recording), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		p := filepath.Join(dir, fmt.Sprintf("log%d", i))
		if err := os.WriteFile(p, []byte(l), 0o600); err != nil {
			t.Fatal(err)
		}
		o.Logs = append(o.Logs, p)
	}
	var stderr []string
	o.Warn = func(line string) { stderr = append(stderr, strings.ReplaceAll(line, dir+"/", "")) }
	sink := &lineSink{}
	err := ReadRecording(New(Options{}), o, sink)
	return sink.lines, stderr, err
}

// A log of a million syndromes for QPs the recording does not have (the
// same line again and again, and then tens of thousands of QP numbers)
// costs a few lines on stderr, not one a syndrome, and the run fails: none
// of what was asked could be answered.
func TestAFloodOfSyndromesTheRecordingCannotJoinIsSaidInAFewLines(t *testing.T) {
	var log bytes.Buffer
	same := "[Fri Nov 27 07:20:05 2026] mlx5_0/1: QP 99 error: local protection error (0x41 0x0 0x0)\n"
	log.WriteString(strings.Repeat(same, 10000))
	for qpn := range MaxSyndromes + 1000 {
		fmt.Fprintf(&log, "[Fri Nov 27 07:20:05 2026] mlx5_0/1: QP %d error: local protection error (0x41 0x0 0x0)\n", 1000+qpn)
	}
	lines, stderr, err := readRecording(t, recordingQP137, log.String())
	want := []string{
		"75535 syndromes for QPs the recording does not have (first: log0:1: mlx5_0/1 QP 99)",
		"1001 syndromes past the first 65536 of the logs were not kept: their QPs are not named (first: log0:75536)",
	}
	if len(lines) != 0 || strings.Join(stderr, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines %v, stderr\n%s\nwant\n%s", lines, strings.Join(stderr, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, ErrNothingJoined) {
		t.Errorf("error %v, want ErrNothingJoined", err)
	}
}

// A syndrome the recording joins makes the run a success, whatever the
// others; the same line again is listed once, with its count.
func TestOneJoinedSyndromeIsASuccessAndRepeatsAreCounted(t *testing.T) {
	log := strings.Repeat("[Fri Nov 27 07:20:05 2026] mlx5_0/1: QP 137 error: local protection error (0x41 0x0 0x0)\n", 3) +
		"[Fri Nov 27 07:20:06 2026] mlx5_0/1: QP 5 error: local protection error (0x41 0x0 0x0)\n"
	lines, stderr, err := readRecording(t, recordingQP137, log)
	if err != nil || len(lines) != 1 || !strings.HasSuffix(lines[0].Why, "(the logs have this line 2 times more)") ||
		lines[0].Res.Owner.PID != 4100 {
		t.Fatalf("lines %+v, err %v", lines, err)
	}
	if want := "1 syndrome for a QP the recording does not have: log0:4: mlx5_0/1 QP 5"; strings.Join(stderr, "\n") != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// A log that is no kernel log, or holds no syndrome, joins nothing and is
// not a failure of the join; the first is said, and is a bad input.
func TestALogWithoutSyndromesIsNoFailureButOneThatIsNoLogIs(t *testing.T) {
	_, stderr, err := readRecording(t, recordingQP137, "[    1.000000] infiniband rxe0: x\n")
	if err != nil || len(stderr) != 0 {
		t.Errorf("a log without syndromes: %v, %q", err, stderr)
	}
	_, stderr, err = readRecording(t, recordingQP137, "hello\n")
	if err == nil || errors.Is(err, ErrNothingJoined) || len(stderr) != 1 || !strings.Contains(stderr[0], "not a kernel log") {
		t.Errorf("not a log: %v, %q", err, stderr)
	}
}
