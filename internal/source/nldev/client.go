package nldev

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ErrNoRDMA means the kernel has no RDMA netlink socket: ib_core is not
// loaded or not built.
var ErrNoRDMA = errors.New("the kernel has no RDMA netlink support (NETLINK_RDMA): load ib_core (modprobe ib_core) or use a kernel built with CONFIG_INFINIBAND")

// Client talks NLDEV over one NETLINK_RDMA socket.
type Client struct {
	conn *netlink.Conn
	// netAdmin says whether the kernel will show us MR and PD keys.
	netAdmin bool
	// ctx, when set (Bind), interrupts the dumps.
	ctx context.Context
	// Record, when set, receives every request's raw replies in the
	// recording format of MarshalMessages (for test fixtures captured from
	// real kernels), or the error that kept them from it.
	Record func(cmd uint16, replies []byte, err error)
}

// Dial opens the RDMA netlink socket.
func Dial() (*Client, error) {
	conn, err := netlink.Dial(familyRDMA, nil)
	if err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			return nil, ErrNoRDMA
		}
		return nil, fmt.Errorf("open RDMA netlink socket: %w", err)
	}
	return &Client{conn: conn, netAdmin: hasNetAdmin()}, nil
}

// NewClient wraps an existing connection, e.g. nltest's fake kernel.
func NewClient(conn *netlink.Conn, netAdmin bool) *Client {
	return &Client{conn: conn, netAdmin: netAdmin}
}

// Close closes the socket.
func (c *Client) Close() error { return c.conn.Close() }

// message is one NLDEV command's request.
func message(cmd uint16, flags netlink.HeaderFlags, attrs func(*netlink.AttributeEncoder)) (netlink.Message, error) {
	var data []byte
	if attrs != nil {
		ae := netlink.NewAttributeEncoder()
		attrs(ae)
		var err error
		if data, err = ae.Encode(); err != nil {
			return netlink.Message{}, err
		}
	}
	return netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(clientNLDEV<<10 | cmd),
			Flags: netlink.Request | flags,
		},
		Data: data,
	}, nil
}

// request sends one NLDEV command and returns the reply payloads.
func (c *Client) request(cmd uint16, flags netlink.HeaderFlags, attrs func(*netlink.AttributeEncoder)) ([]netlink.Message, error) {
	req, err := message(cmd, flags, attrs)
	if err != nil {
		return nil, err
	}
	msgs, err := c.conn.Execute(req)
	if err != nil {
		return nil, err
	}
	if c.Record != nil {
		b, err := MarshalMessages(msgs)
		c.Record(cmd, b, err)
	}
	return msgs, nil
}

// Bind makes ctx's end interrupt the client's requests: a dump under way
// stops at its next message (its error then matches ctx.Err()). Call
// stop when done with ctx.
func (c *Client) Bind(ctx context.Context) (stop func() bool) {
	c.ctx = ctx
	return context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
}

// dump sends one NLDEV dump request and gives each reply to fn as it is
// read, one netlink message at a time: the replies are never all held
// (a dump of a million objects costs one message's worth). It stops when
// the context of Bind ends.
func (c *Client) dump(cmd uint16, attrs func(*netlink.AttributeEncoder), fn func(netlink.Message) error) error {
	req, err := message(cmd, netlink.Dump, attrs)
	if err != nil {
		return err
	}
	sent, err := c.conn.Send(req)
	if err != nil {
		return c.ended(err)
	}
	for m, err := range c.conn.ReceiveIter() {
		if err != nil {
			return c.ended(err)
		}
		if m.Header.Sequence != sent.Header.Sequence {
			continue // a late answer to an earlier, interrupted request
		}
		if err := fn(m); err != nil {
			return err
		}
		if c.ctx != nil && c.ctx.Err() != nil {
			// Stopping the iteration would read the rest of the dump: a
			// deadline ends that read at once.
			_ = c.conn.SetReadDeadline(time.Now())
			return c.ctx.Err()
		}
	}
	return nil
}

// ended is err, or the context's error when the context ended it.
func (c *Client) ended(err error) error {
	if c.ctx != nil && c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	return err
}

