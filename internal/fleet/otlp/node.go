package otlp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/qplife"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Node is --otlp as trace and the exporter run it: the events to the
// collector and, with identity, the node's identity records of its QPs and
// GID tables (qplife) made from the same events and sent with them.
type Node struct {
	Sink     *Sink
	ids      *qplife.Runner
	endpoint string
}

// StartNode starts a Node's sink to the collector at endpoint, its
// records naming node ("": the host name).
func StartNode(endpoint, node string, identity bool) (*Node, error) {
	s, err := New(context.Background(), endpoint, Options{Node: node})
	if err != nil {
		return nil, err
	}
	n := &Node{Sink: s, endpoint: endpoint}
	if identity {
		logs := ratelog.New(os.Stderr, time.Minute)
		n.ids = qplife.Start(qplife.RunOptions{Node: s.Node(), Out: s, Warn: func(msg string) {
			logs.Log(ratelog.Kind(msg), "rdmatrace: "+termsafe.Sanitize(msg))
		}})
	}
	return n, nil
}

// Write sends e, and gives it to the identity records.
func (n *Node) Write(e *rdma.Event) {
	n.Sink.Write(e)
	if n.ids != nil {
		n.ids.Event(e)
	}
}

// Close sends what waits, the identity records first and then what is
// queued (10 s at most), and says on stderr what became of each.
func (n *Node) Close() {
	if n.ids != nil {
		n.ids.Close()
		fmt.Fprintln(os.Stderr, "rdmatrace: "+termsafe.Sanitize(n.ids.Summary()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slog.Info(termsafe.Sanitize(n.Sink.Close(ctx).Summary(n.endpoint)))
}
