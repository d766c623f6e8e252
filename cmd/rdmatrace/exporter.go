package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/buildver"
	"github.com/rdmatrace/rdmatrace/internal/fleet/exporter"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
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
			"LIMITS: at most --web.max-connections connections at once: at the cap, the one idle\n" +
			"longest is closed for the newcomer (rdmatrace_http_connections_shed_total, logged), so\n" +
			"nobody keeps a scrape or a probe out by holding connections open; a connection is closed\n" +
			"after 100 requests or a minute. --web.max-requests scrapes in flight, --web.timeout per\n" +
			"scrape (its read of the kernel stops then). --web.probe-listen serves /healthz and /readyz\n" +
			"alone on an address of their own. --listen unix:PATH serves on a unix socket only root can\n" +
			"connect to. Errors of the HTTP server are logged once per kind every 10 s.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace exporter\n" +
			"   rdmatrace exporter --listen :9879 --top 20\n" +
			"   rdmatrace exporter --no-trace          # netlink only: no BPF, no root for the tracer\n" +
			"   rdmatrace exporter --listen unix:/run/rdmatrace/metrics.sock --web.probe-listen 127.0.0.1:9880\n" +
			"   rdmatrace exporter --otlp http://127.0.0.1:4318   # events as OTLP logs too\n" +
			"   rdmatrace exporter --listen 10.0.0.5:9879 --web.config.file /etc/rdmatrace/web.yml   # TLS, basic auth\n\n" +
			"EXIT STATUS:\n" + exitStatus("the address cannot be listened on, or --web.config.file is unreadable or invalid (not when the tracer cannot start: it is retried)", ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "serve /metrics on `ADDR`: HOST:PORT, or unix:PATH (a socket only root can connect to)"},
			&cli.StringFlag{Name: "web.probe-listen", Usage: "serve /healthz and /readyz alone on `ADDR` too (HOST:PORT or unix:PATH): the probes' own way in"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "owners per device and type with their own series"},
			&cli.BoolFlag{Name: "no-trace", Usage: "serve only what netlink says (no event counters)"},
			ringSizeFlag,
			fallbackFlag,
			btfFlag,
			readyFileFlag("once serving"),
			&cli.StringFlag{Name: "web.config.file", Usage: "TLS and basic auth from `FILE`, the exporter-toolkit web configuration every Prometheus exporter reads (tls_server_config, basic_auth_users)"},
			&cli.IntFlag{Name: "web.max-connections", Value: exporter.DefaultMaxConnections, Usage: "hold `N` connections at once; at the cap, the one idle longest is closed for a new one"},
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
	o, err := exporterOptions(c)
	if err != nil {
		return err
	}
	if o.Tracer != nil && c.IsSet("otlp") {
		// The node's identity records go with the events; the delivery's
		// counts are served with the metrics.
		n, err := startOTLP(c.String("otlp"), c.String("node"), true)
		if err != nil {
			return err
		}
		defer n.Close() // after the tracer's last events
		o.Collectors = append(o.Collectors, n.Sink.Collector())
		o.Also = n.Write
	}
	return serveMetrics(o, c.String("ready-file"))
}

// serveMetrics is exporter.Run on the run lifecycle: its signals, and the
// ready file once the exporter serves and has tried the tracer, which
// says the address it serves on.
func serveMetrics(o exporter.Options, readyFile string) error {
	var addr string
	run, err := lifecycle.Start(context.Background(), lifecycle.Options{ReadyFile: readyFile, ReadyLater: true,
		Ready: func() string { return addr + "\n" }})
	if err != nil {
		return err
	}
	o.Ready = func(served string) error { addr = served; return run.MarkReady() }
	err = exporter.Run(run.Context(), o)
	if err = errors.Join(err, run.End()); err != nil {
		return exitWith(1, err)
	}
	return nil
}

// exporterOptions checks the exporter's flags and makes its options.
func exporterOptions(c *cli.Context) (exporter.Options, error) {
	if err := checkExporterFlags(c); err != nil {
		return exporter.Options{}, err
	}
	o := exporter.Options{
		Listen:      c.String("listen"),
		ProbeListen: c.String("web.probe-listen"),
		Top:         c.Int("top"),
		Version:     versionString(),
		Revision:    buildver.Revision(),
		Serve: exporter.ServeOptions{
			MaxConnections: c.Int("web.max-connections"),
			MaxRequests:    c.Int("web.max-requests"),
			Timeout:        c.Duration("web.timeout"),
			WebConfigFile:  c.String("web.config.file"),
		},
		Source: func(ctx context.Context, count func(*rdma.Resource)) rdma.NodeState {
			return nldev.ReadNodeState(ctx, enrich.New(enrich.Options{}), count)
		},
	}
	if c.Bool("no-trace") {
		return o, nil
	}
	so, err := sessionOptions(c, nil)
	if err != nil {
		return o, err
	}
	// The run's ready file is the exporter's: written once it serves and
	// has tried the tracer once, whether the tracer started.
	so.ReadyFile = ""
	o.UIDOf = (&proc.CommCache{}).UID
	o.Tracer = &exporter.TracerPart{
		Start: func() (exporter.Tracer, error) {
			s, err := tracer.StartSession(so)
			if err != nil {
				return nil, err
			}
			return exporterTracer{s}, nil
		},
		Snapshot: func(ctx context.Context, emit func(*rdma.Event)) error {
			_, err := nldev.ExistsEvents(ctx, enrich.New(enrich.Options{}), nldev.ExistsOptions{Max: exporter.LiveTableSize,
				Keep: func(e *rdma.Event) bool { emit(e); return true }})
			return err
		},
		Probe: func() string { return tracer.PreflightText(so.Tracer.BTF) },
	}
	return o, nil
}

// exporterTracer is a tracer session as the exporter runs it.
type exporterTracer struct{ s *tracer.Session }

func (t exporterTracer) Run(consume func(*rdma.Event) error) error {
	return t.s.Run(tracer.Loop{Consumer: tracer.Consumer{Event: consume}})
}
func (t exporterTracer) Stop()        { t.s.Stop() }
func (t exporterTracer) Close() error { return t.s.Close() }
func (t exporterTracer) Health() (int, int, exporter.TracerCounts) {
	tr := t.s.Tracer()
	return tr.Attached(), t.s.HooksFailed(), exporter.TracerCounts{
		Drops:            func() uint64 { d, _ := tr.Drops(); return d },
		PortBusyHeldBack: func() uint64 { n, _ := tr.BusySuppressed(); return n },
		PortBusyDropped:  func() uint64 { n, _ := tr.BusyDrops(); return n },
	}
}

// checkExporterFlags checks the exporter's flags before anything starts.
func checkExporterFlags(c *cli.Context) error {
	if c.Int("top") < 0 {
		return usagef("--top %d: expected 0 or more", c.Int("top"))
	}
	if c.Bool("no-trace") && c.IsSet("otlp") {
		return usagef("--otlp sends the tracer's events: not with --no-trace")
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	for _, f := range []string{"web.max-connections", "web.max-requests"} {
		if c.Int(f) < 1 {
			return usagef("--%s %d: expected 1 or more", f, c.Int(f))
		}
	}
	if c.Duration("web.timeout") <= 0 {
		return usagef("--web.timeout %s: expected a duration above 0", c.Duration("web.timeout"))
	}
	if p := c.String("web.config.file"); p != "" {
		if err := exporter.CheckWebConfig(p); err != nil {
			return exitWith(1, errors.New(formats.Sanitize(err.Error())))
		}
	}
	return nil
}
