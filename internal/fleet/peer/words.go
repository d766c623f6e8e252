package peer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/fleet/records"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// What the words below print of a record comes from other nodes through
// the store: every name is made safe for a terminal.
func safe(s string) string { return termsafe.Sanitize(s) }

// Owner names a QP's owner: "ib_write_bw[999]", "[nvme_rdma]", with its
// container or pod when known ("ib_write_bw[999], pod 1234-5678").
func Owner(q *rdma.QPIdentity) string {
	o := q.Owner
	var s string
	switch {
	case o.KernName != "":
		s = "[" + safe(o.KernName) + "]"
	case o.PID != 0:
		s = safe(o.Comm) + "[" + strconv.FormatUint(uint64(o.PID), 10) + "]"
	default:
		s = "an owner not recorded"
	}
	if p := o.Place; p != nil {
		switch {
		case p.PodUID != "":
			s += ", pod " + safe(p.PodUID)
		case p.ContainerID != "":
			s += ", container " + safe(p.ContainerID)
		}
	}
	return s
}

// Span says a duration as a person reads it: "350 µs", "2.5 ms", "40 ms",
// "1.2 s", "12 s", "3.2 min", "5.0 h", "2.1 days".
func Span(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch s := d.Seconds(); {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(s*1000, 'f', 1, 64) + " ms"
	case d < time.Second:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
	case s < 10:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 120:
		return strconv.FormatFloat(s, 'f', 0, 64) + " s"
	case s < 7200:
		return strconv.FormatFloat(s/60, 'f', 1, 64) + " min"
	case s < 172800:
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + " h"
	}
	return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
}

// Relative says t against ref: "1.2 s before REF", "3.0 s after REF",
// "at REF".
func Relative(t, ref time.Time, refName string) string {
	d := t.Sub(ref)
	switch {
	case d == 0:
		return "at " + refName
	case d < 0:
		return Span(d) + " before " + refName
	}
	return Span(d) + " after " + refName
}

// FateWords says how q's life ended and when, against ref (named
// refName): "freed when its owner was killed by SIGKILL 1.2 s before
// TIME", or "alive (its last record 4.0 s after TIME)".
func FateWords(q *rdma.QPIdentity, ref time.Time, refName string) string {
	if q.Fate == rdma.FateAlive {
		return "alive (its last record " + Relative(q.Time, ref, refName) + ")"
	}
	return records.FateText(q) + " " + Relative(q.Ended, ref, refName)
}

// Sentence is why's words for a failed QP's peer, the failure at
// a.Query.At: "its peer QP 22 on node-b (ib_write_bw[999], pod b) was
// freed 1.2 s earlier when its owner was killed by SIGKILL". When the
// store knows nothing it says what was asked and what was missing.
func Sentence(a Answer) string {
	q := a.QP
	at := a.Query.At
	if q == nil {
		return fmt.Sprintf("its peer QP %d at %s is not in %s: %s", a.Query.QPN, rdma.GIDText(a.GID), safe(a.Store), safe(a.Missing))
	}
	who := fmt.Sprintf("its peer QP %d on %s (%s)", q.QPN, safe(q.Node), Owner(q))
	verb, cause, _ := strings.Cut(records.FateText(q), " ")
	switch {
	case q.Fate == rdma.FateAlive:
		return who + " was alive (as of its node's last record, " + Relative(q.Time, at, "the failure") + ")"
	case q.Ended.After(at):
		return who + " was alive then; it was " + verb + " " + Span(q.Ended.Sub(at)) + " later " + cause
	case q.Ended.Equal(at):
		return who + " was " + verb + " at that moment " + cause
	}
	return who + " was " + verb + " " + Span(at.Sub(q.Ended)) + " earlier " + cause
}
