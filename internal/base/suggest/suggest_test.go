package suggest

import "testing"

func TestSuggestNamesTheNearestCommand(t *testing.T) {
	names := []string{"completion", "dev", "leaks", "link", "parse", "res", "trace"}
	for in, want := range map[string]string{
		"tarce": "trace", "trac": "trace", "rse": "res", "lnik": "link", "leak": "leaks",
		"resource": "", "xyz": "", "parser": "parse", "de": "dev", "l": "leaks",
	} {
		if got := Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
