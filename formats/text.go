package formats

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TextWriter writes one iproute2-style line per object
// ("link rxe0/1 lqpn 17 type RC state RTS ... comm rping").
type TextWriter struct {
	w *bufio.Writer
}

// NewTextWriter writes to w; call Flush at the end.
func NewTextWriter(w io.Writer) *TextWriter { return &TextWriter{w: bufio.NewWriter(w)} }

// Flush flushes buffered lines.
func (t *TextWriter) Flush() error { return t.w.Flush() }

// Resource writes r as `rdma res show` does.
func (t *TextWriter) Resource(r *rdma.Resource) error {
	var b strings.Builder
	if r.Type == rdma.ResQP || r.Type == rdma.ResCMID {
		b.WriteString("link ")
		b.WriteString(Sanitize(r.DevName))
		if r.Has&rdma.HasPort != 0 {
			b.WriteString("/" + strconv.FormatUint(uint64(r.Port), 10))
		} else {
			b.WriteString("/-")
		}
	} else {
		b.WriteString("dev " + Sanitize(r.DevName))
	}
	for _, f := range ResourceObject(r) {
		switch f.Key {
		case "ifindex", "ifname", "port":
			continue
		case "cgroup", "runtime", "container-id", "job", "pod-uid", "pod-namespace", "pod-name", "netns":
			// One word says it in text; -j has each.
			if f.Key == "cgroup" {
				if c := ContainerName(r.Owner.Place); c != "" {
					b.WriteString(" container " + c)
				}
			}
			continue
		case "withheld":
			for _, k := range f.List {
				b.WriteString(" " + k + " withheld")
			}
			continue
		case "comm":
			if r.Owner.Kernel() {
				b.WriteString(" comm [" + Sanitize(f.Str) + "]")
				continue
			}
		}
		b.WriteString(" " + f.Key + " " + Sanitize(f.Text()))
	}
	b.WriteByte('\n')
	_, err := t.w.WriteString(b.String())
	return err
}

// Summary writes one device's counts: "0: rxe0: pd 1 cq 1 qp 1 ...".
func (t *TextWriter) Summary(s *rdma.Summary) error {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(s.DevIndex), 10) + ": " + Sanitize(s.DevName) + ":")
	for _, c := range s.Counts {
		b.WriteString(" " + Sanitize(c.Name) + " " + strconv.FormatUint(c.Value, 10))
	}
	b.WriteByte('\n')
	_, err := t.w.WriteString(b.String())
	return err
}

// Object writes any object as "KEY VALUE" pairs after a lead-in of the
// first two fields ("0: rxe0:" for devices, "link rxe0/1" for ports).
func (t *TextWriter) Object(lead string, o Object, skip ...string) error {
	var b strings.Builder
	b.WriteString(Sanitize(lead))
outer:
	for _, f := range o {
		for _, s := range skip {
			if f.Key == s {
				continue outer
			}
		}
		b.WriteString(" " + f.Key + " " + Sanitize(f.Text()))
	}
	b.WriteByte('\n')
	_, err := t.w.WriteString(b.String())
	return err
}
