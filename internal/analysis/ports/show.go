package ports

import (
	"log/slog"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
)

// Show is `rdmatrace ports`: what gather read (Gather), joined with the
// owners p names, handed to write, after a line on slog when the owners'
// PIDs are our own PID namespace's. Without RDMA netlink the sockets are
// written, a line after them says the rdma_cm IDs are not (its cause is
// the kernel's, not worth a second one) and noRDMA is true: the command
// exits 1, as its help says. What else could not be read comes back as
// problems.
func Show(gather func() (Input, error), p Procs, write func([]Row) error) (noRDMA bool, problems, err error) {
	in, gerr := gather()
	rows := Join(in, p)
	if proc.OwnPIDNamespace("") {
		slog.Info(proc.PIDNamespaceNote)
	}
	if err := write(rows); err != nil {
		return false, nil, err
	}
	noRDMA, problems = WithoutNoRDMA(gerr)
	if noRDMA {
		slog.Info("ports: " + termsafe.Sanitize(ErrNoRDMA.Error()))
	}
	return noRDMA, problems, nil
}
