package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

func connCommand() *cli.Command {
	return &cli.Command{
		Name:  "conn",
		Usage: "rdma_cm connection setup, step by step as cmtime times it: N connections, one or -c at a time",
		Description: "Both ends run in this process by default (the server is one thread driven by rdma_cm events),\n" +
			"or use --server on one host and --client ADDR on the other. Traced (the default in one process),\n" +
			"each connection is also split into the kernel's phases.\n\n" +
			"EXAMPLES:\n" +
			"   rdmabench conn -d rxe0                       # 20 connections, one at a time\n" +
			"   rdmabench conn -d rxe0 -n 100 -c 8 -j        # 8 at a time, NDJSON records\n" +
			"   rdmabench conn -d rxe0 --perfetto conn.json  # each connection's steps on a timeline\n\n" +
			"EXIT STATUS:\n" + exitStatus(""),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "connections", Aliases: []string{"n"}, Value: 20, Usage: "connections to make"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: 1, Usage: "clients connecting at once, each on its own thread"},
			devFlag, ibPortFlag, gidFlag,
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Value: 18516, Usage: "rdma_cm port"},
			addrFlag,
			&cli.BoolFlag{Name: "server", Usage: "accept the connections of a client on another host"},
			&cli.StringFlag{Name: "client", Usage: "connect to the server at `ADDR`"},
			timeoutFlag, jsonFlag, traceFlag, noTraceFlag,
		},
		Action: runConn,
	}
}

func runConn(c *cli.Context) (err error) {
	if c.NArg() > 0 {
		return fmt.Errorf("conn takes no arguments (got %q)", c.Args().First())
	}
	n, conc := c.Int("connections"), c.Int("concurrency")
	if n < 1 || n > 100000 {
		return fmt.Errorf("-n %d: want 1 to 100000 connections", n)
	}
	if conc < 1 || conc > 256 {
		return fmt.Errorf("-c %d: want 1 to 256 at a time", conc)
	}
	dev, err := verbs.CheckDevice(c.String("ib-dev"), c.Int("ib-port"), c.Int("gid-index"))
	if err != nil {
		return err
	}
	addr := c.String("client")
	if addr == "" {
		addr = c.String("addr")
	}
	if addr == "" {
		if addr, err = verbs.AddrOf("/sys", dev.Name, c.Int("ib-port"), c.Int("gid-index")); err != nil {
			return err
		}
	}
	cfg := verbs.ConnConfig{Addr: addr, Port: c.Int("port"), N: n, Concurrency: conc, Timeout: c.Duration("timeout")}
	if c.Bool("server") {
		_, err := verbs.ConnServer(cfg)
		return err
	}
	req := traceOptions(c, traceRequest{Bench: "conn", PID: os.Getpid(), Dev: dev.Name, JSON: c.Bool("json"), Out: os.Stdout})
	if err := checkOutputs(req); err != nil {
		return err
	}
	sess, tracingDesc, err := startTrace(req)
	if err != nil {
		return err
	}
	if sess != nil {
		defer func() {
			if serr := sess.Stop(); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	r := &report.ConnReport{Addr: fmt.Sprintf("%s:%d", addr, cfg.Port), Concurrency: conc, OneProcess: !c.IsSet("client"),
		Emulated: emulated("/sys", dev.Name), Tracing: tracingDesc}
	if c.IsSet("client") {
		r.Conns, err = verbs.ConnClient(cfg)
	} else {
		r.Conns, err = verbs.Conn(cfg)
	}
	if err != nil {
		return err
	}
	if sess != nil {
		if err := sess.Conn(r.Conns); err != nil {
			return err
		}
	} else {
		out := newOutputs(req)
		out.conns = r.Conns
		if err := out.write(); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return report.WriteConnJSON(os.Stdout, r)
	}
	return report.WriteConnTable(os.Stdout, r)
}
