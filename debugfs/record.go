package debugfs

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/rdma"
)

// Kind says which layout a record was read from.
type Kind uint8

const (
	KindLegacy   Kind = iota // the 2009 rdma_cm debugfs layout
	KindRdmaText             // `rdma res show cm_id|qp` text
	KindRdmaJSON             // `rdma -j res show cm_id|qp`
)

func (k Kind) String() string {
	switch k {
	case KindLegacy:
		return "legacy"
	case KindRdmaText:
		return "rdma-text"
	case KindRdmaJSON:
		return "rdma-json"
	}
	return "kind-" + strconv.Itoa(int(k))
}

// Record is one resource read from saved state, with where it came from.
type Record struct {
	Source string // the input: a file name, or "<stdin>"
	Line   int    // 1-based line of Source the record starts on
	// Origin is the file named inside the input by a grep prefix
	// ("path:row") or a head/tail separator ("==> path <=="); empty otherwise.
	Origin string
	Kind   Kind
	// Layout is the legacy header the row was read under; nil for records
	// of rdma output. Writing the record under the same layout gives back
	// the row (see formats.LegacyWriter).
	Layout *Layout
	Res    rdma.Resource
}

// LineError is a line that yields no record. Reading goes on after it.
type LineError struct {
	Source   string
	Line     int
	Expected string // what the reader wanted, e.g. "SPACE (TCP, UDP, IPOIB, IB or SDP)"
	Found    string // what it got, already quoted for a terminal, or "end of line"
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: expected %s, found %s", printable(e.Source), e.Line, e.Expected, e.Found)
}

// quoteFound shows a piece of input in an error message: quoted, escaped
// so that no control byte reaches a terminal, and cut to a readable length.
func quoteFound(b []byte) string {
	const max = 48
	if len(b) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return strconv.QuoteToASCII(string(b[:cut])) + "..."
	}
	return strconv.QuoteToASCII(string(b))
}

// printable returns s unchanged when it is safe to show on a terminal, and
// quoted otherwise (file names can hold escape sequences too).
func printable(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
