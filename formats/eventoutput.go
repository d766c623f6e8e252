package formats

import (
	"fmt"
	"io"

	"github.com/rdmatrace/rdmatrace/internal/base/rotate"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// EventOutput is where trace's events go: the screen in Format (shown as
// View says), the recording of -w (Write: a file rotated past FileSizeMB
// megabytes, FileCount kept, made as Owner's; "-": stdout), with Print
// both.
type EventOutput struct {
	Format     Format
	View       EventView
	Write      string
	FileSizeMB int
	FileCount  int
	Print      bool
	Owner      *safefile.Owner
}

// Open makes the sink of o's screen and of -w - on stdout; OpenRecording
// adds -w FILE once tracing has begun, and the caller an OTLP collector
// (EventTee.Also).
func (o EventOutput) Open(stdout io.Writer) *EventTee {
	sink := &EventTee{}
	if o.Write == "" || o.Print {
		sink.Print = NewEventSink(stdout, o.Format, o.View)
	}
	if o.Write == "-" {
		sink.Record = NewEventWriter(stdout, true)
	}
	return sink
}

// OpenRecording starts -w FILE in sink. Called once the tracer is
// attached, a run that fails before leaves an earlier recording as it
// was.
func (o EventOutput) OpenRecording(sink *EventTee) error {
	if o.Write == "" || o.Write == "-" {
		return nil
	}
	rw, err := rotate.Create(o.Write, int64(o.FileSizeMB)*1_000_000, o.FileCount, o.Owner)
	if err != nil {
		return fmt.Errorf("-w: %s", Sanitize(err.Error()))
	}
	sink.Record = NewEventWriter(rw, true)
	sink.Closers = append(sink.Closers, rw.Close)
	return nil
}
