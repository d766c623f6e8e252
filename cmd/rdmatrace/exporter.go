package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/qplife"
	"github.com/rdmatrace/rdmatrace/internal/base/buildver"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/fleet/exporter"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, exporterCommand()) }

// defaultListen is loopback (metrics name processes: not for every
// network) on 9879, in Prometheus' exporter range. The wiki's allocation
// list is full today; 9879 is in none of the copies we could read. Set
// --listen where it clashes.
const defaultListen = "127.0.0.1:9879"

func exporterCommand() *cli.Command {
	return &cli.Command{
		Name:  "exporter",
		Usage: "serve RDMA metrics to Prometheus (/metrics): live objects, port counters, and counts of traced events",
		Description: "At each scrape, reads netlink: rdma_resources{device,type}, rdma_qps{device,state},\n" +
			"rdma_resources_by_owner{device,type,owner,container} (the --top owners per device and\n" +
			"type, the rest as owner=\"other\": at most devices x 7 types x (top+1) series),\n" +
			"rdma_port_active, rdma_port_stat_total{stat}. From the tracer (unless --no-trace):\n" +
			"rdma_resource_creates_total, rdma_resource_destroys_total, rdma_qp_transitions_total{state},\n" +
			"rdma_cm_events_total{event,status}, rdma_cm_connection_setup_seconds,\n" +
			"rdma_qp_lifetime_seconds, rdma_device_unregister_blocked_seconds{device,by} and\n" +
			"rdma_device_unregister_holders{device,owner,container} while a device cannot unregister,\n" +
			"rdmatrace_hooks{state}, rdmatrace_events_dropped_total, and\n" +
			"rdmatrace_scrape_collector_success{collector} (0: that part could not be read; why is logged\n" +
			"when it starts failing). rdmatrace_build_info{version,revision,goversion}, and\n" +
			"rdmatrace_part_up{part} for netlink and the tracer.\n\n" +
			"ON EVERY NODE: when the tracer cannot start (no RDMA stack loaded, no module BTF, no\n" +
			"privileges for BPF, a program the verifier refuses), the exporter serves what netlink\n" +
			"says, with rdmatrace_part_up{part=\"tracer\"} 0, and tries the tracer again: at once when\n" +
			"the system changes (a module loaded), else after 1 s, doubled up to 1 min. Each change is\n" +
			"logged once. Without RDMA netlink at all it serves rdmatrace_part_up{part=\"netlink\"} 0.\n" +
			"/healthz answers 200 while it serves (a liveness probe's); /readyz once the tracer was\n" +
			"tried (and --ready-file is then written).\n\n" +
			"LIMITS: at most --web.max-connections connections at once, --web.max-requests scrapes\n" +
			"in flight, --web.timeout per scrape; idle connections are closed. Errors of the HTTP\n" +
			"server are logged once per kind every 10 s.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace exporter\n" +
			"   rdmatrace exporter --listen :9879 --top 20\n" +
			"   rdmatrace exporter --no-trace          # netlink only: no BPF, no root for the tracer\n" +
			"   rdmatrace exporter --otlp http://127.0.0.1:4318   # events as OTLP logs too\n" +
			"   rdmatrace exporter --listen 10.0.0.5:9879 --web.config.file /etc/rdmatrace/web.yml   # TLS, basic auth\n\n" +
			"EXIT STATUS:\n" + exitStatus("the address cannot be listened on, or --web.config.file is unreadable or invalid (not when the tracer cannot start: it is retried)", ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "serve /metrics on `ADDR`"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "owners per device and type with their own series"},
			&cli.BoolFlag{Name: "no-trace", Usage: "serve only what netlink says (no event counters)"},
			ringSizeFlag,
			fallbackFlag,
			btfFlag,
			readyFileFlag("once serving"),
			&cli.StringFlag{Name: "web.config.file", Usage: "TLS and basic auth from `FILE`, the exporter-toolkit web configuration every Prometheus exporter reads (tls_server_config, basic_auth_users)"},
			&cli.IntFlag{Name: "web.max-connections", Value: exporter.DefaultMaxConnections, Usage: "accept `N` connections at once; the others wait in the listen queue"},
			&cli.IntFlag{Name: "web.max-requests", Value: exporter.DefaultMaxRequests, Usage: "serve `N` scrapes at once; the others are answered 503"},
			&cli.DurationFlag{Name: "web.timeout", Value: exporter.DefaultTimeout, Usage: "answer 503 to a scrape still running after `DURATION` (a connection idle between scrapes is closed after 30s, one that sends no request after 5s)"},
			otlpFlag,
			nodeFlag,
			verboseFlag,
		},
		Action: runExporter,
	}
}

