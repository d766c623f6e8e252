package termsafe

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"
)

// Handler is a log/slog handler for a command's stderr, as pwru logs: one
// line a record, "PREFIX: message key=value...", the level and time left
// out (a command's user reads sentences). Whatever it writes is made safe
// for a terminal (Safe): a caller that forgot to escape a process's name
// or a file's cannot reach the tty raw.
type Handler struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	attrs  string // of WithAttrs, rendered
	level  slog.Leveler
}

// NewHandler writes records of level at least level (nil: Info) to w,
// each after prefix and ": ".
func NewHandler(w io.Writer, prefix string, level slog.Leveler) *Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{mu: &sync.Mutex{}, w: w, prefix: prefix, level: level}
}

func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(": ")
	b.WriteString(Safe(r.Message))
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range as {
		appendAttr(&b, a)
	}
	h2 := *h
	h2.attrs += b.String()
	return &h2
}

// WithGroup is not used by our commands: a group's attrs are written
// without it.
func (h *Handler) WithGroup(string) slog.Handler { return h }

func appendAttr(b *strings.Builder, a slog.Attr) {
	if a.Equal(slog.Attr{}) {
		return
	}
	b.WriteByte(' ')
	b.WriteString(Safe(a.Key))
	b.WriteByte('=')
	b.WriteString(Sanitize(a.Value.Resolve().String()))
}

// Safe escapes what a terminal must not get (Unsafe, and invalid UTF-8)
// as Sanitize does, but leaves backslashes as they are: text escaped by
// Sanitize already stays as it was, so a line may be made safe twice.
// Quote what comes from outside with Sanitize, whose escapes cannot be
// forged; Safe is the net under it.
func Safe(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || Unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, s[i])
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
