package formats

import (
	"encoding/binary"
	"time"
	"unsafe"
)

// The two hot steps of a trace -j line, done without the standard
// library's generality: the run of a string's bytes that need no escape
// (8 bytes at a time), and a UTC time in RFC 3339 with nanoseconds. Both
// write exactly what the general path writes (jsonfast_test.go).

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// safeRun is where the run of bytes from i that a JSON string holds as
// they are (jsonSafe) ends.
func safeRun(s string, i int) int {
	if len(s)-i >= 8 {
		p := unsafe.Slice(unsafe.StringData(s), len(s))
		for ; len(s)-i >= 8; i += 8 {
			if wordUnsafe(binary.LittleEndian.Uint64(p[i:])) {
				break
			}
		}
	}
	for i < len(s) && jsonSafe[s[i]] {
		i++
	}
	return i
}

// wordUnsafe says whether any of x's 8 bytes may need an escape: a
// control byte (below 0x20), DEL, a byte of 0x80 or more, '"' or '\'.
// It may say so of a word that needs none (the borrow of a subtraction
// past a byte that does); the caller then looks byte by byte.
func wordUnsafe(x uint64) bool {
	ctl := (x - ones*0x20) & ^x & highs
	return (ctl | x&highs | zeroByte(x^ones*'"') | zeroByte(x^ones*'\\') | zeroByte(x^ones*0x7f)) != 0
}

// zeroByte is non-zero when one of x's bytes is 0.
func zeroByte(x uint64) uint64 { return (x - ones) & ^x & highs }

// appendRFC3339NanoUTC appends the time ns nanoseconds after the Unix
// epoch as time.Time.AppendFormat(b, time.RFC3339Nano) does in UTC:
// 2006-01-02T15:04:05.999999999Z, the fraction without its trailing
// zeros, none when it is 0. Times before 1970 go through package time
// (int64 nanoseconds end in 2262: four digits of year always do).
func appendRFC3339NanoUTC(b []byte, ns int64) []byte {
	if ns < 0 {
		return timeOf(uint64(ns)).AppendFormat(b, time.RFC3339Nano)
	}
	secs := ns / 1e9
	frac := ns % 1e9
	days, sod := secs/86400, secs%86400
	y, m, d := civilFromDays(days)
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	b = append2(append2(b, m, '-'), d, 'T')
	b = append2(append2(append2(b, int(sod/3600), ':'), int(sod/60%60), ':'), int(sod%60), '.')
	if frac == 0 {
		b[len(b)-1] = 'Z'
		return b
	}
	var f [9]byte
	for i := 8; i >= 0; i-- {
		f[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 9
	for f[n-1] == '0' {
		n--
	}
	return append(append(b, f[:n]...), 'Z')
}

// append2 appends v (0–99) in two digits, then sep.
func append2(b []byte, v int, sep byte) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10), sep)
}

// civilFromDays is the proleptic Gregorian date days after 1970-01-01
// (days ≥ 0): Howard Hinnant's days_from_civil, inverted.
func civilFromDays(days int64) (year, month, day int) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}
