package nlmon

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ErrUnsupported: the kernel has no monitor group (before Linux 6.12).
var ErrUnsupported = errors.New("this kernel sends no RDMA device events (the RDMA netlink monitor group came with Linux 6.12)")

// Monitor is a socket joined to the monitor group.
type Monitor struct {
	conn   *netlink.Conn
	closed atomic.Bool
}

// Join opens an RDMA netlink socket and joins the monitor group. The
// kernel lets any user join it; supported says whether the kernel has it
// (nldev's System().Monitor), as a kernel without it may still accept
// the join and never send.
func Join(supported bool) (*Monitor, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	conn, err := netlink.Dial(familyRDMA, nil)
	if err != nil {
		return nil, fmt.Errorf("open RDMA netlink socket: %w", err)
	}
	if err := conn.JoinGroup(groupNotify); err != nil {
		conn.Close()
		return nil, fmt.Errorf("join the RDMA netlink monitor group: %w", err)
	}
	return &Monitor{conn: conn}, nil
}

// ErrLost: the socket's buffer overflowed, so the kernel dropped events.
var ErrLost = errors.New("the kernel dropped RDMA device events: the monitor socket's buffer was full")

// Run reads events until Close, giving each to emit with the time it was
// read. A message that does not decode goes to bad and reading goes on;
// a full socket buffer goes to bad as ErrLost. It returns nil after
// Close.
func (m *Monitor) Run(emit func(*rdma.Event), bad func(error)) error {
	var ev rdma.Event
	for {
		msgs, err := m.conn.Receive()
		if err != nil {
			switch {
			case m.closed.Load() || errors.Is(err, os.ErrClosed):
				return nil
			case errors.Is(err, syscall.ENOBUFS):
				bad(ErrLost)
				continue
			}
			return fmt.Errorf("read the RDMA netlink monitor group: %w", err)
		}
		now := time.Now().UTC()
		for _, msg := range msgs {
			if err := Decode(msg.Header.Type, msg.Data, &ev); err != nil {
				bad(err)
				continue
			}
			ev.Time = now
			emit(&ev)
		}
	}
}

// Close leaves the group; Run returns.
func (m *Monitor) Close() error { m.closed.Store(true); return m.conn.Close() }
