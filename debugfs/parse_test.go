package debugfs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

type recordList struct{ recs []string }

func (l *recordList) Write(r *Record) error {
	l.recs = append(l.recs, r.Res.DevName+" "+r.Res.Type.String())
	return nil
}

// parse as `rdmatrace parse` runs it, without the command line: every
// input read in order, a bad line told and counted, a missing file told
// and the others still read, the filter applied to what is written.
func TestParseReadsEveryInputAndCountsWhatItCouldNot(t *testing.T) {
	in := filepath.Join("..", "testdata", "debugfs", "in")
	var warned, bad []string
	sink := &recordList{}
	res, err := Parse(ParseOptions{
		Paths:   []string{filepath.Join(in, "rdma-qp.txt"), "nonexistent", filepath.Join(in, "errors.txt")},
		Keep:    func(r *rdma.Resource) bool { return r.Type == rdma.ResQP },
		Warn:    func(line string) { warned = append(warned, line) },
		BadLine: func(le *lineerr.Error) { bad = append(bad, le.Error()) },
	}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 3 || res.Records <= 3 || res.Rejected == 0 || res.Rejected != len(bad) || !res.Failed ||
		len(warned) != 1 || !strings.Contains(warned[0], "nonexistent") {
		t.Errorf("records %q, result %+v, warned %q, bad %d", sink.recs, res, warned, len(bad))
	}
}
