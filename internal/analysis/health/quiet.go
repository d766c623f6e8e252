package health

import (
	"github.com/rdmatrace/rdmatrace/internal/analysis/failures"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// held is a QP failure the window's classifier holds.
type held struct {
	e   rdma.Event
	why string
}

func newQuiet() *failures.Quiet[held] { return failures.NewQuiet[held]() }
