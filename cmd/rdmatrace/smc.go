package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/nldev"
	"github.com/rdmatrace/rdmatrace/ports"
	"github.com/rdmatrace/rdmatrace/proc"
	"github.com/rdmatrace/rdmatrace/rdma"
	"github.com/rdmatrace/rdmatrace/sockdiag"
)

func init() { commands = append(commands, smcCommand()) }

func smcCommand() *cli.Command {
	return &cli.Command{
		Name:      "smc",
		Usage:     "list SMC sockets (the kernel's TCP-compatible sockets over RDMA) with their TCP connection, process, mode, fallback reason and SMC-R link",
		ArgsUsage: " ",
		Description: "Sockets come from SMC's socket diagnostics (NETLINK_SOCK_DIAG, family AF_SMC: the\n" +
			"smc_diag module, loaded on demand as root), processes from /proc/PID/fd. An SMC\n" +
			"connection starts as TCP (its CLC socket, whose 4-tuple is shown); SMC-R then moves the\n" +
			"data to RDMA over a link group's link, or falls back to TCP and says why (the\n" +
			"SMC_CLC_DECL code, decoded). The [smc] QPs listed with a link are the smc module's QPs on\n" +
			"that device port: no kernel interface gives a link's QP numbers.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace smc\n" +
			"   rdmatrace smc -j\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no SMC diagnostics (smc_diag), a reply that could not be decoded (what could be is shown)", ""),
		Flags:  listFlags(),
		Action: runSMC,
	}
}

func runSMC(c *cli.Context) error {
	if err := maxArgs(c, 0); err != nil {
		return err
	}
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if format == outText {
		return usage(c, "-o text: smc has table, json and ndjson")
	}
	socks, err := sockdiag.DumpSMC()
	if errors.Is(err, sockdiag.ErrNoSMC) {
		return exitWith(1, fmt.Errorf("smc: %w; SMC sockets cannot be listed without it", err))
	}
	errs := []error{err}
	var qps []rdma.Resource
	if cl, err := nldev.Dial(); err == nil {
		devs, derr := cl.Devices()
		qps, err = cl.Resources(rdma.ResQP, devs)
		errs = append(errs, derr, err)
		cl.Close()
	}
	var comms proc.CommCache
	rows := ports.JoinSMC(socks, qps, &comms)
	proc.WarnPIDNamespace(os.Stderr)
	objs := make([]formats.Object, len(rows))
	for i := range rows {
		objs[i] = ports.SMCObject(&rows[i])
	}
	if err := writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return ports.SMCTable(rows) }); err != nil {
		return err
	}
	return partial(errors.Join(errs...))
}

// smcOwner names the process that holds the SMC socket of a fallback
// event, by its inode: the server side falls back in a kworker, so the
// task that ran says nothing. A socket not accepted yet has no process.
func smcOwner(e *rdma.Event) {
	var comms proc.CommCache
	if pid, ok := comms.SocketOwners(map[uint64]bool{e.Inode: true})[e.Inode]; ok {
		e.Owner.PID, e.Owner.TID, e.Owner.Comm = pid, pid, comms.Comm(pid)
		e.Flags |= rdma.EvHasOwner
	}
}
