// Package termsafe escapes text for a terminal: what comes from the
// kernel, a process or a file name must not reach a tty raw.
package termsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes a string from the kernel or a process safe for a terminal:
// control characters (C0, DEL, C1), format characters (bidi overrides and
// isolates, zero-width spaces and joiners, the BOM, ...), line and
// paragraph separators, and invalid UTF-8 become visible escapes such as
// \x1b, \u009b or \u202e, and a backslash becomes \\ so escapes cannot be
// forged. A process can name itself "\x1b]0;pwned\a", or "\u202egnipr" to
// read as "rping" backwards; neither may reach a tty raw.
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
		case Unsafe(r):
			writeU(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Unsafe reports whether a terminal must not be given r as it is: it
// controls the terminal (C0, DEL, C1), is invisible or reorders what
// follows (Unicode's format characters, category Cf: bidi embeddings,
// overrides and isolates U+202A-E and U+2066-9, U+200B-F, U+FEFF, ...), or
// breaks the line (U+2028, U+2029). Every escaping writer of package formats
// asks it, so that text, tables and JSON agree.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r < 0xa0:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

const hexDigits = "0123456789abcdef"

func writeHex(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}

// writeU writes \u00HH for C1 controls (as before D13, which readers of
// saved output know), \uHHHH for the rest of the BMP and \UHHHHHHHH above.
func writeU(b *strings.Builder, r rune) {
	digits := 4
	if r > 0xffff {
		b.WriteString(`\U`)
		digits = 8
	} else {
		b.WriteString(`\u`)
	}
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hexDigits[(r>>(4*i))&0xf])
	}
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
