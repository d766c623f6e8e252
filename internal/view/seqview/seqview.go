// Package seqview draws one rdma_cm connection between two processes, as
// a trace recorded it, as an SVG sequence diagram: a column for the client
// and one for the server, each side's rdma_cm events and QP state moves on
// its column in time order with the time since the first, and the CM's
// messages (REQ, REP, RTU, DREQ, DREP, REJ, MRA) as arrows from the side
// that sent them to the event they caused on the other. Every connection
// between the two processes is drawn in the same two columns: give it a
// recording of one (trace -r with --filter-pid picks the pair).
package seqview

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Options say which connection to draw.
type Options struct {
	// Client and Server are the two processes (pids); 0: the owner of the
	// first connect request sent (cm_send_req) and the owner of the
	// listener it reached (cm_req_handler).
	Client, Server uint32
	// Title heads the picture; empty: one made of the two processes and
	// the first event's date.
	Title string
}

// Geometry, in SVG user units (pixels).
const (
	width     = 980
	rowH      = 22
	top       = 92
	timeX     = 14
	clientX   = 420
	serverX   = 650
	labelGap  = 12
	gapRowMin = 100 * time.Millisecond // a longer pause between two rows gets a row of its own
)

// side is which column an event is drawn on.
type side uint8

const (
	client side = iota
	server
)

// row is one event drawn: its time, its column, its words and, for a
// message sent, the message and the row its arrow ends at (-1: none seen).
type row struct {
	at    time.Time
	side  side
	label string
	fail  bool
	msg   string
	to    int
	gap   time.Duration // a pause row: how long nothing happened
}

// Pair finds the connection's client and server in evs: the owner of the
// first connect request sent and of the listener that received one.
func Pair(evs []rdma.Event) (client, server uint32, err error) {
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Kind == rdma.EvCMSendReq && client == 0:
			client = e.Owner.PID
		case e.Kind == rdma.EvCMReqHandler && server == 0:
			server = e.Owner.PID
		}
	}
	switch {
	case client == 0:
		return 0, 0, errors.New("no connect request (cm_send_req) in the recording: it holds no rdma_cm connect of a traced process")
	case server == 0:
		return 0, 0, errors.New("no connect request received (cm_req_handler) in the recording: the server was not traced")
	}
	return client, server, nil
}

// Render writes the SVG of the connection between o.Client and o.Server.
func Render(w io.Writer, evs []rdma.Event, o Options) error {
	if o.Client == 0 || o.Server == 0 {
		c, s, err := Pair(evs)
		if err != nil {
			return err
		}
		if o.Client == 0 {
			o.Client = c
		}
		if o.Server == 0 {
			o.Server = s
		}
	}
	rows, names, short := collect(evs, o)
	if len(rows) == 0 {
		return fmt.Errorf("no rdma_cm event or QP move of processes %d and %d in the recording", o.Client, o.Server)
	}
	if o.Title == "" {
		o.Title = fmt.Sprintf("%s connects to %s, %s UTC", short[client], short[server], rows[0].at.UTC().Format("2006-01-02 15:04:05.000"))
	}
	var b bytes.Buffer
	draw(&b, rows, names, o.Title)
	_, err := w.Write(b.Bytes())
	return err
}

