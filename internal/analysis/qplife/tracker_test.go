package qplife

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// ev makes a QP event on rxe0 of ib_write_bw[999].
func ev(kind rdma.EventKind, ms int, qpn uint32) *rdma.Event {
	e := &rdma.Event{Kind: kind, Time: at(ms), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: qpn, QPType: rdma.QPTypeRC,
			Has: rdma.HasLQPN | rdma.HasQPType | rdma.HasPort, Owner: rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw"}}}
	return e
}

func modify(ms int, qpn uint32, s rdma.QPState) *rdma.Event {
	e := ev(rdma.EvModify, ms, qpn)
	e.SetState(uint8(s))
	return e
}

func qpAttr(ms int, qpn uint32, sgid, dgid string) *rdma.Event {
	e := ev(rdma.EvQPAttr, ms, qpn)
	e.QPAttr = rdma.QPAttr{Mask: rdma.QPMaskAV, HasGID: true, SGID: netip.MustParseAddr(sgid), HasGRH: true, DGID: netip.MustParseAddr(dgid)}
	return e
}

// line says a record in one line, for comparison.
func line(q *rdma.QPIdentity) string {
	s := fmt.Sprintf("%s qp %d %s/%d %s", q.Change, q.QPN, q.Dev, q.Port, q.State)
	if q.Owner.KernName != "" {
		s += " [" + q.Owner.KernName + "]"
	} else {
		s += fmt.Sprintf(" %s[%d]", q.Owner.Comm, q.Owner.PID)
	}
	s += " created +" + q.Created.Sub(t0).String()
	if q.CreatedSeen {
		s += " (seen)"
	}
	if q.LocalGID.IsValid() {
		s += " local " + rdma.GIDText(q.LocalGID)
	}
	if q.RemoteGID.IsValid() {
		s += " remote " + rdma.GIDText(q.RemoteGID)
	}
	if q.HasRemoteQPN {
		s += fmt.Sprintf(" rqpn %d", q.RemoteQPN)
	}
	if q.Fate != rdma.FateAlive {
		s += fmt.Sprintf(" fate %s +%s", q.Fate, q.Ended.Sub(t0))
		if q.HasExit {
			s += fmt.Sprintf(" status %d", q.ExitCode)
		}
		if q.Signal != 0 {
			s += " " + rdma.SignalName(q.Signal)
		}
	}
	s += " at +" + q.Time.Sub(t0).String()
	return s
}

type recorder struct{ lines []string }

func (r *recorder) out(q *rdma.QPIdentity) { r.lines = append(r.lines, line(q)) }

func check(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func newTracker(r *recorder) *Tracker {
	return New(Options{Node: "node-b", Out: r.out, ExitWait: time.Second, RemoteWait: 2 * time.Second})
}

// A connected QP's life, destroyed by its owner: created, connected once
// netlink gave its remote QPN (the qp-attr event gave both GIDs), ended.
func TestAConnectedQPDestroyedByItsOwner(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(modify(1, 17, rdma.QPStateInit))
	tr.Event(qpAttr(2, 17, "::ffff:10.98.1.2", "::ffff:10.98.1.1"))
	tr.Event(modify(2, 17, rdma.QPStateRTR))
	if need := tr.NeedRemote(); len(need["rxe0"]) != 1 || need["rxe0"][0] != 17 {
		t.Errorf("NeedRemote %v, want rxe0's QP 17", need)
	}
	tr.RemoteQPN("rxe0", 17, 18, at(500))
	tr.Event(modify(3, 17, rdma.QPStateRTS))
	tr.Event(ev(rdma.EvDestroy, 5000, 17))
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"connected qp 17 rxe0/1 RTR ib_write_bw[999] created +0s local ::ffff:10.98.1.2 remote ::ffff:10.98.1.1 rqpn 18 at +500ms",
		"ended qp 17 rxe0/1 RTS ib_write_bw[999] created +0s local ::ffff:10.98.1.2 remote ::ffff:10.98.1.1 rqpn 18 fate destroyed +5s at +5s")
	if st := tr.Stats(); st.Tracked != 0 || st.Records != 3 {
		t.Errorf("stats %+v", st)
	}
}

// Killed by SIGKILL: the destroy comes at the owner's exit, its status
// from the process events after it, or before it (two paths, either
// order).
func TestAnOwnerKilledBySIGKILL(t *testing.T) {
	for _, order := range []string{"status after the destroy", "status before the destroy"} {
		t.Run(order, func(t *testing.T) {
			r := &recorder{}
			tr := newTracker(r)
			tr.Event(ev(rdma.EvCreate, 0, 17))
			kill := rdma.ExitStatus{PID: 999, Time: at(4000), Code: 9}
			d := ev(rdma.EvDestroy, 4000, 17)
			d.Flags |= rdma.EvActorExiting | rdma.EvFileClose
			if order == "status before the destroy" {
				tr.Exit(kill)
				tr.Event(d)
			} else {
				tr.Event(d)
				tr.Tick(at(4500))
				tr.Exit(kill)
			}
			check(t, r.lines,
				"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
				"ended qp 17 rxe0/1 RESET ib_write_bw[999] created +0s fate signal +4s SIGKILL at +4s")
		})
	}
}

// An owner that exited with a status; one whose status never came (no
// process events) is reported without it after ExitWait, and counted.
func TestAnOwnersExitStatus(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(ev(rdma.EvCreate, 0, 20))
	d := ev(rdma.EvDestroy, 1000, 17)
	d.Flags |= rdma.EvActorExiting
	tr.Event(d)
	tr.Exit(rdma.ExitStatus{PID: 999, Time: at(1001), Code: 3 << 8})
	other := ev(rdma.EvDestroy, 1000, 20)
	other.Flags |= rdma.EvActorExiting
	other.Owner.PID = 1234
	tr.Event(other)
	tr.Tick(at(1500)) // within ExitWait: it waits
	if len(r.lines) != 3 {
		t.Fatalf("records before ExitWait: %q", r.lines)
	}
	tr.Tick(at(2001))
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"created qp 20 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"ended qp 17 rxe0/1 RESET ib_write_bw[999] created +0s fate owner-exit +1s status 3 at +1s",
		"ended qp 20 rxe0/1 RESET ib_write_bw[1234] created +0s fate owner-exit +1s at +1s")
	if st := tr.Stats(); st.NoStatus != 1 {
		t.Errorf("stats %+v, want one QP without its owner's status", st)
	}
}

