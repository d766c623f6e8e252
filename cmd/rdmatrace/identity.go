package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/qplife"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
)

// nodeFlag names the node in --otlp's records (trace, exporter).
var nodeFlag = &cli.StringFlag{Name: "node", Usage: "with --otlp: the node's `NAME` in its records (host.name; default: the host name; the Kubernetes node's name in a DaemonSet), which `rdmatrace peer` finds it by"}

// startIdentity starts --otlp's identity records of the node's QPs and
// GID tables (qplife), sent through sink: the traced events go to the
// Runner; its closer sends what waits and says what was sent.
func startIdentity(sink *otlp.Sink) (*qplife.Runner, func()) {
	logs := ratelog.New(os.Stderr, time.Minute)
	r := qplife.Start(qplife.RunOptions{Node: sink.Node(), Out: sink, Warn: func(msg string) {
		logs.Log(ratelog.Kind(msg), "rdmatrace: "+formats.Sanitize(msg))
	}})
	return r, func() {
		r.Close()
		fmt.Fprintln(os.Stderr, "rdmatrace: "+formats.Sanitize(r.Summary()))
	}
}
