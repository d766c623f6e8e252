package peer

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestSpanReadsAsAPersonSaysIt(t *testing.T) {
	for d, want := range map[time.Duration]string{
		350 * time.Microsecond: "350 µs", 2500 * time.Microsecond: "2.5 ms", 40 * time.Millisecond: "40 ms",
		1200 * time.Millisecond: "1.2 s", -1200 * time.Millisecond: "1.2 s", 12 * time.Second: "12 s",
		192 * time.Second: "3.2 min", 5 * time.Hour: "5.0 h", 50 * time.Hour: "2.1 days",
	} {
		if got := Span(d); got != want {
			t.Errorf("Span(%v) = %q, want %q", d, got, want)
		}
	}
}

// why's sentence names the peer, its owner and what became of it, against
// the failure's time; with nothing in the store, what was asked and what
// was missing.
func TestTheSentenceNamesThePeerAndItsFate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	killed := &rdma.QPIdentity{Node: "node-b", Dev: "rxe0", QPN: 22, Created: t0, Fate: rdma.FateSignal, Signal: 9, Ended: t0.Add(time.Second),
		Owner: rdma.Owner{PID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{PodUID: "b"}}}
	alive := &rdma.QPIdentity{Node: "node-b", Dev: "rxe0", QPN: 22, Created: t0, Time: t0.Add(time.Second), Owner: rdma.Owner{PID: 7, Comm: "rping"}}
	destroyed := *killed
	destroyed.Fate = rdma.FateDestroyed
	for _, tc := range []struct {
		name string
		a    Answer
		want string
	}{
		{"killed before the failure", Answer{Query: Query{QPN: 22, At: t0.Add(2200 * time.Millisecond)}, QP: killed},
			"its peer QP 22 on node-b (ib_write_bw[999], pod b) was freed 1.2 s earlier when its owner was killed by SIGKILL"},
		{"killed after the failure", Answer{Query: Query{QPN: 22, At: t0.Add(500 * time.Millisecond)}, QP: killed},
			"its peer QP 22 on node-b (ib_write_bw[999], pod b) was alive then; it was freed 500 ms later when its owner was killed by SIGKILL"},
		{"destroyed by its owner", Answer{Query: Query{QPN: 22, At: t0.Add(3 * time.Second)}, QP: &destroyed},
			"its peer QP 22 on node-b (ib_write_bw[999], pod b) was destroyed 2.0 s earlier by its owner"},
		{"alive", Answer{Query: Query{QPN: 22, At: t0.Add(3 * time.Second)}, QP: alive},
			"its peer QP 22 on node-b (rping[7]) was alive (as of its node's last record, 2.0 s before the failure)"},
		{"not in the store", Answer{Query: Query{QPN: 22}, GID: netip.MustParseAddr("::ffff:10.0.0.2"), Store: "VictoriaLogs at http://s:9428", Missing: "no node reported GID ::ffff:10.0.0.2"},
			"its peer QP 22 at ::ffff:10.0.0.2 is not in VictoriaLogs at http://s:9428: no node reported GID ::ffff:10.0.0.2"},
	} {
		if got := Sentence(tc.a); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	evil := *alive
	evil.Owner.Comm, evil.Node = "r\x1b[2J", "n\u202e"
	if got := Sentence(Answer{Query: Query{QPN: 22, At: t0}, QP: &evil}); strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("a name from the store reached the sentence raw: %q", got)
	}
}

func TestParseQPNAndAddr(t *testing.T) {
	for s, want := range map[string]uint32{"17": 17, "0x11": 17, "0xffffff": 0xffffff} {
		if got, err := ParseQPN(s); err != nil || got != want {
			t.Errorf("ParseQPN(%q) = %d, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "-1", "0x1000000", "seventeen"} {
		if _, err := ParseQPN(bad); err == nil || !strings.Contains(err.Error(), "expected a QP number") {
			t.Errorf("ParseQPN(%q): %v", bad, err)
		}
	}
	a, _ := ParseAddr("10.0.0.2")
	if g := (Query{Addr: a}).GID(); rdma.GIDText(g) != "::ffff:10.0.0.2" {
		t.Errorf("the GID of 10.0.0.2 is %s", rdma.GIDText(g))
	}
	for _, bad := range []string{"node-b", "fe80::1%eth0", ""} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) took it", bad)
		}
	}
}

func TestParseTimeTakesTheFormsPeopleHave(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	now := time.Date(2026, 12, 1, 5, 0, 10, 0, time.UTC)
	want := time.Date(2026, 12, 1, 5, 0, 4, 500_000_000, time.UTC)
	for _, s := range []string{"2026-12-01T05:00:04.5Z", "2026-12-01 05:00:04.5", "05:00:04.5", "@1796101204.5", "-5.5s"} {
		got, err := ParseTime(s, now)
		if err != nil || got.Sub(want).Abs() > time.Microsecond {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil || !strings.Contains(err.Error(), "expected a time") {
		t.Errorf("a word: %v", err)
	}
}
