package debugfs

import (
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
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
	// the row (see LegacyWriter).
	Layout *Layout
	Res    rdma.Resource
}
