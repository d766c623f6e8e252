package trace

import (
	"fmt"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// Read is trace -r: a recording through the same filters and views as a
// live trace, up to limit events (0: all). A bad line is reported (file,
// line, what was expected) and the rest still read; then the exit status
// is 1.
func Read(path string, maxInput int64, limit uint64, f *filter.Events, sink Sink) error {
	in, done, err := lineio.Open(path, os.Stdin, maxInput)
	if err != nil {
		return &tracer.ExitError{Code: 1, Err: err}
	}
	defer done()
	var werr error // the sink's: returned as it is, not as the file's
	bad, err := replay.NewReader(in, lineio.SourceName(path)).Play(replay.PlayOptions{Keep: f.Match, Count: limit,
		Write: func(e *rdma.Event) error { werr = sink.Write(e); return werr },
		Flush: func() error {
			if ferr := sink.Flush(); ferr != nil {
				werr = ferr
				return ferr
			}
			return nil
		},
		Bad: func(le *lineerr.Error) { logf("%v", le) }})
	switch {
	case err != nil && err == werr:
		return err
	case err != nil:
		return &tracer.ExitError{Code: 1, Err: err}
	case bad > 0:
		return &tracer.ExitError{Code: 1, Err: fmt.Errorf("%s: %d lines were not events (named or counted above)", lineio.SourceName(path), bad)}
	}
	return nil
}
