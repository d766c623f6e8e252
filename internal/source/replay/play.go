package replay

import (
	"errors"

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

// Play reads r's events to its end through o (over Drain): trace -r, a
// recording through the filters and views of a live trace. It returns how
// many lines were no event, and what stopped it: a read error (named after
// the recording, as Drain's) or Write's.
func (r *Reader) Play(o PlayOptions) (bad int, err error) {
	shown := uint64(0)
	var werr error
	bad, err = r.Drain(func(ev *rdma.Event) error {
		if o.Keep != nil && !o.Keep(ev) {
			return nil
		}
		if werr = o.Write(ev); werr != nil {
			return werr
		}
		if shown++; shown == o.Count {
			return errPlayed
		}
		return nil
	}, func(le *lineerr.Error) {
		_ = o.Flush()
		o.Bad(le)
	})
	switch {
	case err == nil, err == errPlayed:
		return bad, o.Flush()
	case err != werr:
		_ = o.Flush() // what was written before the read error
	}
	return bad, err
}

// errPlayed stops Drain once Play has handed on its Count.
var errPlayed = errors.New("played")
