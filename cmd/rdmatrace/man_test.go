//go:build !urfave_cli_no_docs

package main

import (
	"strings"
	"testing"
)

// make man's page comes from the same definitions as --help: every
// visible command and its examples are in it.
func TestManPageHasEveryCommand(t *testing.T) {
	page, stderr, code := rdmatrace(t, "generate-man")
	if code != 0 || stderr != "" || !strings.Contains(page, `.TH rdmatrace 8`) {
		t.Fatalf("generate-man: exit %d, stderr %q, page starts %.200q", code, stderr, page)
	}
	for _, c := range commands {
		if !c.Hidden && !strings.Contains(page, "\n.SH "+c.Name+"\n") && !strings.Contains(page, "\n.SH "+c.Name+",") {
			t.Errorf("the man page has no section for %s", c.Name)
		}
	}
	if !strings.Contains(page, "EXIT STATUS") || !strings.Contains(page, "rdmatrace trace qp pid 1234") {
		t.Error("the man page has no EXIT STATUS or no examples")
	}
}
