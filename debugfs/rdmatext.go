package debugfs

import (
	"bytes"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Reading `rdma res show cm_id|qp` text (iproute2 6.1, res-cmid.c and
// res-qp.c): "link DEV/PORT" (or "DEV/-") and then KEY VALUE pairs,
// optional ones left out, with a trailing blank:
//
//	link rxe0/1 cm-idn 3 lqpn 17 qp-type RC state CONNECT ps TCP pid 812 comm rping src-addr 10.0.0.1:7174 dst-addr 10.0.0.2:43970
//	link rxe0/1 lqpn 17 rqpn 18 type RC state RTS rq-psn 5 sq-psn 9 path-mig-state MIGRATED pdn 2 pid 812 comm rping
//
// `-d` adds drv_* pairs, which `-p` moves to indented lines below.

// textKey is a key of an rdma text line and how its value is read.
type textKey uint8

const (
	tkUnknown textKey = iota
	tkCMIDN
	tkLQPN
	tkRQPN
	tkQPType // qp-type (cm_id) and type (qp)
	tkState
	tkPS
	tkPID
	tkComm
	tkSrc
	tkDst
	tkRQPSN
	tkSQPSN
	tkPathMig
	tkPDN
)

var cmIDKeys = map[string]textKey{
	rdma.KeyCMIDN.Name: tkCMIDN, rdma.KeyLQPN.Name: tkLQPN, rdma.KeyQPType.Name: tkQPType, rdma.KeyState.Name: tkState,
	rdma.KeyPS.Name: tkPS, rdma.KeyPID.Name: tkPID, rdma.KeyComm.Name: tkComm,
	rdma.KeySrcAddr.Name: tkSrc, rdma.KeyDstAddr.Name: tkDst,
}

var qpKeys = map[string]textKey{
	rdma.KeyLQPN.Name: tkLQPN, rdma.KeyRQPN.Name: tkRQPN, rdma.KeyType.Name: tkQPType, rdma.KeyState.Name: tkState,
	rdma.KeyRQPSN.Name: tkRQPSN, rdma.KeySQPSN.Name: tkSQPSN, rdma.KeyPathMig.Name: tkPathMig, rdma.KeyPDN.Name: tkPDN,
	rdma.KeyPID.Name: tkPID, rdma.KeyComm.Name: tkComm,
}

// parseText reads one rdma text line, already split into cells.
func (rd *Reader) parseText(cells [][]byte) (*Record, *lineerr.Error) {
	rec := &rd.text[0]
	if rd.pending == rec {
		rec = &rd.text[1]
	}
	r := &rec.Res
	*r = rdma.Resource{}
	keys := cmIDKeys
	r.Type = rdma.ResCMID
	switch {
	case containsCell(cells[2:], rdma.KeySQPSN.Name):
		keys, r.Type = qpKeys, rdma.ResQP
	case !containsCell(cells[2:], rdma.KeyPS.Name):
		return nil, &lineerr.Error{Expected: "a cm_id line (with ps) or a qp line (with sq-psn)",
			Found: "neither in " + lineerr.Quote(cells[1])}
	}
	dev, port, _ := bytes.Cut(cells[1], []byte("/"))
	r.DevName = rd.intern(dev)
	if string(port) != "-" {
		p, ok := parseUint(port, 0xffffffff)
		if !ok {
			return nil, &lineerr.Error{Expected: "link DEV/PORT with a port number or -", Found: lineerr.Quote(cells[1])}
		}
		r.Port = uint32(p)
		r.Has |= rdma.HasPort
	}
	if lerr := rd.textPairs(r, keys, cells[2:]); lerr != nil {
		return nil, lerr
	}
	if r.Type == rdma.ResQP && r.Has&rdma.HasLQPN == 0 {
		return nil, &lineerr.Error{Expected: "lqpn on a qp line", Found: "none"}
	}
	if c := r.Owner.Comm; r.Has&rdma.HasPID == 0 && len(c) > 2 && c[0] == '[' && c[len(c)-1] == ']' {
		// No pid and a bracketed name: a kernel owner ("comm [rdma_cm]").
		r.Owner.KernName, r.Owner.Comm = c[1:len(c)-1], ""
	}
	rec.Kind, rec.Layout = KindRdmaText, nil
	rd.stamp(rec)
	return rec, nil
}

func containsCell(cells [][]byte, s string) bool {
	for _, c := range cells {
		if string(c) == s {
			return true
		}
	}
	return false
}

// textPairs reads KEY VALUE pairs into r.
func (rd *Reader) textPairs(r *rdma.Resource, keys map[string]textKey, cells [][]byte) *lineerr.Error {
	for i := 0; i < len(cells); i += 2 {
		key := cells[i]
		if i+1 == len(cells) {
			return &lineerr.Error{Expected: "a value after " + lineerr.Quote(key), Found: "end of line"}
		}
		k := keys[string(key)]
		if k == tkComm {
			// A process name may hold blanks: it runs up to the next key.
			j := i + 2
			for j < len(cells) && keys[string(cells[j])] == tkUnknown && !bytes.HasPrefix(cells[j], []byte("drv_")) {
				j++
			}
			r.Owner.Comm = rd.intern(bytes.Join(cells[i+1:j], []byte(" ")))
			i = j - 2
			continue
		}
		if err := rd.setTextValue(r, k, key, cells[i+1]); err != "" {
			return &lineerr.Error{Expected: string(key) + " " + err, Found: lineerr.Quote(cells[i+1])}
		}
	}
	return nil
}

// setTextValue stores one value; it returns what was expected when the
// value does not parse.
func (rd *Reader) setTextValue(r *rdma.Resource, k textKey, key, v []byte) string {
	num := func(dst *uint32, f rdma.Field) string {
		n, ok := parseUint(v, 0xffffffff)
		if !ok {
			return "(a number)"
		}
		*dst = uint32(n)
		r.Has |= f
		return ""
	}
	switch k {
	case tkCMIDN:
		return num(&r.CMIDN, rdma.HasCMIDN)
	case tkLQPN:
		return num(&r.LQPN, rdma.HasLQPN)
	case tkRQPN:
		return num(&r.RQPN, rdma.HasRQPN)
	case tkRQPSN:
		return num(&r.RQPSN, rdma.HasRQPSN)
	case tkSQPSN:
		return num(&r.SQPSN, rdma.HasSQPSN)
	case tkPDN:
		return num(&r.PDN, rdma.HasPDN)
	case tkPID:
		return num(&r.Owner.PID, rdma.HasPID)
	case tkQPType:
		if string(v) == "UNKNOWN" {
			return "" // iproute2's name for a type it does not know: leave it out
		}
		t, err := rdma.ParseQPType(string(v))
		if err != nil {
			return "(" + rdma.QPTypeNames() + ")"
		}
		r.QPType, r.Has = t, r.Has|rdma.HasQPType
	case tkState:
		if string(v) == "UNKNOWN" {
			return ""
		}
		if r.Type == rdma.ResQP {
			s, err := rdma.ParseQPState(string(v))
			if err != nil {
				return "(" + rdma.QPStateNames() + ")"
			}
			r.QPState = s
		} else {
			s, ok := parseCMState(v)
			if !ok {
				return "(" + rdma.CMStateNames() + ")"
			}
			r.CMState = s
		}
		r.Has |= rdma.HasState
	case tkPS:
		if string(v) == "---" {
			return "" // iproute2's name for a port space it does not know
		}
		// iproute2 6.1 prints "IPoIB" for RDMA_PS_IB too; IPoIB is
		// the likelier of the two.
		ps, ok := parseSpace(v)
		if !ok {
			return "(TCP, UDP, IPoIB or IB)"
		}
		r.PS, r.Has = ps, r.Has|rdma.HasPS
	case tkPathMig:
		m, err := rdma.ParsePathMigState(string(v))
		if err != nil {
			return "(" + rdma.PathMigStateNames() + ")"
		}
		r.PathMig, r.Has = m, r.Has|rdma.HasPathMig
	case tkSrc, tkDst:
		// iproute2 writes "ip:port" without brackets even for IPv6;
		// the last ':' separates the port.
		ap, z, ok := parseEndpoint(v)
		if !ok {
			return "(ip:port)"
		}
		zone := rd.internZone(z)
		if k == tkSrc {
			r.Src, r.SrcZone, r.Has = ap, zone, r.Has|rdma.HasSrcAddr
		} else {
			r.Dst, r.DstZone, r.Has = ap, zone, r.Has|rdma.HasDstAddr
		}
	default:
		r.Extra = append(r.Extra, rdma.KV{Key: rd.intern(key), Value: rd.intern(v)})
	}
	return ""
}

// continueText adds the drv_* pairs of an indented `rdma -p -d` line to the
// record before it. It fails when the line is not such a continuation.
func (rd *Reader) continueText(rec *Record, line []byte) *lineerr.Error {
	if rd.split(line) > maxCells || len(rd.cells) < 2 || !strings.HasPrefix(string(rd.cells[0]), "drv_") {
		return &lineerr.Error{}
	}
	keys := cmIDKeys
	if rec.Res.Type == rdma.ResQP {
		keys = qpKeys
	}
	r := rec.Res
	r.Extra = append([]rdma.KV(nil), rec.Res.Extra...)
	if lerr := rd.textPairs(&r, keys, rd.cells); lerr != nil {
		return lerr
	}
	rec.Res = r
	return nil
}
