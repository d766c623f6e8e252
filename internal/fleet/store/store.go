// Package store asks the fleet's log store about the identity records the
// nodes sent (package records): which node, device and port a GID is, and
// which QPs held a QPN there. Store is the small interface the questions
// go through; VictoriaLogs (LogsQL over HTTP) is its one implementation,
// and another store that takes OTLP logs can be added beside it. There is
// no store, collector or fan-out of our own.
package store

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Store answers questions about the records the nodes sent.
type Store interface {
	// GIDs returns the GID table records of gid sent at or before until
	// (zero: any time), newest first, at most limit of them.
	GIDs(ctx context.Context, gid netip.Addr, until time.Time, limit int) ([]rdma.GIDRecord, error)
	// QPs returns the QP records q selects, newest first.
	QPs(ctx context.Context, q QPQuery) ([]rdma.QPIdentity, error)
	// String names the store for messages: "VictoriaLogs at http://...".
	String() string
}

// QPQuery selects QP records: QPN on Node's device Dev, or, without a
// node, QPN on whichever node's QP sends from LocalGID.
type QPQuery struct {
	Node, Dev string
	LocalGID  netip.Addr // without Node
	QPN       uint32
	// CreatedBy keeps the lifetimes created at or before it (zero: all):
	// those that may have held the QPN then.
	CreatedBy time.Time
	Limit     int
}

func (q QPQuery) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "QP %d", q.QPN)
	if q.Node != "" {
		fmt.Fprintf(&b, " on %s", q.Node)
		if q.Dev != "" {
			fmt.Fprintf(&b, " %s", q.Dev)
		}
	} else {
		fmt.Fprintf(&b, " sending from %s", rdma.GIDText(q.LocalGID))
	}
	if !q.CreatedBy.IsZero() {
		fmt.Fprintf(&b, " created by %s", q.CreatedBy.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}

// Open returns the Store at base, a URL such as http://HOST:9428
// (VictoriaLogs, the one kind there is).
func Open(base string, o Options) (Store, error) {
	return NewVictoriaLogs(base, o)
}

// Options tune a Store's client.
type Options struct {
	// Timeout bounds each query (default 10 s).
	Timeout time.Duration
	// MaxResponse bounds what one answer may hold (default 16 MB).
	MaxResponse int64
}
