package kernlog

import (
	"bytes"
	"regexp"
	"testing"
)

// The regexps the matchers of match.go stand for: each matcher must give
// what its regexp gives, on any input.
var (
	dmesgRE = regexp.MustCompile(`^\[\s*(\d+\.\d+)\](?:\[\s*[TC]\d+\])?\s?`)
	dateRE  = regexp.MustCompile(`^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?`)
	journRE = regexp.MustCompile(`^((?:\d{4}-\d\d-\d\dT[\d:.,+-]+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|` +
		`[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+|\[\s*\d+\.\d+\]|\d+\.\d+)) \S+ kernel: `)
	frameRE    = regexp.MustCompile(`^\s*([A-Za-z0-9_.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[([A-Za-z0-9_]+)\])?\s*$`)
	bugLeakRE  = regexp.MustCompile(`^infiniband (\S+): BUG: RESTRACK detected leak of resources`)
	syndromeRE = regexp.MustCompile(`^([^\s/]+)/(\d+): QP (\d+) error: (.+) \(0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+)\)\s*$`)
)

// agree checks one matcher's result (its groups, and the length of its
// match where it gives one) against its regexp's.
func agree(t *testing.T, what string, in []byte, re *regexp.Regexp, ok bool, n int, groups ...[]byte) {
	t.Helper()
	m := re.FindSubmatch(in)
	if (m != nil) != ok {
		t.Fatalf("%s %q: matched %v, the regexp %v", what, in, ok, m != nil)
	}
	if m == nil {
		return
	}
	if n >= 0 && n != len(m[0]) {
		t.Fatalf("%s %q: %d bytes, the regexp %d", what, in, n, len(m[0]))
	}
	for i, g := range groups {
		if !bytes.Equal(g, m[i+1]) || (g == nil) != (m[i+1] == nil) {
			t.Fatalf("%s %q: group %d %q, the regexp %q", what, in, i+1, g, m[i+1])
		}
	}
}

func checkMatchers(t *testing.T, in []byte) {
	secs, _, n := matchDmesg(in)
	agree(t, "dmesg", in, dmesgRE, n > 0, n, secs)
	date, n := matchDate(in)
	agree(t, "date", in, dateRE, n > 0, n, date)
	j, n := matchJournal(in)
	agree(t, "journal", in, journRE, n > 0, n, j)
	fn, mod, ok := matchFrame(in)
	agree(t, "frame", in, frameRE, ok, -1, fn, mod)
	dev, ok := matchBugLeak(in)
	agree(t, "bug", in, bugLeakRE, ok, -1, dev)
	s, ok := matchSyndrome(in)
	agree(t, "syndrome", in, syndromeRE, ok, -1, s.dev, s.port, s.qpn, s.status, s.vendor, s.hwType, s.hw)
}

var matcherSeeds = []string{
	"[   40.644129] infiniband rxe0: x",
	"[   40.644129][ T1234] x",
	"[40.1][C3]\tx",
	"[ 1.0][T] x",
	"[Sun Nov 22 10:00:00 2026] rxe: loaded",
	"[Sun Nov  2 10:00:00 2026]x",
	"Nov 22 10:00:00 host kernel: rxe: loaded",
	"Nov  2 10:00:00.123456 host kernel: x",
	"2026-11-22T23:22:54.123456+00:00 guest kernel: x",
	"2026-11-22T23:22:54+0000 guest kernel: ",
	"Sun 2026-11-22 23:22:54 UTC guest kernel: x",
	"Sun 2026-11-22 23:22:54.5 CET guest kernel: x",
	"[   50.152630] guest kernel: x",
	"1763853774.123456 guest kernel: x",
	"1763853774.123456 guest\tkernel: x",
	" ib_uverbs_remove_one+0x3c/0x60 [ib_uverbs]",
	"  __ib_unregister_device+0x1/0x2  ",
	"x.y$z+0xa/0xb [m] ",
	"f+0x1/0x2 [m",
	"mlx5_0/1: QP 137 error: local protection error (0x41 0x0 0x0)",
	"mlx5_0/1: QP 137 error: a (0x1 0x2 0x3) (0x41 0x0 0x0)  ",
	"mlx5_0/1: QP 137 error:  (0x41 0x0 0x0)",
	"mlx5_0/1: QP 137 error: x(0x41 0x0 0x0)",
	"mlx5_0/1: QP 137 error: x (0x41 0x0 0x0x)",
	"a/b/1: QP 2 error: y (0x0 0x0 0x0)",
	"infiniband rxe0: BUG: RESTRACK detected leak of resources",
	"infiniband a:b: BUG: RESTRACK detected leak of resources x",
	"infiniband : BUG: RESTRACK detected leak of resources",
	"infiniband rxe0:  BUG: RESTRACK detected leak of resources",
}

func TestMatchersAgreeWithTheirRegexps(t *testing.T) {
	for _, s := range matcherSeeds {
		checkMatchers(t, []byte(s))
	}
}

func FuzzMatchersAgreeWithTheirRegexps(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkMatchers(t, in) })
}
