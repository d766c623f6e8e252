package formats

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
	"github.com/rdmatrace/rdmatrace/internal/fleet/records"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PeerObject lays out `rdmatrace peer -j`: what was asked (gid, lqpn,
// at), where the GID is (node, ifname, port, netdev), which lifetime of
// the QPN the answer gives and how many there were, then the QP (type,
// state, created, owner as pid/comm and place, its peer as remote_gid and
// rqpn, its transitions, its fate and when it ended), or "missing". The
// QP's keys are `rdma -j res show qp`'s where it has them.
func PeerObject(a peer.Answer) Object {
	o := Object{}.str("gid", rdma.GIDText(a.GID)).num("lqpn", uint64(a.Query.QPN))
	if !a.Query.At.IsZero() {
		o = append(o, timeField("at", a.Query.At))
	}
	o = o.strIf(a.Node != "", "node", a.Node).strIf(a.Dev != "", "ifname", a.Dev)
	if p := a.Place; p != nil {
		o = o.num("port", uint64(p.Port)).strIf(p.Netdev != "", "netdev", p.Netdev).str("gid_type", p.Type.Name(p.Eth))
		o = append(o, timeField("gid_reported", p.Time))
	}
	o = o.str("which", a.Which.String()).num("lifetimes", uint64(a.Lifetimes))
	q := a.QP
	if q == nil {
		return o.str("missing", a.Missing).str("store", a.Store)
	}
	if a.Place == nil && q.Port != 0 {
		o = o.num("port", uint64(q.Port))
	}
	o = o.str("type", q.Type.String()).str("state", q.State.String())
	o = append(o, timeField("created", q.Created))
	if q.CreatedSeen {
		o = o.boolean("created_seen", true)
	}
	switch {
	case q.Owner.KernName != "":
		o = o.str("comm", q.Owner.KernName)
	case q.Owner.PID != 0:
		o = o.num("pid", uint64(q.Owner.PID)).str("comm", q.Owner.Comm)
	}
	o = o.place(q.Owner.Place)
	if q.LocalGID.IsValid() {
		o = o.str("local_gid", rdma.GIDText(q.LocalGID))
	}
	if q.RemoteGID.IsValid() {
		o = o.str("remote_gid", rdma.GIDText(q.RemoteGID))
	}
	o = o.numIf(q.HasRemoteQPN, "rqpn", uint64(q.RemoteQPN))
	if len(q.Transitions) > 0 {
		ts := make([]string, len(q.Transitions))
		for i, t := range q.Transitions {
			ts[i] = t.State.String() + " " + t.At.UTC().Format(time.RFC3339Nano)
		}
		o = o.list("transitions", ts)
	}
	o = o.str("fate", q.Fate.String())
	if q.Fate != rdma.FateAlive {
		o = append(o, timeField("ended", q.Ended))
		if q.HasExit {
			o = o.num("exit_code", uint64(q.ExitCode))
		}
		if q.Fate == rdma.FateSignal {
			o = o.str("signal", rdma.SignalName(q.Signal))
		}
	}
	o = append(o, timeField("last_record", q.Time))
	return o.str("fate_text", records.FateText(q))
}

// PeerText is the human view of `rdmatrace peer`, its times in the local
// zone; now places the answer's times when no --at was given.
//
//	QP 17 (0x11) on node-b rxe0 port 1: rping[1000]
//	  which    the live one (2 lifetimes of QPN 17 recorded on node-b rxe0)
//	  ...
func PeerText(a peer.Answer, now time.Time) string {
	var b strings.Builder
	qpn := "QP " + strconv.FormatUint(uint64(a.Query.QPN), 10) + " (0x" + strconv.FormatUint(uint64(a.Query.QPN), 16) + ")"
	ref, refName := now, "now"
	if !a.Query.At.IsZero() {
		ref, refName = a.Query.At, "--at"
	}
	q := a.QP
	if q == nil {
		b.WriteString(qpn + " at " + rdma.GIDText(a.GID) + ": not found\n")
		line(&b, "asked", Sanitize(a.Store))
		line(&b, "missing", Sanitize(a.Missing))
		if a.Query.At.IsZero() {
			return b.String()
		}
		line(&b, "at", stamp(a.Query.At))
		return b.String()
	}
	b.WriteString(qpn + " on " + Sanitize(q.Node) + " " + Sanitize(q.Dev))
	if q.Port != 0 {
		b.WriteString(" port " + strconv.FormatUint(uint64(q.Port), 10))
	}
	b.WriteString(": " + peer.Owner(q) + "\n")
	lives := "lifetime"
	if a.Lifetimes != 1 {
		lives += "s"
	}
	count := " (" + strconv.Itoa(a.Lifetimes) + " " + lives + " of QPN " + strconv.FormatUint(uint64(a.Query.QPN), 10) + " recorded on " + Sanitize(a.Node) + " " + Sanitize(a.Dev)
	if !a.Query.At.IsZero() {
		count += " by --at"
	}
	count += ")"
	switch a.Which {
	case peer.WhichAt:
		line(&b, "which", "the one that held it at --at "+stamp(a.Query.At)+count)
	case peer.WhichBefore:
		line(&b, "which", "none held it at --at "+stamp(a.Query.At)+": the last one before"+count)
	case peer.WhichLive:
		line(&b, "which", "the live one"+count)
	case peer.WhichLast:
		line(&b, "which", "none is alive: the last one"+count)
	}
	if p := a.Place; p != nil {
		s := rdma.GIDText(a.GID) + " is " + Sanitize(p.Node) + "'s " + Sanitize(p.DevName) + " port " + strconv.FormatUint(uint64(p.Port), 10)
		if p.Netdev != "" {
			s += " (" + Sanitize(p.Netdev) + ")"
		}
		line(&b, "gid", s+", as its GID table said "+stamp(p.Time))
	} else if a.PlacedByQP {
		line(&b, "gid", rdma.GIDText(a.GID)+": no node reported it in its GID table; this QP sends from it")
	}
	if q.Owner.Place != nil && q.Owner.Place.Cgroup != "" {
		line(&b, "cgroup", Sanitize(q.Owner.Place.Cgroup))
	}
	created := stamp(q.Created)
	if q.CreatedSeen {
		created = "at or before " + created + " (first seen alive then)"
	}
	line(&b, "created", created)
	state := q.Type.String() + ", " + q.State.String()
	if len(q.Transitions) > 0 {
		parts := make([]string, len(q.Transitions))
		for i, t := range q.Transitions {
			parts[i] = t.State.String() + " +" + peer.Span(t.At.Sub(q.Created))
		}
		state += " (" + strings.Join(parts, ", ") + ")"
	}
	line(&b, "state", state)
	if q.RemoteGID.IsValid() || q.HasRemoteQPN {
		s := ""
		if q.HasRemoteQPN {
			s = "QP " + strconv.FormatUint(uint64(q.RemoteQPN), 10)
		} else {
			s = "a QP not recorded"
		}
		if q.RemoteGID.IsValid() {
			s += " at " + rdma.GIDText(q.RemoteGID)
		}
		line(&b, "peer", s)
	}
	fate := peer.FateWords(q, ref, refName)
	if q.Fate != rdma.FateAlive {
		fate += " (" + stamp(q.Ended) + ")"
	}
	line(&b, "fate", fate)
	return b.String()
}

func line(b *strings.Builder, key, value string) {
	b.WriteString("  ")
	b.WriteString(key)
	for n := len(key); n < 9; n++ {
		b.WriteByte(' ')
	}
	b.WriteString(value)
	b.WriteByte('\n')
}

// stamp is a time as the human views write a date: local, to the
// microsecond.
func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000000 MST") }

// WritePeer writes an answer of `rdmatrace peer` in format: FormatText
// (the human view, times against now without --at) or FormatJSON (one
// object).
func WritePeer(w io.Writer, a peer.Answer, format Format, now time.Time) error {
	var b []byte
	if format == FormatText {
		b = []byte(PeerText(a, now))
	} else {
		b = append(AppendJSON(nil, PeerObject(a)), '\n')
	}
	_, err := w.Write(b)
	return err
}