// A QPN reused: two lifetimes, told apart by their creation times.
func TestAReusedQPNIsTwoLifetimes(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(ev(rdma.EvDestroy, 100, 17))
	second := ev(rdma.EvCreate, 200, 17)
	second.Owner = rdma.Owner{PID: 1000, TID: 1000, Comm: "rping"}
	tr.Event(second)
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"ended qp 17 rxe0/1 RESET ib_write_bw[999] created +0s fate destroyed +100ms at +100ms",
		"created qp 17 rxe0/1 RESET rping[1000] created +200ms at +200ms")
}

// At a device's removal: a QP destroyed meanwhile (not by an exit) was
// freed by the kernel; one still followed when the removal ends went
// with it; a kernel module's QP names the module.
func TestQPsAtADevicesRemoval(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	k := ev(rdma.EvCreate, 0, 1)
	k.Flags &^= rdma.EvHasOwner | rdma.EvUser
	k.Owner = rdma.Owner{KernName: "nvme_rdma"}
	tr.Event(k)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(&rdma.Event{Kind: rdma.EvDevUnregister, Time: at(100), Flags: rdma.EvHasDev, Resource: rdma.Resource{DevName: "rxe0"}})
	kd := ev(rdma.EvDestroy, 150, 1)
	kd.Flags &^= rdma.EvHasOwner | rdma.EvUser
	kd.Owner = rdma.Owner{KernName: "nvme_rdma"}
	tr.Event(kd)
	tr.Event(&rdma.Event{Kind: rdma.EvDevUnregistered, Time: at(200), Flags: rdma.EvHasDev, Resource: rdma.Resource{DevName: "rxe0"}})
	check(t, r.lines,
		"created qp 1 rxe0/1 RESET [nvme_rdma] created +0s at +0s",
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"ended qp 1 rxe0/1 RESET [nvme_rdma] created +0s fate device-removed +150ms at +150ms",
		"ended qp 17 rxe0/1 RESET ib_write_bw[999] created +0s fate device-removed +200ms at +200ms")
}

