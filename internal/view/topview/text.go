// Package topview draws `rdmatrace top`'s frames (internal/analysis/top):
// on a full screen that refreshes in place (Screen, over tcell), or as
// plain tables written one after the other (Batch), as `top -b` does
// when the output is no terminal. Both lay a frame out the same way
// (Layout): a header of the node's totals, the devices, the owners.
package topview

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// liveTypes are the live-object columns, in `rdma res`'s order.
var liveTypes = []rdma.ResType{rdma.ResQP, rdma.ResCQ, rdma.ResMR, rdma.ResPD, rdma.ResCMID, rdma.ResCTX, rdma.ResSRQ}

// qpStates are the QP states in their order of life.
var qpStates = []rdma.QPState{rdma.QPStateReset, rdma.QPStateInit, rdma.QPStateRTR, rdma.QPStateRTS,
	rdma.QPStateSQD, rdma.QPStateSQE, rdma.QPStateErr}

// A Layout is a frame as lines: the header, then two tables (devices,
// owners), each a heading line and its rows.
type Layout struct {
	Header       []string
	DeviceHead   string
	Devices      []string
	OwnerHead    string
	Owners       []string
	OwnersTitle  string
	DevicesTitle string
}

// Lay lays a frame out, its owners sorted by key.
func Lay(f *top.Frame, key top.SortKey) Layout {
	var l Layout
	l.Header = header(f, key)
	l.DevicesTitle = "DEVICES"
	l.DeviceHead, l.Devices = table(f.Devices, "DEVICE", func(r *top.Row) string { return r.Name }, f)
	rows := append([]top.Row(nil), f.Owners...)
	top.Sort(rows, key, f.By)
	l.OwnersTitle = "OWNERS by " + f.By.String() + ", sorted by " + key.String()
	l.OwnerHead, l.Owners = table(rows, "OWNER", func(r *top.Row) string { return label(r, f.By) }, f)
	return l
}

// label is a row's owner as shown: a container's id cut as runtimes
// print it.
func label(r *top.Row, by top.By) string {
	if by == top.ByContainer && !r.Other && !r.Kernel && r.Name != "" {
		id := r.Name
		if len(id) == 64 {
			id = id[:12]
		}
		if r.Place != "" {
			return r.Place + ":" + id
		}
		return id
	}
	return r.Label(by)
}

// header is the node's lines: time, source, totals, rates, drops, ports.
func header(f *top.Frame, key top.SortKey) []string {
	n := &f.Node
	h := []string{
		fmt.Sprintf("rdmatrace top - %s, every %s, by %s; source: %s", f.Time.Format("15:04:05"), seconds(f.Interval), f.By, formats.Sanitize(f.Source.String())),
		"objects: " + liveText(&n.Counts) + "; QPs: " + orDash(statesText(&n.Counts)),
		fmt.Sprintf("per second: %s creates, %s destroys, %s connects, %s failures; drops: %s; owners: %s",
			rate(n.CreateRate), rate(n.DestroyRate), connects(n.ConnectRate, f), rate(n.FailRate), drops(f), owners(f)),
		"ports: " + ports(f),
	}
	if n.LastFailure != "" {
		h = append(h, "last failure: "+n.LastFailureAt.Format("15:04:05")+" "+formats.Sanitize(n.LastFailure))
	}
	if f.Untracked > 0 {
		h = append(h, fmt.Sprintf("untracked: %d objects created past the objects followed (in the rates, not the live counts)", f.Untracked))
	}
	return h
}

func liveText(c *top.Counts) string {
	var b strings.Builder
	for i, t := range liveTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", strings.ToUpper(t.String()), c.LiveOf(t))
	}
	return b.String()
}

// statesText is the QPs by state: "RTS=2 INIT=1", as trace labels them.
func statesText(c *top.Counts) string {
	var parts []string
	for _, s := range qpStates {
		if n := c.InState(s); n != 0 {
			parts = append(parts, s.String()+"="+strconv.FormatInt(n, 10))
		}
	}
	if n := c.StateUnknown(); n != 0 {
		parts = append(parts, "?="+strconv.FormatInt(n, 10))
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rate is a per-second figure: whole, or with one decimal below 10.
func rate(v float64) string {
	if v >= 10 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// connects is "-" where the source sees no rdma_cm events.
func connects(v float64, f *top.Frame) string {
	if !f.Source.BPF {
		return "-"
	}
	return rate(v)
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(10*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}

func drops(f *top.Frame) string {
	if !f.DropsKnown {
		return "-"
	}
	return strconv.FormatUint(f.Drops, 10)
}

func owners(f *top.Frame) string {
	s := strconv.Itoa(len(f.Owners))
	if f.OwnersFolded > 0 {
		s += fmt.Sprintf(" (%d past the first %d counted in other)", f.OwnersFolded, f.MaxOwners)
	}
	return s
}

// ports are each port's state and net device.
func ports(f *top.Frame) string {
	if f.PortsErr != "" {
		return "not listed: " + formats.Sanitize(f.PortsErr)
	}
	if len(f.Ports) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(f.Ports))
	for _, p := range f.Ports {
		s := fmt.Sprintf("%s/%d %s", p.DevName, p.Port, p.State)
		if p.Netdev != "" {
			s += " (" + p.Netdev + ")"
		}
		parts = append(parts, formats.Sanitize(s))
	}
	return strings.Join(parts, ", ")
}

// table lays rows out under their heading: what each holds, its QPs'
// states, its rates and its last failure.
func table(rows []top.Row, first string, name func(*top.Row) string, f *top.Frame) (string, []string) {
	head := []string{first}
	for _, t := range liveTypes {
		head = append(head, strings.ToUpper(t.String()))
	}
	head = append(head, "QP STATES", "CREATE/s", "DESTROY/s", "CONNECT/s", "FAIL/s", "LAST FAILURE")
	t := formats.NewTable(head...)
	for i := range rows {
		r := &rows[i]
		cells := []string{name(r)}
		for _, ty := range liveTypes {
			cells = append(cells, strconv.FormatInt(r.LiveOf(ty), 10))
		}
		last := ""
		if r.LastFailure != "" {
			last = r.LastFailureAt.Format("15:04:05") + " " + r.LastFailure
		}
		cells = append(cells, statesText(&r.Counts), rate(r.CreateRate), rate(r.DestroyRate),
			connects(r.ConnectRate, f), rate(r.FailRate), last)
		t.Append(cells...)
	}
	var b bytes.Buffer
	_ = t.Render(&b)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return lines[0], lines[1:]
}
