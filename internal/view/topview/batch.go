package topview

import (
	"bufio"
	"io"

	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
)

// Batch writes each frame as plain text, one after the other with a blank
// line between, as `top -b` does: for a file, a pipe, or a terminal
// asked for it (-b).
type Batch struct {
	w    *bufio.Writer
	sort top.SortKey
	n    int
}

// NewBatch writes frames to w, owners sorted by key.
func NewBatch(w io.Writer, key top.SortKey) *Batch {
	return &Batch{w: bufio.NewWriter(w), sort: key}
}

// Show writes one frame.
func (b *Batch) Show(f *top.Frame) error {
	l := Lay(f, b.sort)
	if b.n++; b.n > 1 {
		b.w.WriteString("\n")
	}
	for _, h := range l.Header {
		b.line(h)
	}
	b.line("")
	b.line(l.DevicesTitle)
	b.line(l.DeviceHead)
	for _, r := range l.Devices {
		b.line(r)
	}
	b.line("")
	b.line(l.OwnersTitle)
	b.line(l.OwnerHead)
	for _, r := range l.Owners {
		b.line(r)
	}
	return b.w.Flush()
}

func (b *Batch) line(s string) {
	b.w.WriteString(s)
	b.w.WriteByte('\n')
}

// Close writes out what is buffered.
func (b *Batch) Close() error { return b.w.Flush() }
