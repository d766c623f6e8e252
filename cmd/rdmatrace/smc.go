package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/smcnl"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
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
			"`smc linkgroup` and `smc device` are smc-tools' `smcr linkgroup link-show` and `smcr\n" +
			"device` (smc-tools is not in Debian), from SMC's generic netlink (SMC_GEN_NETLINK, Linux\n" +
			"5.11 and later).\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace smc\n" +
			"   rdmatrace smc -j\n" +
			"   rdmatrace smc linkgroup\n" +
			"   rdmatrace smc device -j\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no SMC diagnostics (smc_diag), a reply that could not be decoded (what could be is shown)", ""),
		Flags:  listFlags(),
		Action: runSMC,
		Subcommands: []*cli.Command{
			{
				Name:    "linkgroup",
				Aliases: []string{"lgr"},
				Usage:   "list SMC-R link groups, one line per link, with the SMC sockets on each link and the [smc] QPs of its device port",
				Description: "From SMC_GEN_NETLINK's link dump (what `smcr linkgroup link-show` shows), joined\n" +
					"with smc_diag's sockets (by link id, device, port and GIDs) and RDMA netlink's QPs.\n\n" +
					"EXIT STATUS:\n" + exitStatus("an error: no SMC generic netlink (smc not loaded, or Linux before 5.11)", ""),
				ArgsUsage: " ",
				Flags:     listFlags(),
				Action:    runSMCLinkGroups,
			},
			{
				Name:      "device",
				Aliases:   []string{"dev"},
				Usage:     "list the RDMA device ports SMC-R can use, with their PNET ID, netdev, state and links",
				ArgsUsage: " ",
				Description: "From SMC_GEN_NETLINK's device dump (what `smcr device` shows). smc takes only\n" +
					"InfiniBand and RoCE devices (node type CA): iWARP devices such as siw are not listed.\n\n" +
					"EXIT STATUS:\n" + exitStatus("an error: no SMC generic netlink (smc not loaded, or Linux before 5.11)", ""),
				Flags:  listFlags(),
				Action: runSMCDevices,
			},
		},
	}
}

// smcNetlink opens SMC's generic netlink, or says why it cannot.
func smcNetlink() (*smcnl.Client, error) {
	cl, err := smcnl.Dial()
	if err != nil {
		return nil, exitWith(1, fmt.Errorf("smc: %w", err))
	}
	return cl, nil
}

func runSMCLinkGroups(c *cli.Context) error {
	format, err := listFormat(c, "smc linkgroup")
	if err != nil {
		return err
	}
	cl, err := smcNetlink()
	if err != nil {
		return err
	}
	groups, err := cl.LinkGroups()
	cl.Close()
	errs := []error{err}
	socks, err := sockdiag.DumpSMC()
	if !errors.Is(err, sockdiag.ErrNoSMC) {
		errs = append(errs, err)
	}
	qps, err := smcQPs()
	errs = append(errs, err)
	rows := ports.JoinLinkGroups(groups, ports.JoinSMC(socks, nil, enrich.New(enrich.Options{})), qps)
	objs := make([]formats.Object, len(rows))
	for i := range rows {
		objs[i] = formats.LinkGroupObject(&rows[i])
	}
	if err := writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.LinkGroupTable(rows) }); err != nil {
		return err
	}
	return partial(errors.Join(errs...))
}

func runSMCDevices(c *cli.Context) error {
	format, err := listFormat(c, "smc device")
	if err != nil {
		return err
	}
	cl, err := smcNetlink()
	if err != nil {
		return err
	}
	devs, derr := cl.Devices()
	cl.Close()
	dps := ports.DevicePorts(devs)
	var objs []formats.Object
	for i := range dps {
		objs = append(objs, formats.SMCDeviceObject(&dps[i]))
	}
	netdev := func(idx uint32) string {
		if idx == 0 {
			return "-"
		}
		if ifc, err := net.InterfaceByIndex(int(idx)); err == nil {
			return ifc.Name
		}
		return fmt.Sprintf("ifindex %d", idx) // in another network namespace
	}
	if err := writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.SMCDeviceTable(dps, netdev) }); err != nil {
		return err
	}
	return partial(derr)
}

// smcQPs are the QPs of every device, whose [smc] ones are SMC-R's; none
// without RDMA netlink (no ib_core: no SMC-R either).
func smcQPs() ([]rdma.Resource, error) {
	cl, err := nldev.Dial()
	if err != nil {
		return nil, nil
	}
	defer cl.Close()
	devs, derr := cl.Devices()
	qps, err := cl.Resources(rdma.ResQP, devs)
	return qps, errors.Join(derr, err)
}

func runSMC(c *cli.Context) error {
	format, err := listFormat(c, "smc")
	if err != nil {
		return err
	}
	socks, err := sockdiag.DumpSMC()
	if errors.Is(err, sockdiag.ErrNoSMC) {
		return exitWith(1, fmt.Errorf("smc: %w; SMC sockets cannot be listed without it", err))
	}
	errs := []error{err}
	qps, err := smcQPs()
	errs = append(errs, err)
	rows := ports.JoinSMC(socks, qps, enrich.New(enrich.Options{}))
	// Link groups where SMC's generic netlink exists (5.11+); without
	// it the sockets are still the answer.
	if cl, err := smcnl.Dial(); err == nil {
		groups, err := cl.LinkGroups()
		cl.Close()
		errs = append(errs, err)
		ports.AttachLinkGroups(rows, groups)
	}
	proc.WarnPIDNamespace(os.Stderr)
	objs := make([]formats.Object, len(rows))
	for i := range rows {
		objs[i] = formats.SMCObject(&rows[i])
	}
	if err := writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.SMCTable(rows) }); err != nil {
		return err
	}
	return partial(errors.Join(errs...))
}
