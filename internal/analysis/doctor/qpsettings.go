package doctor

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// QPKey names a QP: its device and number.
type QPKey struct {
	Dev  string
	LQPN uint32
}

// QPSettings are the transport settings of each QP a recording of
// `rdmatrace trace -w` saw set (its qp-attr events): every modify's values
// merged, those of the QP's last life when its number was used again.
type QPSettings map[QPKey]rdma.QPAttr

// ReadQPSettings reads a recording's qp-attr events. Bad lines are
// returned joined (each names its file and line); the rest are read.
func ReadQPSettings(r io.Reader, name string) (QPSettings, error) {
	out := QPSettings{}
	rd := replay.NewReader(r, name)
	var errs []error
	var ev rdma.Event
	for {
		err := rd.Next(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err)
			var le *lineerr.Error
			if !errors.As(err, &le) {
				break // a read error, not a bad line
			}
			continue
		}
		out.Add(&ev)
	}
	return out, errors.Join(errs...)
}

// Add takes one event: a QP's creation starts its settings afresh, a
// qp-attr event merges what its modify set.
func (s QPSettings) Add(ev *rdma.Event) {
	if ev.Type != rdma.ResQP || !ev.Given(rdma.HasLQPN) {
		return
	}
	k := QPKey{ev.DevName, ev.LQPN}
	switch ev.Kind {
	case rdma.EvCreate:
		delete(s, k)
	case rdma.EvQPAttr:
		a := s[k]
		a.Merge(&ev.QPAttr)
		s[k] = a
	}
}

// riskFixes says what to do about each risk.
var riskFixes = map[string]string{
	rdma.RiskRNRWait:        "min_rnr_timer 0 is the longest wait (655.36 ms), not none: use 12 (0.64 ms) or so",
	rdma.RiskRNRInfinite:    "rnr_retry 7 retries for ever, so a peer that never posts a receive hangs the sender: use 6 or less and handle IBV_WC_RNR_RETRY_EXC_ERR",
	rdma.RiskNoTimeout:      "timeout 0 never notices a dead peer: use 14 (67 ms) to 18 (1.07 s)",
	rdma.RiskLongTimeout:    "each retry waits over a minute, so a dead peer takes minutes to notice: use 14 (67 ms) to 18 (1.07 s)",
	rdma.RiskShortTimeout:   "a timeout under 1 ms retries before an ACK can come back: use 14 (67 ms) or more",
	rdma.RiskNoRetry:        "retry_cnt 0 errors the QP on the first lost packet: use 7",
	rdma.RiskLinkLocalGID:   "a link-local (fe80::) GID does not route: use the GID index of a routable address (rdmatrace gid lists them)",
	rdma.RiskRoCEv1:         "RoCE v1 is layer 2 only (no routing, no ECN): use the address's RoCE v2 GID index (VER v2 in rdmatrace gid)",
	rdma.RiskMTUAboveNetdev: "the path MTU with RoCE's headers exceeds the netdev's MTU: lower path_mtu or raise the netdev's MTU",
}

// qpSettings: the transport settings of the target's live QPs (from a
// recording: the kernel's netlink dump has their state, PSNs and path
// migration state, not their timeouts, retries or GID), and which of them
// are risky.
func qpSettings(t Target, v View) Finding {
	const check = "qp-settings"
	whose := "it has"
	if t.QPN != 0 {
		whose = "lqpn " + strconv.FormatUint(uint64(t.QPN), 10) + ":"
	}
	if v.QPErr != nil {
		return Finding{check, Warn, "cannot list its QPs: " + v.QPErr.Error(), ""}
	}
	if len(v.QPs) == 0 {
		if t.QPN != 0 {
			return Finding{check, Fail, fmt.Sprintf("no live QP %d%s", t.QPN, ownerText(t)), "rdmatrace res qp lists the live QPs"}
		}
		return Finding{Check: check, Status: Skip, Detail: whose + " no QP"}
	}
	qps := append([]rdma.Resource(nil), v.QPs...)
	sort.Slice(qps, func(i, j int) bool {
		if qps[i].DevName != qps[j].DevName {
			return qps[i].DevName < qps[j].DevName
		}
		return qps[i].LQPN < qps[j].LQPN
	})
	var lines, risky, unseen []string
	fixes := map[string]bool{}
	for _, q := range qps {
		name := fmt.Sprintf("lqpn %d (%s/%d %s %s", q.LQPN, q.DevName, q.Port, q.QPType, q.QPState)
		if q.Given(rdma.HasRQPN) {
			name += fmt.Sprintf(" rqpn %d", q.RQPN)
		}
		if q.Given(rdma.HasSQPSN) {
			name += fmt.Sprintf(" sq-psn %d", q.SQPSN)
		}
		if q.Given(rdma.HasPathMig) {
			name += " path-mig-state " + q.PathMig.String()
		}
		name += ")"
		a, ok := v.QPSettings[QPKey{q.DevName, q.LQPN}]
		if !ok {
			unseen = append(unseen, name)
			continue
		}
		line := name + ": " + strings.Join(a.Words(), ", ")
		if r := a.Risks(); len(r) > 0 {
			line += " RISK " + strings.Join(r, " ")
			risky = append(risky, name)
			for _, x := range r {
				fixes[x] = true
			}
		}
		lines = append(lines, line)
	}
	if v.QPTrace == "" {
		plural := "s"
		if len(qps) == 1 {
			plural = ""
		}
		return Finding{check, Skip, fmt.Sprintf("%s %d live QP%s (netlink: %s); their timeouts, retries and GID are in no netlink dump",
			whose, len(qps), plural, strings.Join(unseen, "; ")),
			"record them from before they connect (rdmatrace trace -w FILE), then: rdmatrace doctor --qp-trace FILE"}
	}
	if len(unseen) > 0 {
		lines = append(lines, "not in "+v.QPTrace+" (set up before it began): "+strings.Join(unseen, "; "))
	}
	detail := "from " + v.QPTrace + ": " + strings.Join(lines, "; ")
	if len(risky) == 0 {
		return Finding{Check: check, Detail: detail}
	}
	var fix []string
	for _, r := range []string{rdma.RiskRNRWait, rdma.RiskRNRInfinite, rdma.RiskNoTimeout, rdma.RiskLongTimeout, rdma.RiskShortTimeout,
		rdma.RiskNoRetry, rdma.RiskLinkLocalGID, rdma.RiskRoCEv1, rdma.RiskMTUAboveNetdev} {
		if fixes[r] {
			fix = append(fix, r+": "+riskFixes[r])
		}
	}
	return Finding{check, Warn, detail, strings.Join(fix, "; ")}
}

func ownerText(t Target) string {
	if t.QPAnyOwner {
		return ""
	}
	return fmt.Sprintf(" of %s[%d]", t.Comm, t.PID)
}