func runExporter(c *cli.Context) error {
	if err := checkExporterFlags(c); err != nil {
		return err
	}
	logs := ratelog.New(os.Stderr, 10*time.Second)
	m, err := newExporterMetrics(c, logs)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return exitWith(1, fmt.Errorf("listen on %s: %w (--listen sets another address)", c.String("listen"), err))
	}
	defer ln.Close()
	o, err := sessionOptions(c, nil)
	if err != nil {
		return err
	}
	// The exporter writes the ready file itself: it is ready once it
	// serves and has tried the tracer once, whether the tracer started.
	o.ReadyFile = ""
	feed, closeOTLP, err := exporterFeed(c, m)
	if err != nil {
		return err
	}
	defer closeOTLP() // after the tracer's last events
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ready := &exporterReady{path: c.String("ready-file"), addr: ln.Addr().String(), cancel: cancel}
	srv := exporterServer(c, m.reg, logs, ready.check)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln); cancel() }()
	sayServing(ln.Addr(), c.String("web.config.file"))
	if m.trace {
		tracerRetry(o, m, feed, ready.mark).Run(ctx)
	} else {
		ready.mark()
		<-ctx.Done()
	}
	select {
	case serr := <-served: // the server ended by itself
		return errors.Join(ready.err, serr)
	default:
	}
	shut, cancelShut := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShut()
	return errors.Join(ready.err, srv.Shutdown(shut))
}

// exporterServer is the HTTP server of /metrics, /healthz and /readyz
// (ready answers the latter), within --web.*'s limits.
func exporterServer(c *cli.Context, reg *prometheus.Registry, logs *ratelog.Logger, ready func() error) *exporter.Server {
	return exporter.NewServer(reg, exporter.ServeOptions{
		MaxConnections: c.Int("web.max-connections"),
		MaxRequests:    c.Int("web.max-requests"),
		Timeout:        c.Duration("web.timeout"),
		WebConfigFile:  c.String("web.config.file"),
		Log:            logs,
		Ready:          ready,
	})
}

// sayServing says on stderr where the metrics are served, and how when
// webConfig (--web.config.file) sets TLS or basic auth.
func sayServing(addr net.Addr, webConfig string) {
	if webConfig != "" {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on %s/metrics as %s says (TLS, basic auth)\n", addr, formats.Sanitize(webConfig))
	} else {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on http://%s/metrics\n", addr)
	}
}

// exporterMetrics are what the exporter serves: netlink's view at each
// scrape (x), the tracer's counts (tm) and the parts' health, in one
// registry.
type exporterMetrics struct {
	x      *exporter.Exporter
	tm     *exporter.TracerMetrics
	health *exporter.Health
	reg    *prometheus.Registry
	trace  bool // not --no-trace
}

func newExporterMetrics(c *cli.Context, logs *ratelog.Logger) (*exporterMetrics, error) {
	m := &exporterMetrics{x: exporter.New(readNodeState, c.Int("top")), tm: exporter.NewTracerMetrics(),
		reg: prometheus.NewRegistry(), trace: !c.Bool("no-trace")}
	m.x.LogTo(logs)
	var parts []string
	if m.trace {
		parts = append(parts, exporter.PartTracer)
	}
	m.health = exporter.NewHealth(versionString(), buildver.Revision(), parts...)
	m.x.SetHealth(m.health)
	if err := m.x.Register(m.reg); err != nil {
		return nil, err
	}
	return m, m.reg.Register(m.tm)
}

// exporterReady is /readyz's answer and --ready-file: ready once the
// tracer was tried (or is not to be); the file's first line is the
// address served on, which scripts read whole.
type exporterReady struct {
	ready  atomic.Bool
	path   string
	addr   string
	cancel func() // ends the run when the file cannot be written
	err    error
}

func (r *exporterReady) check() error {
	if !r.ready.Load() {
		return errors.New("the tracer's first start is under way")
	}
	return nil
}

func (r *exporterReady) mark() {
	r.ready.Store(true)
	if r.path == "" {
		return
	}
	if err := safefile.WriteFile(r.path, []byte(r.addr+"\n"), safefile.Invoker(os.Getenv)); err != nil {
		r.err = exitWith(1, fmt.Errorf("--ready-file: %s", formats.Sanitize(err.Error())))
		r.cancel()
	}
}

