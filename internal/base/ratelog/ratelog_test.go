package ratelog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestOneLinePerKindPerInterval(t *testing.T) {
	var out bytes.Buffer
	l := New(&out, time.Second)
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	now := t0
	l.SetClock(func() time.Time { return now })
	std := l.StdLogger("http: ")
	for i := 0; i < 1000; i++ { // net/http's accept loop, once a millisecond
		std.Printf("Accept error: accept tcp 127.0.0.1:9879: accept4: too many open files; retrying in %dms", 5+i%995)
		now = now.Add(time.Millisecond)
	}
	std.Printf("TLS handshake error from 127.0.0.1:40000: EOF")
	now = t0.Add(1500 * time.Millisecond)
	std.Printf("Accept error: accept tcp 127.0.0.1:9879: accept4: too many open files; retrying in 1s")
	want := "rdmatrace: http: Accept error: accept tcp 127.0.0.1:9879: accept4: too many open files; retrying in 5ms\n" +
		"rdmatrace: http: TLS handshake error from 127.0.0.1:40000: EOF\n" +
		"rdmatrace: http: Accept error: accept tcp 127.0.0.1:9879: accept4: too many open files; retrying in 1s (and 999 more like it in the last 2s)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestLinesAreSanitizedAndBounded(t *testing.T) {
	var out bytes.Buffer
	l := New(&out, 0)
	l.Log("x", "owner \x1b]0;pwned\a\nsecond line\n")
	l.Log("y", strings.Repeat("é", 1000))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(lines), out.String())
	}
	if lines[0] != `rdmatrace: owner \x1b]0;pwned\x07\x0asecond line` {
		t.Errorf("got %q", lines[0])
	}
	if len(lines[1]) > MaxLine+len("rdmatrace: ...") || !strings.HasSuffix(lines[1], "é...") {
		t.Errorf("long line: %d bytes, ends %q", len(lines[1]), lines[1][len(lines[1])-8:])
	}
}

func TestKindsAreBounded(t *testing.T) {
	var out bytes.Buffer
	l := New(&out, time.Hour)
	for i := 0; i < 10*MaxKinds; i++ {
		l.Log(strings.Repeat("k", i), "distinct")
	}
	if len(l.kinds) > MaxKinds+1 {
		t.Errorf("%d kinds remembered, want at most %d", len(l.kinds), MaxKinds+1)
	}
	if n := strings.Count(out.String(), "\n"); n != MaxKinds+1 {
		t.Errorf("%d lines, want %d (one per kind, then one for all the rest)", n, MaxKinds+1)
	}
}
