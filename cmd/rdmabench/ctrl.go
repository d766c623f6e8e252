package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

func ctrlCommand() *cli.Command {
	return &cli.Command{
		Name:  "ctrl",
		Usage: "the control path: open device, PD, CQ, QP and its transitions, destroy; reg_mr/dereg_mr over a size sweep",
		Description: "Each call is timed on one thread; traced (the default), the time inside the kernel's handler\n" +
			"is shown next to it, and reg_mr's time is fitted against the size.\n\n" +
			"EXAMPLES:\n" +
			"   rdmabench ctrl -d rxe0                        # 5 of each, reg_mr from 4K to 1G\n" +
			"   rdmabench ctrl -d rxe0 --sizes 4K,2M --prefault no -n 20\n" +
			"   rdmabench ctrl -d rxe0 --perfetto ctrl.json   # the traced kernel spans on a timeline\n\n" +
			"EXIT STATUS:\n" + exitStatus(""),
		Flags: []cli.Flag{
			devFlag, ibPortFlag,
			&cli.IntFlag{Name: "gid-index", Aliases: []string{"x"}, Value: 0, Usage: "GID index for the QP's address (it is connected to itself)"},
			&cli.IntFlag{Name: "iters", Aliases: []string{"n"}, Value: 5, Usage: "times each operation runs (each size)"},
			&cli.StringFlag{Name: "sizes", Value: "4K-1G", Usage: "reg_mr sizes: FROM-TO (×4 steps) or a list 4K,1M,1G"},
			&cli.StringFlag{Name: "prefault", Value: "both", Usage: "memory touched before reg_mr: yes, no or both"},
			jsonFlag, traceFlag, noTraceFlag,
		},
		Action: runCtrl,
	}
}

// parseSweep reads FROM-TO (from, 4·from, ... to) or a comma list.
func parseSweep(s string) ([]int64, error) {
	for i := 1; i < len(s); i++ {
		if s[i] == '-' {
			from, err := parseSize(s[:i])
			if err != nil {
				return nil, err
			}
			to, err := parseSize(s[i+1:])
			if err != nil {
				return nil, err
			}
			if to < from {
				return nil, fmt.Errorf("sizes %q: %d is below %d", s, to, from)
			}
			return powers(from, to, 4), nil
		}
	}
	return parseSizes(s)
}

func runCtrl(c *cli.Context) (err error) {
	if c.NArg() > 0 {
		return fmt.Errorf("ctrl takes no arguments (got %q)", c.Args().First())
	}
	sizes, err := parseSweep(c.String("sizes"))
	if err != nil {
		return fmt.Errorf("--sizes: %w", err)
	}
	var pf []bool
	switch c.String("prefault") {
	case "yes":
		pf = []bool{true}
	case "no":
		pf = []bool{false}
	case "both":
		pf = []bool{true, false}
	default:
		return fmt.Errorf("--prefault %q: want yes, no or both", c.String("prefault"))
	}
	iters := c.Int("iters")
	if iters < 1 || iters > 100000 {
		return fmt.Errorf("-n %d: want 1 to 100000", iters)
	}
	dev, err := verbs.CheckDevice(c.String("ib-dev"), c.Int("ib-port"), c.Int("gid-index"))
	if err != nil {
		return err
	}
	req := traceOptions(c, traceRequest{Bench: "ctrl", PID: os.Getpid(), Dev: dev.Name, JSON: c.Bool("json"), Out: os.Stdout})
	if err := checkOutputs(req); err != nil {
		return err
	}
	sess, tracingDesc, err := startTrace(req)
	if err != nil {
		return err
	}
	if sess == nil && c.String("perfetto") != "" {
		return fmt.Errorf("--perfetto %s: ctrl's file shows the traced kernel events, and tracing is %s", c.String("perfetto"), tracingDesc)
	}
	if sess != nil {
		defer func() {
			if serr := sess.Stop(); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	ops, err := verbs.Ctrl(verbs.CtrlConfig{Dev: dev.Name, Port: c.Int("ib-port"), GIDIndex: c.Int("gid-index"), Iters: iters, Sizes: sizes, Prefault: pf})
	if err != nil {
		return err
	}
	if sess != nil {
		if err := sess.Ctrl(ops); err != nil {
			return err
		}
	}
	r := &report.CtrlReport{Dev: dev.Name, Emulated: emulated("/sys", dev.Name), Tracing: tracingDesc, Ops: ops}
	if c.Bool("json") {
		return report.WriteCtrlJSON(os.Stdout, r)
	}
	return report.WriteCtrlTable(os.Stdout, r)
}
