// Package procexit reads how processes end from the kernel's process
// events connector (cn_proc, CONFIG_PROC_EVENTS): each exit's pid, time
// and exit code, whose low seven bits are the signal that killed it. The
// tracer sees a QP freed at its owner's exit; this says whether a signal
// (which) or an exit status ended the owner. The kernel sends the exit
// after the process's files are released (do_exit: exit_files, then
// exit_notify's proc_exit_connector), so it follows the QP's destruction.
//
// It needs CAP_NET_ADMIN and the initial network namespace (the
// connector exists there only); Open says which is missing.
package procexit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Numbers from include/uapi/linux/connector.h and cn_proc.h.
const (
	familyConnector = 11 // NETLINK_CONNECTOR
	idxProc         = 1  // CN_IDX_PROC (also the multicast group)
	valProc         = 1  // CN_VAL_PROC
	mcastListen     = 1  // PROC_CN_MCAST_LISTEN
	eventExit       = 0x80000000

	cnMsgSize  = 20 // struct cn_msg: id {idx, val}, seq, ack, len (u16), flags (u16)
	eventHead  = 16 // struct proc_event: what, cpu, timestamp_ns (aligned to 8)
	exitFields = 24 // struct exit_proc_event: pid, tgid, exit_code, exit_signal, parent pid and tgid
)

// Reader is a socket listening to the process events.
type Reader struct {
	conn   *netlink.Conn
	closed atomic.Bool
	lost   atomic.Uint64
}

// Open joins the process events' group and asks the kernel to send them.
func Open() (*Reader, error) {
	conn, err := netlink.Dial(familyConnector, &netlink.Config{Groups: idxProc})
	if err != nil {
		switch {
		case errors.Is(err, syscall.EPROTONOSUPPORT):
			return nil, fmt.Errorf("process events: no connector in this network namespace (it exists in the host's only: run with hostNetwork, or on the host): %w", err)
		case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
			return nil, fmt.Errorf("process events need CAP_NET_ADMIN: %w", err)
		}
		return nil, fmt.Errorf("process events (cn_proc): %w", err)
	}
	// A burst of forks and exits must not overflow the socket: 4 MB
	// holds about 50 000 events.
	_ = conn.SetReadBuffer(4 << 20)
	if _, err := conn.Send(netlink.Message{Header: netlink.Header{Type: netlink.Done}, Data: listenRequest()}); err != nil {
		conn.Close()
		if errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("process events need CAP_NET_ADMIN: %w", err)
		}
		return nil, fmt.Errorf("process events: ask the kernel to send them: %w", err)
	}
	return &Reader{conn: conn}, nil
}

// listenRequest is a cn_msg to CN_IDX_PROC with PROC_CN_MCAST_LISTEN. Its
// 4-byte form is the one every kernel takes (6.6's filtered form is 8).
func listenRequest() []byte {
	b := make([]byte, cnMsgSize+4)
	binary.NativeEndian.PutUint32(b[0:], idxProc)
	binary.NativeEndian.PutUint32(b[4:], valProc)
	binary.NativeEndian.PutUint16(b[16:], 4)
	binary.NativeEndian.PutUint32(b[cnMsgSize:], mcastListen)
	return b
}

// ErrLost: the socket's buffer overflowed, so the kernel dropped events.
var ErrLost = errors.New("the kernel dropped process events: the socket's buffer was full")

// Run reads until Close, giving each exit to emit; a full socket buffer
// goes to bad as ErrLost (and is counted, Lost), a message that does
// not decode to bad too. It returns nil after Close.
func (r *Reader) Run(emit func(rdma.ExitStatus), bad func(error)) error {
	for {
		msgs, err := r.conn.Receive()
		if err != nil {
			switch {
			case r.closed.Load() || errors.Is(err, os.ErrClosed):
				return nil
			case errors.Is(err, syscall.ENOBUFS):
				r.lost.Add(1)
				bad(ErrLost)
				continue
			}
			return fmt.Errorf("read process events: %w", err)
		}
		wall, mono := time.Now(), monoNow()
		for _, m := range msgs {
			x, ok, err := Decode(m.Data)
			if err != nil {
				bad(err)
				continue
			}
			if !ok {
				continue
			}
			// The event's time is CLOCK_MONOTONIC: placed on the wall
			// clock by its distance from now.
			if x.mono != 0 && x.mono <= mono {
				x.Time = wall.Add(-time.Duration(mono - x.mono)).UTC()
			} else {
				x.Time = wall.UTC()
			}
			emit(x.ExitStatus)
		}
	}
}

// Lost is how many times the kernel dropped events.
func (r *Reader) Lost() uint64 { return r.lost.Load() }

// Close stops reading; Run returns.
func (r *Reader) Close() error { r.closed.Store(true); return r.conn.Close() }

// Exit is an exit as Decode reads it: the status and the kernel's
// CLOCK_MONOTONIC time of it.
type Exit struct {
	rdma.ExitStatus
	TID  uint32 // the thread that exited (PID is its process)
	mono uint64
}

// Decode reads one connector message: an exit (ok), another process event
// or message (not ok, no error), or a message too short for what it says
// it holds (an error saying what was expected).
func Decode(b []byte) (Exit, bool, error) {
	if len(b) < cnMsgSize {
		return Exit{}, false, fmt.Errorf("process event: %d bytes, shorter than the %d-byte connector header", len(b), cnMsgSize)
	}
	idx, val := binary.NativeEndian.Uint32(b[0:]), binary.NativeEndian.Uint32(b[4:])
	if idx != idxProc || val != valProc {
		return Exit{}, false, nil
	}
	n := int(binary.NativeEndian.Uint16(b[16:]))
	data := b[cnMsgSize:]
	if n > len(data) {
		return Exit{}, false, fmt.Errorf("process event: its header says %d bytes, %d follow", n, len(data))
	}
	data = data[:n]
	if len(data) < eventHead+4 {
		return Exit{}, false, fmt.Errorf("process event: %d bytes, shorter than an event's %d-byte header", len(data), eventHead)
	}
	if binary.NativeEndian.Uint32(data[0:]) != eventExit {
		return Exit{}, false, nil
	}
	if len(data) < eventHead+exitFields {
		return Exit{}, false, fmt.Errorf("process exit event: %d bytes, expected %d", len(data), eventHead+exitFields)
	}
	d := data[eventHead:]
	return Exit{
		ExitStatus: rdma.ExitStatus{PID: binary.NativeEndian.Uint32(d[4:]), Code: binary.NativeEndian.Uint32(d[8:])},
		TID:        binary.NativeEndian.Uint32(d[0:]),
		mono:       binary.NativeEndian.Uint64(data[8:]),
	}, true, nil
}

func monoNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
