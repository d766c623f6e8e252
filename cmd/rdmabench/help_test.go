package main

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// run runs rdmabench's app with args and returns what it wrote.
func run(t *testing.T, args ...string) string {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	if err := app.Run(append([]string{"rdmabench"}, args...)); err != nil {
		t.Fatalf("rdmabench %v: %v", args, err)
	}
	return out.String()
}

func TestVersionFlags(t *testing.T) {
	for _, f := range []string{"--version", "-V"} {
		if got, want := run(t, f), "rdmabench "+versionString()+"\n"; got != want {
			t.Errorf("rdmabench %s: %q, want %q", f, got, want)
		}
	}
	saved := version
	defer func() { version = saved }()
	version = "v1.2.3"
	if got := run(t, "--version"); got != "rdmabench v1.2.3\n" {
		t.Errorf("a stamped version: %q", got)
	}
}

// Every help has EXAMPLES and EXIT STATUS, as rdmatrace's do.
func TestEveryHelpHasExamplesAndExitStatus(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"lat", "--help"}, {"conn", "--help"}, {"ctrl", "--help"}, {"burst", "--help"}} {
		out := run(t, args...)
		for _, want := range []string{"EXAMPLES:", "EXIT STATUS:", "   2  usage error"} {
			if !strings.Contains(out, want) {
				t.Errorf("rdmabench %v: no %q", args, want)
			}
		}
	}
}

// A usage error is status 2 with the command named; any other error 1.
func TestUsageErrorsAreTheirOwnKind(t *testing.T) {
	for _, args := range [][]string{{"lat", "--bogus"}, {"lat", "-n", "x"}, {"ctrl", "-n", "1.5"}, {"burst", "-P", "four"}} {
		app := newApp()
		app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
		err := app.Run(append([]string{"rdmabench"}, args...))
		var u *usageError
		if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), args[0]+": ") {
			t.Errorf("rdmabench %v: %v, want a usage error naming %s", args, err, args[0])
		}
	}
}

// The man page is made from the same definitions: every command, the
// exit statuses and examples, roff only.
func TestManPage(t *testing.T) {
	page := run(t, "generate-man")
	for _, want := range []string{".TH rdmabench 1", ".SH SYNOPSIS", ".SS lat", ".SS conn", ".SS ctrl", ".SS burst",
		".SH EXIT STATUS", ".SH EXAMPLES", ".SH SEE ALSO", `\-\-no\-trace`, "untraced pass"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	for _, hidden := range []string{"generate-man", "burst-rank"} {
		if strings.Contains(page, hidden) || strings.Contains(page, strings.ReplaceAll(hidden, "-", `\-`)) {
			t.Errorf("the page lists the hidden %s", hidden)
		}
	}
	if regexp.MustCompile(`[\x00-\x09\x0b-\x1f\x7f]`).MatchString(page) {
		t.Error("a control character in the page")
	}
}
