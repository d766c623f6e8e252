// Package ratelog writes rdmatrace's own log lines for errors that can
// repeat without end (a server's accept errors, a collector that keeps
// refusing): each line "rdmatrace: ..." sanitized for a terminal and cut
// to a bounded length, and at most one line per kind per interval; the
// next line of a kind says how many were held back.
package ratelog

import (
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// MaxLine bounds a message (before sanitizing); longer ones are cut.
const MaxLine = 512

// MaxKinds bounds the kinds remembered; past it, new kinds share one
// interval.
const MaxKinds = 128

// Logger is safe for concurrent use.
type Logger struct {
	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	now   func() time.Time
	kinds map[string]*kindState
}

type kindState struct {
	last time.Time
	held int
}

// New logs to w at most once per kind every interval (0: every line).
func New(w io.Writer, every time.Duration) *Logger {
	return &Logger{w: w, every: every, now: time.Now, kinds: map[string]*kindState{}}
}

// SetClock replaces time.Now (tests).
func (l *Logger) SetClock(now func() time.Time) { l.mu.Lock(); l.now = now; l.mu.Unlock() }

// Printf logs one line of kind unless a line of that kind was written less
// than the interval ago.
func (l *Logger) Printf(kind, format string, args ...any) {
	l.Log(kind, fmt.Sprintf(format, args...))
}

// Log logs msg as one line of kind (see Printf).
func (l *Logger) Log(kind, msg string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	st := l.kinds[kind]
	if st == nil {
		if len(l.kinds) >= MaxKinds {
			kind = "\x00overflow"
			st = l.kinds[kind]
		}
		if st == nil {
			st = &kindState{}
			l.kinds[kind] = st
		}
	}
	if !st.last.IsZero() && l.every > 0 && now.Sub(st.last) < l.every {
		st.held++
		return
	}
	line := "rdmatrace: " + Clean(msg)
	if st.held > 0 {
		line += fmt.Sprintf(" (and %d more like it in the last %s)", st.held, now.Sub(st.last).Round(time.Second))
	}
	st.last, st.held = now, 0
	_, _ = io.WriteString(l.w, line+"\n")
}

// Clean is msg as one safe line: trailing newlines dropped, cut to
// MaxLine bytes, sanitized (a newline inside shows as \x0a).
func Clean(msg string) string {
	msg = strings.TrimRight(msg, "\r\n")
	if len(msg) > MaxLine {
		cut := MaxLine
		for cut > 0 && msg[cut]&0xc0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return termsafe.Sanitize(msg)
}

// Kind is the kind of a free-form message: its text with every number
// (ports, addresses, counts, durations) as '#', at most 64 bytes. Two
// accept errors that differ only in their retry delay, or two handshake
// errors from different clients, are one kind.
func Kind(msg string) string {
	var b strings.Builder
	digits := false
	for i := 0; i < len(msg) && b.Len() < 64; i++ {
		c := msg[i]
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	return b.String()
}

// StdLogger is a *log.Logger (net/http's ErrorLog, promhttp's ErrorLog)
// whose every line goes through l as "rdmatrace: prefix<line>", its kind
// the line's Kind.
func (l *Logger) StdLogger(prefix string) *log.Logger {
	return log.New(writer{l, prefix}, "", 0)
}

type writer struct {
	l      *Logger
	prefix string
}

// Write takes one line: log.Logger writes each whole.
func (w writer) Write(p []byte) (int, error) {
	msg := w.prefix + string(p)
	w.l.Log(Kind(msg), msg)
	return len(p), nil
}