// collect turns the two processes' events into rows in time order, with
// each message's arrow matched to the event it caused, and the columns'
// names.
func collect(evs []rdma.Event, o Options) (rows []row, names, short [2]string) {
	names[client] = fmt.Sprintf("pid %d (client)", o.Client)
	names[server] = fmt.Sprintf("pid %d (server)", o.Server)
	short = [2]string{fmt.Sprintf("pid %d", o.Client), fmt.Sprintf("pid %d", o.Server)}
	var addr [2]string
	for i := range evs {
		e := &evs[i]
		var s side
		switch e.Owner.PID {
		case o.Client:
			s = client
		case o.Server:
			s = server
		default:
			continue
		}
		if e.Owner.Comm != "" {
			short[s] = fmt.Sprintf("%s[%d]", e.Owner.Comm, e.Owner.PID)
			names[s] = fmt.Sprintf("%s (%s)", short[s], [2]string{"client", "server"}[s])
		}
		if e.Type == rdma.ResCMID && e.Given(rdma.HasSrcAddr) && addr[s] == "" && e.Src.Port() != 0 && (s == client || e.Kind == rdma.EvCMReqHandler) {
			addr[s] = e.Src.String()
		}
		r, ok := rowOf(e)
		if !ok {
			continue
		}
		r.side = s
		r.to = -1
		rows = append(rows, r)
	}
	for s := range addr {
		if addr[s] != "" {
			names[s] += " " + addr[s]
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.at.Compare(b.at) })
	// Each message ends at the first event it causes on the other side.
	used := map[int]bool{}
	for i := range rows {
		if rows[i].msg == "" {
			continue
		}
		for j := i + 1; j < len(rows); j++ {
			if rows[j].side != rows[i].side && !used[j] && causes(rows[i].msg, rows[j].label) {
				rows[i].to, used[j] = j, true
				break
			}
		}
	}
	// Pauses get a row of their own, the arrows' ends moved below them.
	var out []row
	moved := make([]int, len(rows))
	for i := range rows {
		if i > 0 {
			if d := rows[i].at.Sub(rows[i-1].at); d >= gapRowMin {
				out = append(out, row{at: rows[i-1].at, gap: d, to: -1})
			}
		}
		moved[i] = len(out)
		out = append(out, rows[i])
	}
	for i := range out {
		if out[i].to >= 0 {
			out[i].to = moved[out[i].to]
		}
	}
	return out, names, short
}

// rowOf is the row an event is drawn as; false for what the diagram leaves
// out (other resources, the rdma_cm events' done halves).
func rowOf(e *rdma.Event) (row, bool) {
	r := row{at: e.Time}
	qp := fmt.Sprintf("QP %d", e.LQPN)
	switch e.Kind {
	case rdma.EvCMEventHandler:
		r.label = e.CMEvent.String()
		if e.Status != 0 {
			r.label += fmt.Sprintf(" (status %d)", e.Status)
		}
		_, r.fail = e.Failure() // what why and top call a failure
	case rdma.EvCMReqHandler:
		r.label = "request reaches listener"
	case rdma.EvCMSendReq:
		r.label, r.msg = "rdma_connect", "REQ"
	case rdma.EvCMSendRep:
		r.label, r.msg = "rdma_accept", "REP"
	case rdma.EvCMSendRTU:
		r.label, r.msg = "sends RTU", "RTU"
	case rdma.EvCMSendRej:
		r.label, r.msg, r.fail = "rdma_reject", "REJ", true
	case rdma.EvCMSendMRA:
		r.label, r.msg = "sends MRA", "MRA"
	case rdma.EvCMDisconnect:
		r.label = "rdma_disconnect"
	case rdma.EvCMSentDreq:
		r.label, r.msg = "sends DREQ", "DREQ"
	case rdma.EvCMSentDrep:
		r.label, r.msg = "sends DREP", "DREP"
	case rdma.EvCreate, rdma.EvModify, rdma.EvDestroy:
		if e.Type != rdma.ResQP || !e.Given(rdma.HasLQPN) || e.QPType == rdma.QPTypeGSI || e.QPType == rdma.QPTypeSMI {
			return r, false
		}
		switch e.Kind {
		case rdma.EvCreate:
			r.label = qp + " created " + e.QPType.String()
		case rdma.EvDestroy:
			r.label = qp + " destroyed"
		default:
			if !e.Given(rdma.HasState) {
				return r, false
			}
			r.label = qp + " " + e.QPState.String()
			if e.Has(rdma.EvHasPrevState) {
				r.label = qp + " " + rdma.QPState(e.PrevState).String() + " → " + e.QPState.String()
			}
			// A move to ERR is drawn plain: at a disconnect it is the
			// connection's normal end; the failures are the QP errors
			// and the rdma_cm events that say one.
		}
	case rdma.EvQPError:
		// A normal end flushes what was posted: those completions are
		// drawn plain, as why leaves them out.
		_, r.fail = e.Failure()
		switch e.Fault.Report {
		case rdma.QPErrDriver:
			r.label = qp + " ERR (by the driver)"
		case rdma.QPErrFirst:
			r.label = qp + " " + e.Fault.WCStatus.String() + " (first error)"
		default:
			r.label = fmt.Sprintf("%s %s ×%d at destroy", qp, e.Fault.WCStatus.String(), e.Fault.Count)
		}
	default:
		return r, false
	}
	return r, true
}