// A QP that existed when tracing began, connected (netlink's rqpn in the
// snapshot); one whose remote QPN never comes is reported without it
// after RemoteWait, and counted; one freed at the close of its file.
func TestExistingQPsAndMissingRemotes(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	x := ev(rdma.EvExists, 0, 30)
	x.SetState(uint8(rdma.QPStateRTS))
	x.RQPN = 31
	x.Resource.Has |= rdma.HasRQPN
	tr.Event(x)
	tr.Event(x) // seen again: known already
	tr.Event(ev(rdma.EvCreate, 10, 17))
	tr.Event(modify(20, 17, rdma.QPStateRTR))
	tr.Tick(at(1000))
	if len(r.lines) != 2 {
		t.Fatalf("records before RemoteWait: %q", r.lines)
	}
	tr.Tick(at(2021))
	c := ev(rdma.EvDestroy, 3000, 30)
	c.Flags |= rdma.EvFileClose
	tr.Event(c)
	check(t, r.lines,
		"exists qp 30 rxe0/1 RTS ib_write_bw[999] created +0s (seen) rqpn 31 at +0s",
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +10ms at +10ms",
		"connected qp 17 rxe0/1 RTR ib_write_bw[999] created +10ms at +2.02s",
		"ended qp 30 rxe0/1 RTS ib_write_bw[999] created +0s (seen) rqpn 31 fate file-close +3s at +3s")
	if st := tr.Stats(); st.NoRemote != 1 {
		t.Errorf("stats %+v, want one connected QP without its remote QPN", st)
	}
}

// A QP's error: failed is reported once, with its peer from the error
// (the QP's own attributes read at the failure).
func TestAFailedQPNamesItsPeer(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(modify(1, 17, rdma.QPStateRTR))
	qe := ev(rdma.EvQPError, 900, 17)
	qe.Fault = rdma.Fault{WCStatus: 12, PeerGID: netip.MustParseAddr("::ffff:10.98.1.1"), PeerQPN: 18}
	tr.Event(qe)
	tr.Event(modify(900, 17, rdma.QPStateErr))
	tr.Event(modify(901, 17, rdma.QPStateErr))
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"connected qp 17 rxe0/1 RTR ib_write_bw[999] created +0s remote ::ffff:10.98.1.1 rqpn 18 at +900ms",
		"failed qp 17 rxe0/1 ERR ib_write_bw[999] created +0s remote ::ffff:10.98.1.1 rqpn 18 at +900ms")
}

func TestTheQPsFollowedAreBounded(t *testing.T) {
	r := &recorder{}
	tr := New(Options{Out: r.out, MaxQPs: 2})
	for q := uint32(1); q <= 3; q++ {
		tr.Event(ev(rdma.EvCreate, 0, q))
	}
	if st := tr.Stats(); st.Tracked != 2 || st.Untracked != 1 || len(r.lines) != 2 {
		t.Errorf("stats %+v, %d records: want 2 followed, 1 counted as not", st, len(r.lines))
	}
}

// A QP the tracer did not see made (no snapshot, a lost create) is
// followed from its first event on, as one that existed then.
func TestAQPFirstSeenLaterIsFollowedFromThen(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(modify(100, 17, rdma.QPStateRTR))
	tr.RemoteQPN("rxe0", 17, 18, at(200))
	tr.Event(ev(rdma.EvDestroy, 300, 17))
	tr.Event(ev(rdma.EvDestroy, 400, 19))
	check(t, r.lines,
		"exists qp 17 rxe0/1 RTR ib_write_bw[999] created +100ms (seen) at +100ms",
		"connected qp 17 rxe0/1 RTR ib_write_bw[999] created +100ms (seen) rqpn 18 at +200ms",
		"ended qp 17 rxe0/1 RTR ib_write_bw[999] created +100ms (seen) rqpn 18 fate destroyed +300ms at +300ms",
		"ended qp 19 rxe0/1 RESET ib_write_bw[999] created +400ms (seen) fate destroyed +400ms at +400ms")
}

