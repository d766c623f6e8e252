// Package peer answers "who is on the other end": given an address or a
// GID seen on the wire and a QP number, which node, device and QP that is,
// who owns it (or owned it at a given time), and how its life went and
// ended, from the identity records the fleet's nodes sent to its log
// store (packages records, store). A QPN is reused once its QP is gone:
// each of its lifetimes is told apart by its creation time, and the
// answer says which one it gives.
package peer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Query is a question: the QP numbered QPN at Addr.
type Query struct {
	// Addr is an IP address (a RoCE v2 GID's: 10.0.0.2 is
	// ::ffff:10.0.0.2) or a GID.
	Addr netip.Addr
	QPN  uint32
	// At asks who held the QPN then; zero asks for the live one, else
	// the last one.
	At time.Time
}

// ParseAddr reads ADDR|GID as the command line gives it.
func ParseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q: expected an IP address (10.0.0.2) or a GID (::ffff:10.0.0.2, fe80::...)", s)
	}
	return a, nil
}

// ParseQPN reads a QP number: decimal, or hex with 0x (as NCCL and the
// kernel's messages write them). QPNs are 24 bits.
func ParseQPN(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil || n > 0xffffff {
		return 0, fmt.Errorf("QPN %q: expected a QP number, 0 to 16777215 (or 0x0 to 0xffffff)", s)
	}
	return uint32(n), nil
}

// GID is the GID the query names: an IPv4 address's is IPv4-mapped.
func (q Query) GID() netip.Addr {
	if q.Addr.Is4() {
		return netip.AddrFrom16(q.Addr.As16())
	}
	return q.Addr
}

// Which says which lifetime of the QPN an answer gives.
type Which uint8

const (
	WhichNone   Which = iota // none was found
	WhichAt                  // the one whose lifetime holds At
	WhichBefore              // none held it at At: the last one before
	WhichLive                // the one alive (as of its last record)
	WhichLast                // none is alive: the last one
)

var whichNames = [...]string{"none", "at", "before", "live", "last"}

func (w Which) String() string {
	if int(w) < len(whichNames) {
		return whichNames[w]
	}
	return "which-" + strconv.Itoa(int(w))
}

// Answer is what the store says.
type Answer struct {
	Query Query
	GID   netip.Addr
	// Place is the GID's node, device and port, from the node's GID
	// table record; nil when no node reported the GID and the QP was
	// found by the GID it sends from (PlacedByQP).
	Place      *rdma.GIDRecord
	PlacedByQP bool
	// Node and Dev are where the QPN was looked up.
	Node, Dev string
	// QP is the chosen lifetime's last record (nil: none found).
	QP    *rdma.QPIdentity
	Which Which
	// Lifetimes is how many lifetimes of the QPN on that device the
	// records show (up to At, with At).
	Lifetimes int
	// Missing says what was asked and what the store lacked, when QP is nil.
	Missing string
	// Store names the store asked.
	Store string
}

// MaxRecords bounds the QP records read for one question: a QPN's
// lifetimes on one device, newest first.
const MaxRecords = 512

// Find asks s.
func Find(ctx context.Context, s store.Store, q Query) (Answer, error) {
	a := Answer{Query: q, GID: q.GID(), Store: s.String()}
	gids, gerr := s.GIDs(ctx, a.GID, q.At, 16)
	if len(gids) == 0 && !q.At.IsZero() {
		// No record of the GID before At: the table may have been sent
		// after (its node's rdmatrace started later).
		var err error
		gids, err = s.GIDs(ctx, a.GID, time.Time{}, 16)
		gerr = errors.Join(gerr, err)
		if len(gids) > 0 {
			gids = gids[len(gids)-1:] // the oldest: the nearest to At
		}
	}
	if len(gids) == 0 && gerr != nil {
		return a, gerr // the store could not be asked
	}
	var qps []rdma.QPIdentity
	var qerr error
	if len(gids) > 0 {
		g := gids[0]
		a.Place, a.Node, a.Dev = &g, g.Node, g.DevName
		qps, qerr = s.QPs(ctx, store.QPQuery{Node: g.Node, Dev: g.DevName, QPN: q.QPN, CreatedBy: q.At, Limit: MaxRecords})
	} else {
		// No node reported the GID: a QP that sends from it names its node.
		a.PlacedByQP = true
		qps, qerr = s.QPs(ctx, store.QPQuery{LocalGID: a.GID, QPN: q.QPN, CreatedBy: q.At, Limit: MaxRecords})
		if len(qps) > 0 {
			a.Node, a.Dev = qps[0].Node, qps[0].Dev
			qps = onDevice(qps, a.Node, a.Dev)
		}
	}
	lives := Lifetimes(qps)
	a.Lifetimes = len(lives)
	a.QP, a.Which = choose(lives, q.At)
	if a.QP == nil {
		a.Missing = missing(a, len(gids) > 0)
	}
	return a, errors.Join(gerr, qerr)
}

