package ports

import (
	"errors"
	"fmt"
	"net"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/smcnl"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// Unavailable is a gathering's error when its source cannot be read at
// all: nothing is listed. Any other error is a part that could not be
// read, beside what was.
type Unavailable struct{ Err error }

func (e *Unavailable) Error() string { return e.Err.Error() }
func (e *Unavailable) Unwrap() error { return e.Err }

// GatherSMC is `smc`: SMC's sockets (smc_diag) joined with the [smc] QPs
// (RDMA netlink) and, where SMC's generic netlink exists (5.11+), their
// link groups; without it the sockets are still the answer. p names the
// processes.
func GatherSMC(p Procs) ([]SMCRow, error) {
	socks, err := sockdiag.DumpSMC()
	if errors.Is(err, sockdiag.ErrNoSMC) {
		return nil, &Unavailable{fmt.Errorf("smc: %w; SMC sockets cannot be listed without it", err)}
	}
	qps, qerr := listQPs()
	errs := []error{err, qerr}
	rows := JoinSMC(socks, qps, p)
	if cl, err := smcnl.Dial(); err == nil {
		groups, err := cl.LinkGroups()
		cl.Close()
		errs = append(errs, err)
		AttachLinkGroups(rows, groups)
	}
	return rows, errors.Join(errs...)
}

// GatherLinkGroups is `smc linkgroup`: SMC_GEN_NETLINK's links joined with
// smc_diag's sockets and RDMA netlink's QPs.
func GatherLinkGroups(p Procs) ([]LinkGroupRow, error) {
	cl, err := smcnl.Dial()
	if err != nil {
		return nil, &Unavailable{fmt.Errorf("smc: %w", err)}
	}
	groups, err := cl.LinkGroups()
	cl.Close()
	errs := []error{err}
	socks, err := sockdiag.DumpSMC()
	if !errors.Is(err, sockdiag.ErrNoSMC) {
		errs = append(errs, err)
	}
	qps, err := listQPs()
	errs = append(errs, err)
	return JoinLinkGroups(groups, JoinSMC(socks, nil, p), qps), errors.Join(errs...)
}

// GatherSMCDevices is `smc device`: SMC_GEN_NETLINK's device ports.
func GatherSMCDevices() ([]DevicePort, error) {
	cl, err := smcnl.Dial()
	if err != nil {
		return nil, &Unavailable{fmt.Errorf("smc: %w", err)}
	}
	devs, err := cl.Devices()
	cl.Close()
	return DevicePorts(devs), err
}

// NetdevName names a network interface by its index: "-" for none,
// "ifindex N" for one in another network namespace.
func NetdevName(idx uint32) string {
	if idx == 0 {
		return "-"
	}
	if ifc, err := net.InterfaceByIndex(int(idx)); err == nil {
		return ifc.Name
	}
	return fmt.Sprintf("ifindex %d", idx)
}

// listQPs are the QPs of every device, whose [smc] ones are SMC-R's; none
// without RDMA netlink (no ib_core: no SMC-R either).
func listQPs() ([]rdma.Resource, error) {
	cl, err := nldev.Dial()
	if err != nil {
		return nil, nil
	}
	defer cl.Close()
	devs, derr := cl.Devices()
	qps, err := cl.Resources(rdma.ResQP, devs)
	return qps, errors.Join(derr, err)
}
