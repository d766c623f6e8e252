// Command rdmabench measures the verbs paths of an RDMA device: data-path
// latency (lat, perftest's method), rdma_cm connection setup (conn, cmtime's
// steps) and the control path (ctrl). Its timing loops are C (package
// verbs); with tracing (tracing.go) it also says what the kernel did while a
// sample was slow.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func newApp() *cli.App {
	cmds := []*cli.Command{latCommand(), connCommand(), ctrlCommand()}
	for _, c := range cmds {
		c.Flags = append(c.Flags, tracingFlags...)
	}
	return &cli.App{
		Name:            "rdmabench",
		Usage:           "verbs microbenchmarks: latency, rdma_cm connection setup, control path",
		Commands:        cmds,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main prints the one line
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "rdmabench: %v\n", err)
		os.Exit(1)
	}
}
