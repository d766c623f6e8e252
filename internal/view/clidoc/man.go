//go:build !urfave_cli_no_docs

package clidoc

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The man page is left out of the installed binary (the Makefile builds
// with urfave_cli_no_docs, which drops urfave/cli's roff writer): `make
// man` makes it from source.

// manDescription is the page's DESCRIPTION: what rdmatrace is. The App's
// own Description (for --help) also carries examples and exit statuses,
// which the page has as sections of their own.
const manDescription = `rdmatrace makes the Linux RDMA stack as observable as ss, lsof and netstat make TCP: which process holds which rdma_cm connection, queue pair, completion queue, memory region or protection domain, since when, and what happened to it. It reads the kernel's RDMA netlink interface (the data behind iproute2's rdma res), streams resource and connection events live with CO-RE eBPF, names what is left behind when a device goes away or a program exits, and parses saved RDMA state and kernel logs for post-mortems.

The global options -j (JSON), -p (pretty JSON) and -d/-dd (details) go before the command or after it, as in iproute2's rdma: rdmatrace -j res show qp. -j is a JSON array for snapshots (dev, link, res) and one object a line (NDJSON) for streams (trace, leaks, parse). Filters are iproute2's words (rdmatrace res qp type RC pid 1234) or --filter-KEY flags, the same in every command. The commands rdma has take its abbreviations, the first in rdma's order for a prefix of several: rdmatrace sys is system, st statistic, l link, r resource, d dev.

Snapshots (dev, link, res, ps, stat, system, ports, smc) need RDMA netlink and no privilege, bar CAP_NET_ADMIN for MR and PD keys. Live commands (trace, leaks, the exporter's event counters) need kernel and module BTF (Linux 5.11 or later) and CAP_BPF and CAP_PERFMON, or root.
`

// manExamples are the page's EXAMPLES; each command's own are in its
// section.
var manExamples = [][2]string{
	{"rdmatrace -j -p res show qp", "iproute2's rdma, with owners"},
	{"rdmatrace trace qp pid 1234", "QP events of process 1234, live"},
	{"rdmatrace leaks -- ./app", "what ./app left behind"},
	{"rdmatrace leaks --filter-dev rxe0", "what holds rxe0 when it is deleted"},
	{"rdmatrace parse /var/log/bundle/", "saved rdma_cm state"},
	{"rdmatrace ports --conflicts", "ports that rdma_cm and a TCP socket both hold"},
	{"rdmatrace doctor --pid 1234", "can process 1234 use RDMA where it runs?"},
}

// manExitStatus is the page's EXIT STATUS, across commands; each
// command's section has its own.
var manExitStatus = [][2]string{
	{"0", "success (trace: stopped by Ctrl-C, --duration or --count)"},
	{"1", "an error: no RDMA netlink, an unknown device or port, a reply that could not be decoded (what could be is shown); trace, leaks: nothing could be attached; trace -r: some lines were not events (named on stderr); doctor: a check failed; parse: some lines were rejected (named on stderr); leaks --log: some log lines could not be read"},
	{"2", "a usage error: an unknown command, flag, argument or value, one line on stderr; parse: also an input that cannot be read"},
	{"3", "leaks: leaks were reported"},
	{"N", "leaks -- CMD without a leak, trace -- CMD: CMD's own status"},
	{"130", "trace, leaks: a second Ctrl-C, exited at once (128 + the signal)"},
}

// manSeeAlso are the pages SEE ALSO names.
var manSeeAlso = []string{
	"rdma(8)", "rdma-dev(8)", "rdma-link(8)", "rdma-resource(8)", "rdma-statistic(8)", "rdma-system(8)",
	"ss(8)", "bpftrace(8)", "rping(1)",
}

// ManPage renders rdmatrace(8): urfave/cli's page from the command
// definitions, with each command's synopsis, description, examples and exit
// status (its Description, as --help shows it) in its section, the commands
// as subsections of COMMANDS, and EXIT STATUS, EXAMPLES and SEE ALSO.
// It changes app's commands: generate-man runs once, then exits.
func ManPage(app *cli.App) (string, error) {
	app.Description = manDescription
	for _, c := range app.Commands {
		manCommand(c, app.Name)
	}
	page, err := app.ToManWithSection(8)
	if err != nil {
		return "", err
	}
	return commandsAsSubsections(synopsis(page)) + manTail(), nil
}

// manSynopsis is the page's SYNOPSIS, in roff.
const manSynopsis = `.SH SYNOPSIS
.B rdmatrace
[\-j] [\-p] [\-d]
.I COMMAND
[OPTIONS] [ARGS]
.br
.B rdmatrace
.I COMMAND
\-\-help
.br
.B rdmatrace
\-\-version
`

// synopsis puts manSynopsis in place of urfave/cli's SYNOPSIS (the global
// flags only) and drops the "Usage" block it adds to DESCRIPTION, whose
// text manSynopsis has.
func synopsis(page string) string {
	if i := strings.Index(page, ".SH SYNOPSIS\n"); i >= 0 {
		if j := strings.Index(page[i:], ".SH DESCRIPTION\n"); j >= 0 {
			page = page[:i] + manSynopsis + "\n" + page[i+j:]
		}
	}
	if i := strings.Index(page, ".PP\n\\fBUsage\\fP:\n"); i >= 0 {
		if j := strings.Index(page[i:], ".EE\n"); j >= 0 {
			page = page[:i] + page[i+j+len(".EE\n"):]
		}
	}
	return page
}

// manCommand puts the synopsis and the Description of c (and of its
// subcommands) into its UsageText, which urfave/cli's page prints as a
// preformatted block: the descriptions are laid out for a terminal.
func manCommand(c *cli.Command, parent string) {
	path := parent + " " + c.Name
	synopsis := path
	if len(c.VisibleFlags()) > 0 {
		synopsis += " [OPTIONS]"
	}
	if args := strings.TrimSpace(c.ArgsUsage); args != "" {
		synopsis += " " + args
	}
	text := synopsis
	if d := strings.Trim(c.Description, "\n"); d != "" {
		text += "\n\n" + d
	}
	c.UsageText = text
	for _, sub := range c.Subcommands {
		manCommand(sub, path)
	}
}

// commandsAsSubsections turns the command headings urfave/cli writes as
// sections (.SH NAME, and .SS for a subcommand) into subsections of
// COMMANDS, a subcommand named with its parent.
func commandsAsSubsections(page string) string {
	lines := strings.Split(page, "\n")
	inCommands, parent := false, ""
	for i, l := range lines {
		switch {
		case l == ".SH COMMANDS":
			inCommands = true
		case inCommands && strings.HasPrefix(l, ".SH "):
			parent, _, _ = strings.Cut(strings.TrimPrefix(l, ".SH "), ",")
			lines[i] = ".SS " + strings.TrimPrefix(l, ".SH ")
		case inCommands && strings.HasPrefix(l, ".SS "):
			lines[i] = ".SS " + parent + " " + strings.TrimPrefix(l, ".SS ")
		}
	}
	return strings.Join(lines, "\n")
}

// manTail is the EXIT STATUS, EXAMPLES and SEE ALSO sections, in roff.
func manTail() string {
	var b strings.Builder
	b.WriteString("\n.SH EXIT STATUS\n")
	for _, s := range manExitStatus {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(s[0]), roffEscape(s[1]))
	}
	b.WriteString("\n.SH EXAMPLES\n")
	for _, e := range manExamples {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(e[0]), roffEscape(e[1]))
	}
	b.WriteString("\n.SH SEE ALSO\n")
	for i, p := range manSeeAlso {
		name, section, _ := strings.Cut(strings.TrimSuffix(p, ")"), "(")
		sep := ","
		if i == len(manSeeAlso)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, ".BR %s (%s)%s\n", roffEscape(name), section, sep)
	}
	b.WriteString(".PP\n" + roffEscape("The manual, the design and the benchmarks: README.md and docs/ in rdmatrace's source tree.") + "\n")
	return b.String()
}

// roffEscape makes s safe as roff text: backslashes doubled, hyphens as
// \- (so that options copy and paste), and a leading dot or quote kept
// from being read as a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
