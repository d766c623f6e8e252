package ports

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// ErrNoRDMA is in Gather's error when the kernel has no RDMA netlink: the
// sockets are still there, the rdma_cm side is not.
var ErrNoRDMA = errors.New("no RDMA netlink (ib_core not loaded?): rdma_cm IDs not shown")

// Gather reads the two sides of the caller's network namespace: its
// sockets (sock_diag), then its devices and rdma_cm IDs (RDMA netlink).
// A socket that closes between the two dumps is simply absent; what could
// be read is returned with the error of what could not.
func Gather() (Input, error) {
	in := Input{IWarp: map[string]bool{}}
	var errs []error
	socks, err := sockdiag.Dump(-1)
	in.Sockets = socks
	errs = append(errs, err)
	// SMC's diagnostics only where SMC is loaded: asking for them would
	// load smc_diag, and smc with it.
	if _, err := os.Stat("/sys/module/smc"); err == nil {
		in.SMC, err = sockdiag.DumpSMC()
		if !errors.Is(err, sockdiag.ErrNoSMC) {
			errs = append(errs, err)
		}
	}
	cl, err := nldev.Dial()
	if err != nil {
		return in, errors.Join(append(errs, fmt.Errorf("%w: %v", ErrNoRDMA, err))...)
	}
	defer cl.Close()
	devs, err := cl.Devices()
	errs = append(errs, err)
	for _, d := range devs {
		if IWarpDevice(d) {
			in.IWarp[d.Name] = true
		}
	}
	ids, err := cl.Resources(rdma.ResCMID, devs)
	in.CMIDs = ids
	errs = append(errs, err)
	return in, errors.Join(errs...)
}

// IWarpDevice says whether d is iWARP: node type RNIC, or protocol "iw"
// where the kernel sends one.
func IWarpDevice(d rdma.Device) bool {
	return d.NodeType.String() == "rnic" || d.Protocol == "iw"
}

// WithoutNoRDMA takes ErrNoRDMA out of Gather's error: whether it was
// there, and the rest (nil when it was all).
func WithoutNoRDMA(err error) (noRDMA bool, rest error) {
	if !errors.Is(err, ErrNoRDMA) {
		return false, err
	}
	var others []error
	for _, e := range unjoin(err) {
		if !errors.Is(e, ErrNoRDMA) {
			others = append(others, e)
		}
	}
	return true, errors.Join(others...)
}

// unjoin flattens errors.Join's tree into its leaves.
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}
