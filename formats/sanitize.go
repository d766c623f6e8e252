// Package formats renders rdma values for people and programs: tables,
// iproute2-style text lines, JSON and NDJSON. (The legacy rdma_cm layout is
// written by debugfs.LegacyWriter, beside its reader.)
package formats

import "github.com/rdmatrace/rdmatrace/internal/base/termsafe"

// Sanitize makes a string safe for a terminal: see termsafe.Sanitize.
func Sanitize(s string) string { return termsafe.Sanitize(s) }

// Unsafe reports whether a terminal must not be given r as it is: see
// termsafe.Unsafe.
func Unsafe(r rune) bool { return termsafe.Unsafe(r) }

// ErrorLines gives the lines that show err on a terminal: one per error
// that errors.Join joined (recursively), each sanitized. Printing a joined
// error whole would show its newlines as \x0a.
func ErrorLines(err error) []string {
	var out []string
	for _, e := range Unjoin(err) {
		out = append(out, Sanitize(e.Error()))
	}
	return out
}

// Unjoin lists the errors that errors.Join joined into err, recursively;
// err itself when it is no join, none when it is nil.
func Unjoin(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Unjoin(e)...)
	}
	return out
}
