package formats

import (
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

// appendJSONStringByByte is AppendJSONString as it was written first, a
// byte at a time: the word-at-a-time scan must write what it wrote.
func appendJSONStringByByte(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			b = append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		case Unsafe(r):
			return append(b, "UNSAFE"...) // compared on what the scan decides, not on escapes
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// TestJSONStringScanFindsEveryByteToEscape: each byte value, at each
// place of a word and past the words, is escaped as the byte loop did.
func TestJSONStringScanFindsEveryByteToEscape(t *testing.T) {
	for c := 0; c < 256; c++ {
		for n := 1; n <= 19; n++ {
			for at := 0; at < n; at++ {
				p := []byte("abcdefghijklmnopqrs"[:n])
				p[at] = byte(c)
				s := string(p)
				got, want := string(AppendJSONString(nil, s)), string(appendJSONStringByByte(nil, s))
				if got != want && want[len(want)-7:] != `UNSAFE` {
					t.Fatalf("byte %#x at %d of %d: %s, want %s", c, at, n, got, want)
				}
			}
		}
	}
}

func FuzzJSONStringScanIsTheByteLoop(f *testing.F) {
	for _, s := range []string{"", "rxe0", "fe80::5054:ff:fe12:3456", "a\"b\\c\x7f\x80\u202e", "RoCE v2 \xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := string(appendJSONStringByByte(nil, s))
		if len(want) >= 6 && want[len(want)-6:] == "UNSAFE" {
			return
		}
		if got := string(AppendJSONString(nil, s)); got != want {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	})
}

// TestRFC3339NanoIsPackageTimes: the time of a JSON line is what
// time.Time.AppendFormat(RFC3339Nano) writes in UTC, at the edges of
// days, months, leap years and the fast path's range, and at random.
func TestRFC3339NanoIsPackageTimes(t *testing.T) {
	ns := []int64{0, 1, 999_999_999, 1e9, 1_000_000_002_500, -1, -1e9 - 1,
		951_782_400e9, 951_868_799e9 + 999_999_999, // 2000-02-29
		4_107_456_000e9, // 2100-03-01
		1 << 62, 1<<63 - 1, -1 << 63,
		time.Date(2026, 12, 31, 23, 59, 59, 100, time.UTC).UnixNano()}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		v := r.Int64N(1<<63 - 1)
		if r.IntN(2) == 0 {
			v -= v % 1e9 // whole seconds
		}
		if r.IntN(4) == 0 {
			v -= v % 1e6
		}
		ns = append(ns, v)
	}
	for _, v := range ns {
		want := time.Unix(0, v).UTC().AppendFormat(nil, time.RFC3339Nano)
		if got := appendRFC3339NanoUTC(nil, v); string(got) != string(want) {
			t.Fatalf("%d: %s, want %s", v, got, want)
		}
	}
}