// tracerRetry keeps the tracer running for the exporter: retried when it
// cannot start, restarted when the preflight's findings change, each
// change said once.
func tracerRetry(o tracer.SessionOptions, m *exporterMetrics, feed func(*rdma.Event) error, attempted func()) *exporter.Retry {
	return &exporter.Retry{
		Part:      exporter.PartTracer,
		Health:    m.health,
		Start:     func() (func() error, func(), error) { return startTracer(o, m.x, m.tm, feed) },
		Probe:     func() string { return tracer.PreflightText(o.Tracer.BTF) },
		Log:       func(msg string) { fmt.Fprintln(os.Stderr, "rdmatrace: "+formats.Sanitize(msg)) },
		Attempted: attempted,
	}
}

// startTracer loads and attaches the tracer for the exporter; its
// metrics are served from then until run returns. When it cannot start,
// the error says why in the preflight's and the loader's words.
func startTracer(o tracer.SessionOptions, x *exporter.Exporter, tm *exporter.TracerMetrics, feed func(*rdma.Event) error) (run func() error, stop func(), err error) {
	s, err := tracer.StartSession(o)
	if err != nil {
		return nil, nil, err
	}
	t := s.Tracer()
	tm.Attach(t.Attached(), s.HooksFailed(), exporter.TracerCounts{
		Drops:            func() uint64 { d, _ := t.Drops(); return d },
		PortBusyHeldBack: func() uint64 { n, _ := t.BusySuppressed(); return n },
		PortBusyDropped:  func() uint64 { n, _ := t.BusyDrops(); return n },
	})
	// Owners come placed in their containers: the snapshot and the
	// tracer place them. The snapshot goes to the feed: --otlp's
	// identity records begin with the QPs that exist.
	if err := snapshotEvents(func(e *rdma.Event) { _ = feed(e) }); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	return func() error {
		err := s.Run(tracer.Loop{Consumer: tracer.Consumer{Event: feed}})
		tm.Detach() // before the close: no scrape reads a closed tracer
		return errors.Join(err, s.Close())
	}, s.Stop, nil
}

// checkExporterFlags checks the exporter's flags before anything starts.
func checkExporterFlags(c *cli.Context) error {
	if c.Int("top") < 0 {
		return usage(c, "--top %d: expected 0 or more", c.Int("top"))
	}
	if c.Bool("no-trace") && c.IsSet("otlp") {
		return usage(c, "--otlp sends the tracer's events: not with --no-trace")
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	for _, f := range []string{"web.max-connections", "web.max-requests"} {
		if c.Int(f) < 1 {
			return usage(c, "--%s %d: expected 1 or more", f, c.Int(f))
		}
	}
	if c.Duration("web.timeout") <= 0 {
		return usage(c, "--web.timeout %s: expected a duration above 0", c.Duration("web.timeout"))
	}
	if p := c.String("web.config.file"); p != "" {
		if err := exporter.CheckWebConfig(p); err != nil {
			return exitWith(1, errors.New(formats.Sanitize(err.Error())))
		}
	}
	return nil
}

// exporterFeed is the consumer of the tracer's events (to the exporter
// and --otlp with the node's identity records), and the OTLP sink's
// closer; the delivery's counts are served with the metrics.
func exporterFeed(c *cli.Context, m *exporterMetrics) (func(*rdma.Event) error, func(), error) {
	var logs *otlp.Sink
	var ids *qplife.Runner
	closeOTLP := func() {}
	if ep := c.String("otlp"); ep != "" {
		o, closer, err := openOTLP(c, ep)
		if err != nil {
			return nil, nil, err
		}
		if err := m.reg.Register(o.Collector()); err != nil {
			return nil, nil, err
		}
		var closeIDs func()
		ids, closeIDs = startIdentity(o)
		logs, closeOTLP = o, func() { closeIDs(); closer() }
	}
	return func(e *rdma.Event) error {
		m.x.Event(e)
		if logs != nil {
			logs.Write(e)
			ids.Event(e)
		}
		return nil
	}, closeOTLP, nil
}

// readNodeState is a scrape's read of the kernel, owners named and placed.
func readNodeState() rdma.NodeState {
	return nldev.ReadNodeState(enrich.New(enrich.Options{}))
}
