package kernlog

import "bytes"

// The matchers of the lines every log is made of: the time prefixes of
// each form, and the lines of reports that come in floods (call-trace
// frames, mlx5's syndromes). They are written out by hand, not as
// regexps: a regexp costs a microsecond a line, and a gigabyte of log is
// tens of millions of lines. Each does what the regexp in its comment
// does (FuzzMatchersAgreeWithTheirRegexps checks it).

// isSpace is a regexp's \s: ASCII space, tab, newline, form feed, CR.
func isSpace(c byte) bool { return spaceTable[c] }

var spaceTable = [256]bool{' ': true, '\t': true, '\n': true, '\f': true, '\r': true}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' }

// run is the end of the run of bytes from i that are in.
func run(b []byte, i int, in func(byte) bool) int {
	for i < len(b) && in(b[i]) {
		i++
	}
	return i
}

// digits, spaces and nonSpaces are run's of the hot paths, written out:
// a func value is not inlined.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func spaces(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func nonSpaces(b []byte, i int) int {
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	return i
}

// at reports whether b[i:] starts with the pattern p, where in p 'd' is a
// digit, 'D' a digit or a space, 'A' an upper-case letter, 'a' a
// lower-case one, and any other byte itself.
func at(b []byte, i int, p string) bool {
	if len(b)-i < len(p) {
		return false
	}
	for k := 0; k < len(p); k++ {
		c := b[i+k]
		switch p[k] {
		case 'd':
			if !isDigit(c) {
				return false
			}
		case 'D':
			if !isDigit(c) && c != ' ' {
				return false
			}
		case 'A':
			if !isUpper(c) {
				return false
			}
		case 'a':
			if !isLower(c) {
				return false
			}
		default:
			if c != p[k] {
				return false
			}
		}
	}
	return true
}

// decimal matches `\d+\.\d+` at i and returns its end, or -1.
func decimal(b []byte, i int) int {
	j := digits(b, i)
	if j == i || j >= len(b) || b[j] != '.' {
		return -1
	}
	k := digits(b, j+1)
	if k == j+1 {
		return -1
	}
	return k
}

// matchDmesg matches dmesg's prefix, "[   40.644129] ", "[   40.644129][
// T1234] ": `^\[\s*(\d+\.\d+)\](?:\[\s*[TC]\d+\])?\s?`. It gives the
// seconds, the end of their brackets (journalctl's short-monotonic time
// is the same) and the prefix's length, or n == 0.
func matchDmesg(b []byte) (secs []byte, closed, n int) {
	if len(b) == 0 || b[0] != '[' {
		return nil, 0, 0
	}
	closed = monotonic(b)
	if closed < 0 {
		return nil, 0, 0
	}
	secs, n = b[spaces(b, 1):closed-1], closed
	if n < len(b) && b[n] == '[' { // the caller's id (CONFIG_PRINTK_CALLER)
		p := spaces(b, n+1)
		if p < len(b) && (b[p] == 'T' || b[p] == 'C') {
			if q := digits(b, p+1); q > p+1 && q < len(b) && b[q] == ']' {
				n = q + 1
			}
		}
	}
	if n < len(b) && isSpace(b[n]) {
		n++
	}
	return secs, closed, n
}

// matchDate matches dmesg -T's prefix, "[Sun Nov 22 10:00:00 2026] ":
// `^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?`.
func matchDate(b []byte) (date []byte, n int) {
	if !at(b, 0, "[Aaa Aaa Dd dd:dd:dd dddd]") {
		return nil, 0
	}
	n = 26
	if n < len(b) && isSpace(b[n]) {
		n++
	}
	return b[1:25], n
}

// matchJournal matches journalctl's prefix, "Nov 22 10:00:00 host kernel:
// " (-o short), with microseconds (short-precise), an ISO time
// (short-iso, short-iso-precise), a weekday, date and zone (short-full),
// the time since boot (short-monotonic) or since the epoch (short-unix):
//
//	^((?:\d{4}-\d\d-\d\dT[\d:.,+-]+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|
//	[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+|\[\s*\d+\.\d+\]|\d+\.\d+)) \S+ kernel:
func matchJournal(b []byte) (stamp []byte, n int) {
	if len(b) == 0 {
		return nil, 0
	}
	var ends [2]int // the forms that may start with b[0], in the regexp's order
	switch c := b[0]; {
	case isDigit(c):
		ends = [2]int{isoTime(b), decimal(b, 0)}
	case isUpper(c):
		ends = [2]int{shortTime(b), fullTime(b)}
	case c == '[':
		ends = [2]int{monotonic(b), -1}
	default:
		return nil, 0
	}
	for _, e := range ends {
		if e <= 0 {
			continue
		}
		if k := hostKernel(b, e); k > 0 {
			return b[:e], k
		}
	}
	return nil, 0
}

// isoTime: `\d{4}-\d\d-\d\dT[\d:.,+-]+`.
func isoTime(b []byte) int {
	if !at(b, 0, "dddd-dd-ddT") {
		return -1
	}
	e := run(b, 11, func(c byte) bool { return isDigit(c) || c == ':' || c == '.' || c == ',' || c == '+' || c == '-' })
	if e == 11 {
		return -1
	}
	return e
}

// fraction is the end of an optional `(?:\.\d+)?` at i.
func fraction(b []byte, i int) int {
	if i < len(b) && b[i] == '.' {
		if e := digits(b, i+1); e > i+1 {
			return e
		}
	}
	return i
}

// shortTime: `[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?`.
func shortTime(b []byte) int {
	if !at(b, 0, "Aaa Dd dd:dd:dd") {
		return -1
	}
	return fraction(b, 15)
}