func onDevice(qps []rdma.QPIdentity, node, dev string) []rdma.QPIdentity {
	out := qps[:0]
	for _, q := range qps {
		if q.Node == node && q.Dev == dev {
			out = append(out, q)
		}
	}
	return out
}

// Lifetimes groups records by lifetime (node, device, QPN, created) and
// keeps each one's last record, oldest lifetime first. A lifetime first
// seen alive by a restarted node (CreatedSeen) that follows one of the
// same owner never seen to end is that one, seen again: they are one.
func Lifetimes(qps []rdma.QPIdentity) []rdma.QPIdentity {
	type k struct {
		node, dev string
		qpn       uint32
		created   int64
	}
	last := map[k]rdma.QPIdentity{}
	for _, q := range qps {
		key := k{q.Node, q.Dev, q.QPN, q.Created.UnixNano()}
		if cur, ok := last[key]; !ok || newer(q, cur) {
			last[key] = q
		}
	}
	lives := make([]rdma.QPIdentity, 0, len(last))
	for _, q := range last {
		lives = append(lives, q)
	}
	sort.Slice(lives, func(i, j int) bool { return lives[i].Created.Before(lives[j].Created) })
	out := lives[:0]
	for _, q := range lives {
		if n := len(out); n > 0 && q.CreatedSeen && out[n-1].Fate == rdma.FateAlive && sameOwner(out[n-1].Owner, q.Owner) {
			first := out[n-1]
			q.Created, q.CreatedSeen = first.Created, first.CreatedSeen
			if len(q.Transitions) == 0 {
				q.Transitions = first.Transitions
			}
			out[n-1] = q
			continue
		}
		out = append(out, q)
	}
	return out
}

// newer says whether a is a later record of one lifetime than b: later,
// or at the same time, the one that says more (an end over the rest).
func newer(a, b rdma.QPIdentity) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	return a.Change > b.Change
}

func sameOwner(a, b rdma.Owner) bool {
	return a.PID == b.PID && a.Comm == b.Comm && a.KernName == b.KernName
}

// choose picks the lifetime the question asks for (lives oldest first).
func choose(lives []rdma.QPIdentity, at time.Time) (*rdma.QPIdentity, Which) {
	if len(lives) == 0 {
		return nil, WhichNone
	}
	if !at.IsZero() {
		for i := len(lives) - 1; i >= 0; i-- {
			q := lives[i]
			if q.Created.After(at) {
				continue
			}
			// The newest created by At: either it held the QPN then, or
			// it had ended and none held it.
			if q.Holds(at) {
				return &q, WhichAt
			}
			return &q, WhichBefore
		}
		return nil, WhichNone
	}
	for i := len(lives) - 1; i >= 0; i-- {
		if lives[i].Fate == rdma.FateAlive {
			q := lives[i]
			return &q, WhichLive
		}
	}
	q := lives[len(lives)-1]
	return &q, WhichLast
}

// missing says what was asked and what was not found.
func missing(a Answer, placed bool) string {
	q := a.Query
	gid := rdma.GIDText(a.GID)
	switch {
	case !placed && a.Node == "":
		return fmt.Sprintf("no node reported GID %s in its GID table, and no QP %d sending from it was recorded", gid, q.QPN)
	case !q.At.IsZero() && a.Lifetimes > 0:
		return fmt.Sprintf("QP %d on %s %s was created only after %s (%d lifetimes recorded, all later)", q.QPN, a.Node, a.Dev, q.At.UTC().Format(time.RFC3339Nano), a.Lifetimes)
	case !q.At.IsZero():
		return fmt.Sprintf("%s is %s's %s, but no QP %d created by %s was recorded there", gid, a.Node, a.Dev, q.QPN, q.At.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s is %s's %s, but no QP %d was recorded there", gid, a.Node, a.Dev, q.QPN)
}

// ParseTime reads --at: RFC 3339 (2026-12-01T05:00:04.5Z), a date and
// time in the local zone (2026-12-01 05:00:04.5), a time of today
// (05:00:04.5), Unix seconds (@1796101204.5), or a time before now
// (-90s, -5m).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		if f, err := strconv.ParseFloat(rest, 64); err == nil && f > 0 {
			sec := int64(f)
			return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
		}
	}
	if strings.HasPrefix(s, "-") {
		if d, err := time.ParseDuration(s[1:]); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("15:04:05.999999999", s, time.Local); err == nil {
		y, m, d := now.In(time.Local).Date()
		return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local), nil
	}
	return time.Time{}, fmt.Errorf("--at %q: expected a time: 2026-12-01T05:00:04.5Z, 2026-12-01 05:00:04.5 (local), 05:00:04.5 (today), @UNIXSECONDS or -DURATION (before now)", s)
}
