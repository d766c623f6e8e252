package nldev

import (
	"errors"
	"fmt"

	"github.com/rdmatrace/rdmatrace/internal/host/netns"
)

// A Section is what a listing found in one network namespace.
type Section[T any] struct {
	// NetNS is the namespace's name; "" when our own alone was asked.
	NetNS string
	Rows  []T
	// Err is why the rows are not all there: a reply that could not be
	// decoded, a namespace that could not be entered. The rest is listed.
	Err error
}

// NotFoundError says that the device or port a listing asked for is not
// there: an error of the listing only when no namespace has it.
type NotFoundError struct{ Err error }

func (e *NotFoundError) Error() string { return e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// Where says which network namespaces a listing asks.
type Where struct {
	// NetNS is "" for our own namespace, else what netns.Roots.Find takes:
	// a name under /run/netns, a file such as /proc/PID/ns/net, or "all".
	NetNS string
	// Roots are where the namespaces are found (zero: netns.DefaultRoots).
	Roots netns.Roots
	// Record, when set, gets our own client's raw replies (Client.Record).
	Record func(cmd uint16, replies []byte, err error)
	// Note, when set, is told what a reader should know of the listing:
	// with "all" in the shared netns mode, that it was listed once.
	Note func(string)
}

func (w Where) roots() netns.Roots {
	if w.Roots == (netns.Roots{}) {
		return netns.DefaultRoots
	}
	return w.Roots
}

// List runs list on a client in each namespace w names, and returns what
// each found, in the order the namespaces were found. A list that answers
// a NotFoundError is left out; it is the error when no namespace found
// what was asked. Failing to dial our own socket, or to find the
// namespaces, is an error; the rest is in the sections' errors.
func List[T any](w Where, list func(*Client) ([]T, error)) ([]Section[T], error) {
	if w.NetNS == "" {
		cl, err := dial()
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		cl.Record = w.Record
		rows, err := list(cl)
		if nf := (*NotFoundError)(nil); errors.As(err, &nf) {
			return nil, nf.Err
		}
		return []Section[T]{{Rows: rows, Err: err}}, nil
	}
	nss, err := w.roots().Find(w.NetNS)
	if err != nil {
		return nil, err
	}
	if w.NetNS == "all" && netNSMode() == "shared" {
		// Every namespace sees every device and resource: one listing,
		// not the same rows once per namespace.
		if w.Note != nil {
			w.Note("the RDMA netns mode is shared: every network namespace sees the same devices; listed once")
		}
		nss = nss[:1]
	}
	var secs []Section[T]
	var missing error
	listed := 0
	eachNetNS(nss, func(ns netns.NS, cl *Client, err error) {
		if err != nil {
			secs = append(secs, Section[T]{NetNS: ns.Name, Err: err})
			return
		}
		rows, err := list(cl)
		if nf := (*NotFoundError)(nil); errors.As(err, &nf) {
			missing = nf.Err
			return
		}
		listed++
		secs = append(secs, Section[T]{NetNS: ns.Name, Rows: rows, Err: err})
	})
	if missing != nil && listed == 0 {
		return nil, fmt.Errorf("%w, in any of the %d network namespaces", missing, len(nss))
	}
	return secs, nil
}

// dial opens our own namespace's client; tests answer for the kernel.
var dial = Dial

// eachNetNS calls fn with a client made in each namespace of nss, or with
// why none could be made there; it closes each client after fn.
func eachNetNS(nss []netns.NS, fn func(netns.NS, *Client, error)) {
	for _, ns := range nss {
		cl, err := DialIn(ns)
		fn(ns, cl, err)
		if cl != nil {
			cl.Close()
		}
	}
}

// netNSMode is the kernel's RDMA netns mode, "" when it cannot be read.
func netNSMode() string {
	cl, err := Dial()
	if err != nil {
		return ""
	}
	defer cl.Close()
	sys, err := cl.System()
	if err != nil {
		return ""
	}
	return sys.NetNSMode
}

// HiddenNote says when the kernel hides devices from us, "" when it does
// not: in exclusive mode a device moved into another network namespace is
// not listed here, and nothing else would say so.
func HiddenNote(roots netns.Roots) string {
	switch hidden, unreadable := HiddenDevices(roots); {
	case hidden > 0:
		return fmt.Sprintf("the RDMA netns mode is exclusive: %d devices in other network namespaces are not listed here; --netns all lists them", hidden)
	case unreadable > 0:
		return fmt.Sprintf("the RDMA netns mode is exclusive: devices in the %d other network namespaces are not listed here, and looking needs CAP_SYS_ADMIN; --netns all lists them", unreadable)
	}
	return ""
}

// HiddenDevices counts, in the exclusive netns mode, the devices of the
// other network namespaces, which our own socket does not list (nothing
// else would say so), and the namespaces that could not be entered to
// count them (entering needs CAP_SYS_ADMIN). Both are 0 in shared mode.
func HiddenDevices(roots netns.Roots) (hidden, unreadable int) {
	if netNSMode() != "exclusive" {
		return 0, 0
	}
	if roots == (netns.Roots{}) {
		roots = netns.DefaultRoots
	}
	all, err := roots.All()
	if err != nil || len(all) < 2 {
		return 0, 0
	}
	eachNetNS(all[1:], func(_ netns.NS, cl *Client, err error) { // all[0] is ours
		if err != nil {
			unreadable++
			return
		}
		devs, _ := cl.Devices()
		hidden += len(devs)
	})
	return hidden, unreadable
}