// Devices lists every RDMA device.
func (c *Client) Devices() ([]rdma.Device, error) {
	msgs, err := c.request(cmdGet, netlink.Dump, nil)
	if err != nil {
		return nil, fmt.Errorf("list RDMA devices: %w", err)
	}
	devs := make([]rdma.Device, 0, len(msgs))
	var errs []error
	for _, m := range msgs {
		d, err := DecodeDevice(m.Data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		devs = append(devs, d)
	}
	return devs, errors.Join(errs...)
}

// Ports lists the ports of every device.
func (c *Client) Ports(devs []rdma.Device) ([]rdma.Port, error) {
	var ports []rdma.Port
	var errs []error
	for _, d := range devs {
		msgs, err := c.request(cmdPortGet, netlink.Dump, func(ae *netlink.AttributeEncoder) {
			ae.Uint32(attrDevIndex, d.Index)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("list ports of %q: %w", d.Name, err))
			continue
		}
		for _, m := range msgs {
			p, err := DecodePort(m.Data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ports = append(ports, p)
		}
	}
	return ports, errors.Join(errs...)
}

// Summaries counts every device's resources by type.
func (c *Client) Summaries() ([]rdma.Summary, error) {
	msgs, err := c.request(cmdResGet, netlink.Dump, nil)
	if err != nil {
		return nil, fmt.Errorf("resource summary: %w", err)
	}
	out := make([]rdma.Summary, 0, len(msgs))
	var errs []error
	for _, m := range msgs {
		s, err := DecodeSummary(m.Data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// Resources dumps every resource of type t on the given devices, in the order
// iproute2 prints them: per device, entries without a port first, then by
// port, each in the kernel's id order. One dump per device is enough: the
// kernel's unfiltered dump includes every port (iproute2 asks once per port
// and so queries each QP twice).
func (c *Client) Resources(t rdma.ResType, devs []rdma.Device) ([]rdma.Resource, error) {
	tab, ok := resTables[t]
	if !ok {
		return nil, fmt.Errorf("no netlink dump for resource type %s", t)
	}
	var out []rdma.Resource
	var errs []error
	for _, d := range devs {
		msgs, err := c.request(tab.cmd, netlink.Dump, func(ae *netlink.AttributeEncoder) {
			ae.Uint32(attrDevIndex, d.Index)
		})
		if err != nil {
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENODEV) {
				// The device went away between the listing and the dump,
				// or, if it is still listed, the kernel has no such dump:
				// its answer to an unknown command is EINVAL too (Linux
				// 5.10 has no RES_CTX_GET or RES_SRQ_GET).
				if c.listed(d.Index) {
					errs = append(errs, noDumpError{t, d.Name, err})
				}
				continue
			}
			errs = append(errs, fmt.Errorf("dump %s of %q: %w", t, d.Name, err))
			continue
		}
		rs, err := DecodeDump(t, msgs, !c.netAdmin)
		out = append(out, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// EachResource gives fn every resource of type t on devs as the kernel's
// dumps give them, one netlink message's worth at a time: in the kernel's
// order (not iproute2's: nothing is held to sort), owners as the kernel
// gives them. Its errors are Resources'.
func (c *Client) EachResource(t rdma.ResType, devs []rdma.Device, fn func(*rdma.Resource)) error {
	tab, ok := resTables[t]
	if !ok {
		return fmt.Errorf("no netlink dump for resource type %s", t)
	}
	var errs []error
	for _, d := range devs {
		var decodeErrs []error
		err := c.dump(tab.cmd, func(ae *netlink.AttributeEncoder) { ae.Uint32(attrDevIndex, d.Index) }, func(m netlink.Message) error {
			rs, err := DecodeResources(t, m.Data, !c.netAdmin)
			if err != nil && len(decodeErrs) < maxDecodeErrs {
				decodeErrs = append(decodeErrs, err)
			}
			for i := range rs {
				fn(&rs[i])
			}
			return nil
		})
		if c.ctx != nil && c.ctx.Err() != nil {
			return errors.Join(append(errs, c.ctx.Err())...)
		}
		errs = append(errs, decodeErrs...)
		if err != nil {
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENODEV) {
				if c.listed(d.Index) {
					errs = append(errs, noDumpError{t, d.Name, err})
				}
				continue
			}
			errs = append(errs, fmt.Errorf("dump %s of %q: %w", t, d.Name, err))
		}
	}
	return errors.Join(errs...)
}

// maxDecodeErrs bounds the errors one device's dump keeps: a kernel that
// sends a million bad entries is said in a few.
const maxDecodeErrs = 8

// noDumpError is a resource type the kernel cannot dump; it matches
// errors.ErrUnsupported.
type noDumpError struct {
	t   rdma.ResType
	dev string
	err error
}

func (e noDumpError) Error() string {
	return fmt.Sprintf("the kernel cannot dump %s resources (%s: %v)", e.t, e.dev, e.err)
}

func (e noDumpError) Unwrap() []error { return []error{errors.ErrUnsupported, e.err} }

// listed tells whether the kernel lists a device with this index now.
func (c *Client) listed(index uint32) bool {
	devs, err := c.Devices()
	if err != nil {
		return false
	}
	for _, d := range devs {
		if d.Index == index {
			return true
		}
	}
	return false
}

// DecodeDump decodes the replies of one device's RES_*_GET dump and puts
// them in iproute2's order.
func DecodeDump(t rdma.ResType, msgs []netlink.Message, withheld bool) ([]rdma.Resource, error) {
	var out []rdma.Resource
	var errs []error
	for _, m := range msgs {
		rs, err := DecodeResources(t, m.Data, withheld)
		out = append(out, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	SortByPort(out)
	return out, errors.Join(errs...)
}

// SortByPort orders one device's entries as iproute2 shows them: no port
// first, then ascending port, keeping the kernel's order within a port.
func SortByPort(rs []rdma.Resource) {
	byPort := func(a, b rdma.Resource) int { return cmp.Compare(portKey(&a), portKey(&b)) }
	// Most dumps are sorted already (one port, or the kernel's order):
	// checking is cheaper than the stable sort's moves of large entries.
	if slices.IsSortedFunc(rs, byPort) {
		return
	}
	slices.SortStableFunc(rs, byPort)
}

func portKey(r *rdma.Resource) uint64 {
	if r.Has&rdma.HasPort == 0 {
		return 0
	}
	return 1 + uint64(r.Port)
}

// hasNetAdmin reads our effective capabilities; the kernel checks
// CAP_NET_ADMIN (bit 12) before it sends MR and PD keys.
func hasNetAdmin() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<12) != 0
		}
	}
	return false
}
