//go:build !urfave_cli_no_docs

package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The man page generator is left out of the installed binary (the Makefile
// builds with urfave_cli_no_docs): `make man` runs it from source.
func init() {
	commands = append(commands, &cli.Command{
		Name:   "generate-man",
		Usage:  "write rdmabench(1) in roff, from the command definitions",
		Hidden: true,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("generate-man takes no arguments")
			}
			page, err := manPage(c.App)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	})
}

// manDescription is the page's DESCRIPTION; the App's own Description
// (for --help) also carries examples and exit statuses, which the page
// has as sections of their own.
const manDescription = `rdmabench times the verbs paths of an RDMA device the way the tools it imitates do: lat is perftest's ib_write_lat, ib_send_lat and ib_read_lat (the same columns, the same definitions), conn is cmtime's rdma_cm connection setup step by step, ctrl times the control path (PD, CQ, QP and its transitions, reg_mr and dereg_mr over sizes), burst is the connection burst of a job's start (ranks creating many RC QPs at once and connecting them in pairs, over verbs or rdma_cm). The timing loops are C, with no cgo call per iteration.

burst runs untraced, then again with rdmatrace trace beside it as a user would run it (its own defaults), and prints both passes' QPs a second and each verb's p50 and p99 with their ratio, what the tracer cost (CPU, memory) and which of the burst's QP lifecycle events its trace lacks.

lat's table is always an untraced pass. In one process rdmabench then runs the same series again with rdmatrace trace beside it (on the CPUs the two ends leave free at nice 19, else where the scheduler puts it), and prints that pass's own table with each size's traced/untraced ratio, then every slow sample with what overlapped it: the timed thread off its CPU and who ran instead, other processes' memory registrations, QP and CQ creations, rdma_cm connections. --no-trace measures alone; where the tracer cannot run (no module BTF, no CAP_BPF) rdmabench says why and measures alone; --trace makes that an error.

Measuring needs access to the RDMA device (/dev/infiniband) and a memlock limit for the buffers; tracing needs what rdmatrace trace needs: Linux 5.11 or later with module BTF, and CAP_BPF and CAP_PERFMON, or root.
`

var manExamples = [][2]string{
	{"rdmabench lat -d rxe0", "ib_write_lat's 2-byte latency, then the traced pass"},
	{"rdmabench lat -d rxe0 --op send -a --no-trace", "ib_send_lat -a: every size from 2 to 8M, one table"},
	{"rdmabench lat -d mlx5_0 --server", "one end on this host ..."},
	{"rdmabench lat -d mlx5_0 --client 10.0.0.1", "... and the other on that one"},
	{"rdmabench lat -d rxe0 --plot lat.svg --perfetto lat.json", "latency over time, its CDF, and a timeline for ui.perfetto.dev"},
	{"rdmabench conn -d rxe0 -n 100 -c 8", "100 rdma_cm connections, 8 at a time, step by step"},
	{"rdmabench ctrl -d rxe0 --sizes 4K-1G", "the control path, and reg_mr's time over sizes"},
	{"rdmabench burst -d rxe0 -P 4 -n 2500 --plot burst.svg", "a job's start: 4 processes × 2500 QPs at once, untraced and traced, and what the trace lacks"},
}

var manExitStatus = [][2]string{
	{"0", "success, the results printed"},
	{"1", "an error: no device, port or GID, a bad value (the line says which), a peer that stopped answering, a --plot or --perfetto file that could not be written, --trace with a tracer that cannot start"},
	{"2", "a usage error: an unknown command or flag, a flag value that is not a number"},
}

const manSynopsis = `.SH SYNOPSIS
.B rdmabench
.I COMMAND
[OPTIONS]
.br
.B rdmabench
.I COMMAND
\-\-help
.br
.B rdmabench
\-\-version
`

// manPage renders rdmabench(1): urfave/cli's page from the command
// definitions, each command's synopsis and Description (as --help shows
// it) in its section, then EXIT STATUS, EXAMPLES and SEE ALSO. It changes
// app's commands: generate-man runs once, then exits.
func manPage(app *cli.App) (string, error) {
	app.Description = manDescription
	for _, c := range app.Commands {
		c.UsageText = "rdmabench " + c.Name + " [OPTIONS]"
		if d := strings.Trim(c.Description, "\n"); d != "" {
			c.UsageText += "\n\n" + d
		}
	}
	page, err := app.ToManWithSection(1)
	if err != nil {
		return "", err
	}
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
	// urfave/cli makes each command a section: subsections of COMMANDS.
	lines := strings.Split(page, "\n")
	inCommands := false
	for i, l := range lines {
		switch {
		case l == ".SH COMMANDS":
			inCommands = true
		case inCommands && strings.HasPrefix(l, ".SH "):
			lines[i] = ".SS " + strings.TrimPrefix(l, ".SH ")
		}
	}
	var b strings.Builder
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n.SH EXIT STATUS\n")
	for _, s := range manExitStatus {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(s[0]), roffEscape(s[1]))
	}
	b.WriteString("\n.SH EXAMPLES\n")
	for _, e := range manExamples {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(e[0]), roffEscape(e[1]))
	}
	b.WriteString("\n.SH SEE ALSO\n.BR rdmatrace (8),\n.BR ib_write_lat (1),\n.BR ib_send_lat (1),\n.BR ib_read_lat (1),\n.BR cmtime (1)\n")
	b.WriteString(".PP\n" + roffEscape("The method and the figures: docs/rdmabench.md and docs/benchmarks.md in rdmatrace's source tree.") + "\n")
	return b.String(), nil
}

// roffEscape makes s safe as roff text: backslashes escaped, hyphens as
// \- (so that options copy and paste), a leading dot or quote kept from
// being read as a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
