// Package formats renders rdma values for people and programs: tables,
// iproute2-style text lines, JSON and NDJSON, and the legacy rdma_cm layout.
package formats

import (
	"strings"
	"unicode/utf8"
)

// Sanitize makes a string from the kernel or a process safe for a terminal:
// control characters (C0, DEL, C1) and invalid UTF-8 become visible escapes
// such as \x1b, and a backslash becomes \\ so escapes cannot be forged. A
// process can name itself "\x1b]0;pwned\a"; that must never reach a tty raw.
func Sanitize(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			writeHex(&b, byte(r))
		case r >= 0x80 && r < 0xa0:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

func writeHex(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}

// isClean is the fast path: plain printable ASCII needs no copy.
func isClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}
