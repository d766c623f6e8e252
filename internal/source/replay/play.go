package replay

import (
	"errors"
	"io"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PlayOptions say where Play hands a recording's events.
type PlayOptions struct {
	// Keep says which events to hand on (nil: all); Count stops after
	// that many (0: no limit).
	Keep  func(*rdma.Event) bool
	Count uint64
	// Write takes each event kept; its error stops the play. Flush is
	// called before each bad line is told and at the end.
	Write func(*rdma.Event) error
	Flush func() error
	// Bad is told each line that is no event (file, line, what was
	// expected); the rest is still read.
	Bad func(*lineerr.Error)
}

// Play reads r's events to its end through o: trace -r, a recording
// through the filters and views of a live trace. It returns how many lines
// were no event, and what stopped it: a read error (as Next returns it)
// or Write's.
func (r *Reader) Play(o PlayOptions) (bad int, err error) {
	var ev rdma.Event
	shown := uint64(0)
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		var le *lineerr.Error
		if errors.As(err, &le) {
			bad += le.Lines()
			_ = o.Flush()
			o.Bad(le)
			continue
		}
		if err != nil {
			_ = o.Flush()
			return bad, err
		}
		if o.Keep != nil && !o.Keep(&ev) {
			continue
		}
		if err := o.Write(&ev); err != nil {
			return bad, err
		}
		if shown++; shown == o.Count {
			break
		}
	}
	return bad, o.Flush()
}
