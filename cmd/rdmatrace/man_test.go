//go:build !urfave_cli_no_docs

package main

import (
	"strings"
	"testing"
)

// make man's page comes from the same definitions as --help: every
// visible command has a subsection of COMMANDS with its synopsis,
// description, examples and exit status, and the page has the sections of
// a man page, not only the flags.
func TestManPageHasEveryCommand(t *testing.T) {
	page, stderr, code := rdmatrace(t, "generate-man")
	if code != 0 || stderr != "" || !strings.Contains(page, `.TH rdmatrace 8`) {
		t.Fatalf("generate-man: exit %d, stderr %q, page starts %.200q", code, stderr, page)
	}
	for _, c := range commands {
		if c.Hidden {
			continue
		}
		if !strings.Contains(page, "\n.SS "+c.Name+"\n") && !strings.Contains(page, "\n.SS "+c.Name+",") {
			t.Errorf("the man page has no subsection for %s", c.Name)
		}
		if !strings.Contains(page, "\nrdmatrace "+c.Name+" ") {
			t.Errorf("the man page has no synopsis for %s", c.Name)
		}
		// The first line of each paragraph of the Description: its
		// prose, EXAMPLES and EXIT STATUS are all there.
		for _, para := range strings.Split(c.Description, "\n\n") {
			first, _, _ := strings.Cut(strings.TrimSpace(para), "\n")
			if first != "" && !strings.Contains(page, first) {
				t.Errorf("the man page's %s has no %q", c.Name, first)
			}
		}
		for _, sub := range c.Subcommands {
			// urfave/cli adds a help subcommand to commands it has set up
			// in this process (other tests run them); the page has none.
			if !sub.Hidden && sub.Name != "help" && !strings.Contains(page, "\n.SS "+c.Name+" "+sub.Name) {
				t.Errorf("the man page has no subsection for %s %s", c.Name, sub.Name)
			}
		}
	}
	for _, want := range []string{
		"\n.SH SYNOPSIS\n", "\n.SH DESCRIPTION\n", "\n.SH COMMANDS\n", "\n.SH EXIT STATUS\n", "\n.SH EXAMPLES\n", "\n.SH SEE ALSO\n",
		"rdmatrace trace qp pid 1234", ".B 130\n",
		".BR rdma (8)", ".BR rdma\\-resource (8)", ".BR rdma\\-statistic (8)", ".BR bpftrace (8)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the man page has no %q", want)
		}
	}
	if strings.Contains(page, `\fBUsage\fP`) || strings.Contains(page, "\n.SH trace\n") {
		t.Error("the man page still has urfave/cli's Usage block or a command as a section")
	}
}