// fullTime: `[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+`.
func fullTime(b []byte) int {
	if !at(b, 0, "Aaa dddd-dd-dd dd:dd:dd") {
		return -1
	}
	e := fraction(b, 23)
	if e >= len(b) || b[e] != ' ' {
		return -1
	}
	z := nonSpaces(b, e+1)
	if z == e+1 {
		return -1
	}
	return z
}

// monotonic: `\[\s*\d+\.\d+\]` (b[0] is '[').
func monotonic(b []byte) int {
	e := decimal(b, spaces(b, 1))
	if e < 0 || e >= len(b) || b[e] != ']' {
		return -1
	}
	return e + 1
}

var kernelWord = []byte(" kernel: ")

// hostKernel matches ` \S+ kernel: ` at i and returns its end, or 0.
func hostKernel(b []byte, i int) int {
	if i >= len(b) || b[i] != ' ' {
		return 0
	}
	h := nonSpaces(b, i+1)
	if h == i+1 || !bytes.HasPrefix(b[h:], kernelWord) {
		return 0
	}
	return h + len(kernelWord)
}

// matchFrame matches a call trace's frame, " ib_uverbs_remove_one+0x3c/0x60
// [ib_uverbs]":
// `^\s*([A-Za-z0-9_.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[([A-Za-z0-9_]+)\])?\s*$`.
func matchFrame(b []byte) (fn, mod []byte, ok bool) {
	s := spaces(b, 0)
	e := run(b, s, func(c byte) bool { return isFuncByte(c) || c == '$' })
	if e == s || !bytes.HasPrefix(b[e:], []byte("+0x")) {
		return nil, nil, false
	}
	h := run(b, e+3, isHex)
	if h == e+3 || !bytes.HasPrefix(b[h:], []byte("/0x")) {
		return nil, nil, false
	}
	t := run(b, h+3, isHex)
	if t == h+3 {
		return nil, nil, false
	}
	if t+2 < len(b) && b[t] == ' ' && b[t+1] == '[' {
		m := run(b, t+2, isModuleByte)
		if m > t+2 && m < len(b) && b[m] == ']' && spaces(b, m+1) == len(b) {
			return b[s:e], b[t+2 : m], true
		}
	}
	if spaces(b, t) != len(b) {
		return nil, nil, false
	}
	return b[s:e], nil, true
}

// isModuleByte: [A-Za-z0-9_].
func isModuleByte(c byte) bool { return isUpper(c) || isLower(c) || isDigit(c) || c == '_' }

// isFuncByte: [A-Za-z0-9_.].
func isFuncByte(c byte) bool { return isModuleByte(c) || c == '.' }

// syndromeLine is the parts of an mlx5 QP error syndrome line.
type syndromeLine struct {
	dev, port, qpn, status []byte
	vendor, hwType, hw     []byte
}

var (
	qpWord    = []byte(": QP ")
	errorWord = []byte(" error: ")
)

// matchSyndrome matches mlx5_ib_qp_err_syndrome()'s line, "mlx5_0/1: QP
// 137 error: local protection error (0x41 0x0 0x0)":
// `^([^\s/]+)/(\d+): QP (\d+) error: (.+) \(0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+)\)\s*$`.
func matchSyndrome(b []byte) (m syndromeLine, ok bool) {
	d := run(b, 0, func(c byte) bool { return !isSpace(c) && c != '/' })
	if d == 0 || d >= len(b) || b[d] != '/' {
		return m, false
	}
	p := digits(b, d+1)
	if p == d+1 || !bytes.HasPrefix(b[p:], qpWord) {
		return m, false
	}
	q := digits(b, p+len(qpWord))
	if q == p+len(qpWord) || !bytes.HasPrefix(b[q:], errorWord) {
		return m, false
	}
	m.dev, m.port, m.qpn = b[:d], b[d+1:p], b[p+len(qpWord):q]
	// The three numbers are the line's end: read them from the right, so
	// that the status before them may hold anything (the regexp's greedy
	// (.+)).
	e := len(b)
	for e > 0 && isSpace(b[e-1]) {
		e--
	}
	if e == 0 || b[e-1] != ')' {
		return m, false
	}
	e--
	var nums [3][]byte
	for i := 2; i >= 0; i-- {
		s := e
		for s > 0 && isHex(b[s-1]) {
			s--
		}
		sep := byte(' ')
		if i == 0 {
			sep = '('
		}
		if s == e || s < 3 || b[s-1] != 'x' || b[s-2] != '0' || b[s-3] != sep {
			return m, false
		}
		nums[i] = b[s:e]
		e = s - 3
	}
	// " (" before the numbers, after a status of a byte or more.
	st := q + len(errorWord)
	if e < st+2 || b[e-1] != ' ' {
		return m, false
	}
	m.status = b[st : e-1]
	if bytes.IndexByte(m.status, '\n') >= 0 {
		return m, false
	}
	m.vendor, m.hwType, m.hw = nums[0], nums[1], nums[2]
	return m, true
}

var (
	infinibandWord = []byte("infiniband ")
	bugRestrack    = []byte(" BUG: RESTRACK detected leak of resources")
)

// matchBugLeak matches the line before a named report's objects,
// "infiniband rxe0: BUG: RESTRACK detected leak of resources", and gives
// the device: `^infiniband (\S+): BUG: RESTRACK detected leak of resources`.
func matchBugLeak(b []byte) (dev []byte, ok bool) {
	if !bytes.HasPrefix(b, infinibandWord) {
		return nil, false
	}
	s := len(infinibandWord)
	e := nonSpaces(b, s)
	if e-s < 2 || b[e-1] != ':' || !bytes.HasPrefix(b[e:], bugRestrack) {
		return nil, false
	}
	return b[s : e-1], true
}
