package tracer

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// counterTracer is a tracer with the object's maps and no program: what
// the end summary reads its counts from.
func counterTracer(t *testing.T) *Tracer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating BPF maps needs root (CI runs as root)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	spec.Maps["events"].MaxEntries = 1 << 16
	tr := &Tracer{maps: map[string]*ebpf.Map{}}
	t.Cleanup(func() {
		for _, m := range tr.maps {
			m.Close()
		}
	})
	for name, ms := range spec.Maps {
		if strings.HasPrefix(name, ".") {
			continue
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			t.Fatalf("map %s: %v", name, err)
		}
		tr.maps[name] = m
	}
	return tr
}

// setCount puts n in a per-CPU counter map, on the first CPU.
func setCount(t *testing.T, tr *Tracer, name string, n uint64) {
	t.Helper()
	vals := make([]uint64, ebpf.MustPossibleCPU())
	vals[0] = n
	if err := tr.maps[name].Put(uint32(0), vals); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

var countsLine = regexp.MustCompile(`events: (\d+) seen, (\d+) shown(?:, (\d+) filtered out)?(?:, (\d+) held back)?, (\d+) dropped(?: \((\d+) of them unread at the stop\))?\n`)

// TestSummaryCountsAddUp: the end summary's counts add up, seen = shown +
// filtered out + held back + dropped, and events left unread at the stop
// are dropped ones, said so. The review's run ended "events: 256 seen,
// 256 shown, 0 dropped" beside "5787 events left unread", the held-back
// and refused port-busy events on lines of their own and in no count.
func TestSummaryCountsAddUp(t *testing.T) {
	tr := counterTracer(t)
	setCount(t, tr, "drops", 3)
	setCount(t, tr, "busy_suppressed", 188867)
	setCount(t, tr, "busy_drops", 40)
	tr.ring.unread = 5787
	var out bytes.Buffer
	s := &Session{t: tr, seen: 256, shown: 250, stderr: &out}
	s.report()
	said := out.String()
	m := countsLine.FindStringSubmatch(said)
	if m == nil {
		t.Fatalf("no line of counts in:\n%s", said)
	}
	n := make([]uint64, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.ParseUint(m[i], 10, 64)
	}
	seen, shown, filtered, held, dropped, unread := n[1], n[2], n[3], n[4], n[5], n[6]
	if shown != 250 || filtered != 6 || held != 188867 || unread != 5787 || dropped != 3+40+5787 {
		t.Errorf("counts %q: want 250 shown, 6 filtered out, 188867 held back, %d dropped of which 5787 unread", m[0], 3+40+5787)
	}
	if seen != shown+filtered+held+dropped {
		t.Errorf("%d seen, want shown + filtered out + held back + dropped = %d", seen, shown+filtered+held+dropped)
	}
	if strings.Contains(said, " 0 dropped") {
		t.Errorf("says 0 dropped beside events lost:\n%s", said)
	}
}

// TestSummaryLinesAgree: the port-busy and busiest-owner lines after the
// counts say the same figures as the counts, though the kernel's counters
// moved after they were read (a flood still running at the stop: 145 369
// held back in the counts, 145 580 on the port-busy line).
func TestSummaryLinesAgree(t *testing.T) {
	tr := counterTracer(t)
	setCount(t, tr, "busy_suppressed", 145369)
	setCount(t, tr, "shed", 4211)
	c := readCounts(tr, 2409, 2409, false)
	setCount(t, tr, "busy_suppressed", 145580)
	setCount(t, tr, "shed", 5000)
	var out bytes.Buffer
	summary(tr, c, false, &out)
	said := out.String()
	for _, want := range []string{"145369 held back, 4211 dropped", "port-busy events: 145369 held back", "WARNING: 4211 events of the busiest owner"} {
		if !strings.Contains(said, want) {
			t.Errorf("no %q in:\n%s", want, said)
		}
	}
}
