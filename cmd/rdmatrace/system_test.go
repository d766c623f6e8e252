package main

import "testing"

func TestSystemUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"system", "set"}, {"system", "set", "netns"}, {"system", "set", "netns", "private"},
		{"system", "show", "bogus"}, {"system", "-o", "table"},
	} {
		_, stderr, code := rdmatrace(t, args...)
		if code != 2 || stderr == "" {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want a usage error, exit 2", args, code, stderr)
		}
	}
}