// causes says whether a message sent may have caused the event labelled
// ev on the other side.
func causes(msg, ev string) bool {
	switch msg {
	case "REQ":
		return ev == "request reaches listener" || ev == "CONNECT_REQUEST"
	case "REP":
		return ev == "CONNECT_RESPONSE" || ev == "ESTABLISHED"
	case "RTU":
		return ev == "ESTABLISHED"
	case "REJ":
		return strings.HasPrefix(ev, "REJECTED")
	case "DREQ", "DREP":
		return ev == "DISCONNECTED"
	}
	return false // MRA: nothing the other side reports
}

// draw writes the picture.
func draw(b *bytes.Buffer, rows []row, names [2]string, title string) {
	y0 := top
	height := y0 + len(rows)*rowH + 40
	colX := [2]int{clientX, serverX}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="13">`+"\n", width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1f4e79"/></marker></defs>` + "\n")
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", timeX, esc(title))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555555">time</text>`+"\n", timeX, y0-22)
	for s, x := range colX {
		anchor := "end"
		if side(s) == server {
			anchor = "start"
		}
		tx := x
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-weight="bold">%s</text>`+"\n", tx, y0-40, anchor, esc(names[s]))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999999" stroke-width="2"/>`+"\n", x, y0-30, x, height-20)
	}
	first := rows[0].at
	for i, r := range rows {
		y := y0 + i*rowH + rowH/2
		if r.gap > 0 {
			fmt.Fprintf(b, `<text x="%d" y="%d" fill="#a05a00" font-style="italic">%s</text>`+"\n", timeX, y+4, esc("⋮ nothing for "+dur(r.gap)))
			for _, x := range colX {
				fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ffffff" stroke-width="4" stroke-dasharray="3,3"/>`+"\n", x, y-8, x, y+8)
			}
			continue
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555555">%s</text>`+"\n", timeX, y+4, esc("+"+ms(r.at.Sub(first))))
		x := colX[r.side]
		color := "#1f4e79"
		if r.fail {
			color = "#b00020"
		}
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="4" fill="%s"/>`+"\n", x, y, color)
		lx, anchor := x-labelGap, "end"
		if r.side == server {
			lx, anchor = x+labelGap, "start"
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" fill="%s">%s</text>`+"\n", lx, y+4, anchor, color, esc(r.label))
		if r.msg == "" {
			continue
		}
		ox := colX[1-r.side]
		oy := y
		// A message that causes nothing the other side reports (MRA) is
		// dashed, level, its name near its sender: clear of a crossing
		// message's name, which sits halfway.
		dash, lx := ` stroke-dasharray="5,4"`, x+(ox-x)/4
		if r.to >= 0 {
			oy, dash, lx = y0+r.to*rowH+rowH/2, "", (x+ox)/2
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1f4e79" stroke-width="1.5" marker-end="url(#arrow)"%s/>`+"\n", x, y, ox, oy, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold" fill="#1f4e79">%s</text>`+"\n", lx, (y+oy)/2-5, esc(r.msg))
	}
	b.WriteString("</svg>\n")
}

// ms is a time since the first row, in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// dur is a pause, in the unit that reads best.
func dur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3f s", d.Seconds())
	}
	return ms(d)
}

// esc escapes text for SVG; control characters (from process names) are
// dropped.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
