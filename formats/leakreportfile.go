package formats

import (
	"io"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// LeakReportFile is where leaks writes its report: the file Name (made
// by safefile, given to Owner), or Stdout for "" and "-" (which Close
// leaves open). Open makes it when the report starts, so that a run that
// cannot start leaves an earlier report as it was.
type LeakReportFile struct {
	Name   string
	Stdout io.Writer
	Owner  *safefile.Owner
	f      io.Closer
}

// Open makes the report, as NDJSON with json.
func (r *LeakReportFile) Open(json bool) (*LeakReport, error) {
	if r.Name == "" || r.Name == "-" {
		return NewLeakReport(r.Stdout, json), nil
	}
	f, err := safefile.Create(r.Name, r.Owner)
	if err != nil {
		return nil, err
	}
	r.f = f
	return NewLeakReport(f, json), nil
}

// Close closes the file, when one was made.
func (r *LeakReportFile) Close() {
	if r.f != nil {
		r.f.Close()
	}
}