// Netlink's dump, read for one connected QP, lists every QP of the device,
// and gives the rqpn of an RC QP in any state: 0 before its RTR (its
// dest_qp_num is not set yet). A QP that was not waiting for its remote
// QPN keeps none from that dump, and a 0 is never a peer (QP0 is the
// SMI's): the QP connected later is reported with the QPN a dump read
// after its RTR gives.
func TestAnotherQPsDumpBeforeItsRTRGivesNoRemoteQPN(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(ev(rdma.EvCreate, 1, 19))
	tr.Event(modify(2, 17, rdma.QPStateRTR))
	// The dump for 17 lists 19 as well, still in INIT.
	tr.RemoteQPN("rxe0", 17, 18, at(500))
	tr.RemoteQPN("rxe0", 19, 0, at(500))
	tr.Event(modify(600, 19, rdma.QPStateRTR))
	if need := tr.NeedRemote(); len(need["rxe0"]) != 1 || need["rxe0"][0] != 19 {
		t.Errorf("NeedRemote %v, want rxe0's QP 19", need)
	}
	// A dump that still says 0 (read before the RTR took effect) is
	// not the answer either.
	tr.RemoteQPN("rxe0", 19, 0, at(700))
	tr.RemoteQPN("rxe0", 19, 20, at(1000))
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"created qp 19 rxe0/1 RESET ib_write_bw[999] created +1ms at +1ms",
		"connected qp 17 rxe0/1 RTR ib_write_bw[999] created +0s rqpn 18 at +500ms",
		"connected qp 19 rxe0/1 RTR ib_write_bw[999] created +1ms rqpn 20 at +1s")
}

// A QP found by the start's snapshot before its RTR: netlink's rqpn 0 is
// no peer, the connect later is reported with the one read after it.
func TestASnapshotBeforeTheRTRGivesNoRemoteQPN(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	x := ev(rdma.EvExists, 0, 30)
	x.SetState(uint8(rdma.QPStateInit))
	x.Resource.Has |= rdma.HasRQPN // RQPN 0, as netlink gives it
	tr.Event(x)
	tr.Event(modify(100, 30, rdma.QPStateRTR))
	tr.RemoteQPN("rxe0", 30, 31, at(400))
	check(t, r.lines,
		"exists qp 30 rxe0/1 INIT ib_write_bw[999] created +0s (seen) at +0s",
		"connected qp 30 rxe0/1 RTR ib_write_bw[999] created +0s (seen) rqpn 31 at +400ms")
}

// An owner with two QPs killed: its exit status, read (by its own path)
// between the tracer's two destroys, is the second QP's as well as the
// first's.
func TestAnOwnersExitBetweenTheDestroysOfItsQPs(t *testing.T) {
	r := &recorder{}
	tr := newTracker(r)
	tr.Event(ev(rdma.EvCreate, 0, 17))
	tr.Event(ev(rdma.EvCreate, 1, 19))
	destroy := func(ms int, qpn uint32) {
		d := ev(rdma.EvDestroy, ms, qpn)
		d.Flags |= rdma.EvActorExiting | rdma.EvFileClose
		tr.Event(d)
	}
	destroy(4000, 17)
	tr.Exit(rdma.ExitStatus{PID: 999, Time: at(4001), Code: 9})
	destroy(4002, 19)
	tr.Tick(at(9000))
	check(t, r.lines,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		"created qp 19 rxe0/1 RESET ib_write_bw[999] created +1ms at +1ms",
		"ended qp 17 rxe0/1 RESET ib_write_bw[999] created +0s fate signal +4s SIGKILL at +4s",
		"ended qp 19 rxe0/1 RESET ib_write_bw[999] created +1ms fate signal +4.002s SIGKILL at +4.002s")
	if st := tr.Stats(); st.NoStatus != 0 {
		t.Errorf("%d QPs without their owner's status, want none", st.NoStatus)
	}
}
