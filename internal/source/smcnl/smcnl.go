// Package smcnl reads SMC's generic netlink family, SMC_GEN_NETLINK: the
// SMC-R link groups with their links, and the RDMA devices SMC uses. It is
// what smc-tools' smcr shows (smc-tools is not in Debian). The family
// exists from Linux 5.11 on, while the smc module is loaded.
package smcnl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
)

// ErrNoSMC is the error when the kernel has no SMC_GEN_NETLINK family: the
// smc module is not loaded, or the kernel is older than 5.11.
var ErrNoSMC = errors.New("no SMC generic netlink (SMC_GEN_NETLINK): smc not loaded (modprobe smc), or a kernel before 5.11")

const (
	familyName = "SMC_GEN_NETLINK"
	genlHdrLen = 4 // struct genlmsghdr: cmd, version, reserved

	// The generic netlink controller (linux/genetlink.h).
	genlIDCtrl        = 0x10
	ctrlCmdGetFamily  = 3
	ctrlAttrFamilyID  = 1
	ctrlAttrFamilyNme = 2

	// SMC_GENL_FAMILY commands (linux/smc.h).
	cmdGetLinkSMCR = 3
	cmdGetDevSMCR  = 6
)

// Client is a generic netlink socket that knows SMC's family number.
type Client struct {
	c      *netlink.Conn
	family uint16
}

// Dial opens generic netlink and looks SMC's family up.
func Dial() (*Client, error) {
	c, err := netlink.Dial(syscall.NETLINK_GENERIC, nil)
	if err != nil {
		return nil, fmt.Errorf("open generic netlink: %w", err)
	}
	id, err := Family(c, familyName)
	if errors.Is(err, syscall.ENOENT) {
		err = ErrNoSMC
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Client{c: c, family: id}, nil
}

// Family asks the generic netlink controller for the number of the family
// called name (SMC_GEN_NETLINK, SMC_PNETID); ENOENT when there is none.
func Family(c *netlink.Conn, name string) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(ctrlAttrFamilyNme, name)
	attrs, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: genlIDCtrl, Flags: netlink.Request},
		Data:   append([]byte{ctrlCmdGetFamily, 1, 0, 0}, attrs...),
	})
	if err != nil {
		return 0, fmt.Errorf("look up %s: %w", name, err)
	}
	for _, m := range msgs {
		if len(m.Data) < genlHdrLen {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[genlHdrLen:])
		if err != nil {
			continue
		}
		for ad.Next() {
			if ad.Type() == ctrlAttrFamilyID {
				return ad.Uint16(), nil
			}
		}
	}
	return 0, fmt.Errorf("look up %s: the answer has no family id", name)
}

// Close closes the socket.
func (c *Client) Close() error { return c.c.Close() }

// dump runs one dump command and returns each message's attributes.
func (c *Client) dump(cmd uint8, what string) ([][]byte, error) {
	msgs, err := c.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(c.family), Flags: netlink.Request | netlink.Dump},
		Data:   []byte{cmd, 1, 0, 0},
	})
	if err != nil {
		return nil, fmt.Errorf("dump %s: %w", what, err)
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Data)
	}
	return out, nil
}

// LinkGroups dumps the SMC-R link groups with their links.
func (c *Client) LinkGroups() ([]LinkGroup, error) {
	msgs, err := c.dump(cmdGetLinkSMCR, "SMC-R link groups")
	if err != nil {
		return nil, err
	}
	return DecodeLinkGroups(msgs)
}

// Devices dumps the RDMA devices SMC-R knows, with their ports.
func (c *Client) Devices() ([]Device, error) {
	msgs, err := c.dump(cmdGetDevSMCR, "SMC-R devices")
	if err != nil {
		return nil, err
	}
	return DecodeDevices(msgs)
}

var ne = binary.NativeEndian
