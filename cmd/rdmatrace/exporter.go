package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
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
			"when it starts failing).\n\n" +
			"LIMITS: at most --web.max-connections connections at once, --web.max-requests scrapes\n" +
			"in flight, --web.timeout per scrape; idle connections are closed. Errors of the HTTP\n" +
			"server are logged once per kind every 10 s.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace exporter\n" +
			"   rdmatrace exporter --listen :9879 --top 20\n" +
			"   rdmatrace exporter --no-trace          # netlink only: no BPF, no root for the tracer\n" +
			"   rdmatrace exporter --otlp http://127.0.0.1:4318   # events as OTLP logs too\n" +
			"   rdmatrace exporter --listen 10.0.0.5:9879 --web.config.file /etc/rdmatrace/web.yml   # TLS, basic auth\n\n" +
			"EXIT STATUS:\n" + exitStatus("the address cannot be listened on, --web.config.file is unreadable or invalid, or the tracer cannot start (without --no-trace)", ""),
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
	x := exporter.New(netlinkSnapshot, c.Int("top"))
	x.LogTo(logs)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
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
	// The ready file names the address served on: scripts read it whole.
	o.NoTrace, o.Handle = c.Bool("no-trace"), ln.Addr().String()
	s, err := tracer.NewSession(o)
	if err != nil {
		return err
	}
	defer s.Close()
	feed, closeOTLP, err := exporterFeed(c, s, x, reg)
	if err != nil {
		return err
	}
	srv := exporter.NewServer(reg, exporter.ServeOptions{
		MaxConnections: c.Int("web.max-connections"),
		MaxRequests:    c.Int("web.max-requests"),
		Timeout:        c.Duration("web.timeout"),
		WebConfigFile:  c.String("web.config.file"),
		Log:            logs,
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln); s.Stop() }()
	if p := c.String("web.config.file"); p != "" {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on %s/metrics as %s says (TLS, basic auth)\n", ln.Addr(), formats.Sanitize(p))
	} else {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on http://%s/metrics\n", ln.Addr())
	}
	err = s.Run(tracer.Loop{Consumer: tracer.Consumer{Event: feed}})
	closeOTLP() // the last events first: the session has stopped
	select {
	case serr := <-served: // the server ended by itself
		return errors.Join(err, serr)
	default:
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(shut))
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

// exporterFeed registers the tracer's metrics and gives the exporter the
// objects that exist now, for the live table that names the holders of a
// blocked unregistration; it returns the consumer of the session's events
// (to the exporter and --otlp) and the OTLP sink's closer.
func exporterFeed(c *cli.Context, s *tracer.Session, x *exporter.Exporter, reg *prometheus.Registry) (func(*rdma.Event) error, func(), error) {
	t := s.Tracer()
	if t == nil {
		return func(*rdma.Event) error { return nil }, func() {}, nil
	}
	failed := 0
	for _, r := range t.Reports {
		if r.Variant == "" && !r.Skipped { // not a hook whose module is absent
			failed++
		}
	}
	if err := exporter.RegisterTracer(reg, t.Attached(), failed, exporter.TracerCounts{
		Drops:            func() uint64 { d, _ := t.Drops(); return d },
		PortBusyHeldBack: func() uint64 { n, _ := t.BusySuppressed(); return n },
		PortBusyDropped:  func() uint64 { n, _ := t.BusyDrops(); return n },
	}); err != nil {
		return nil, nil, err
	}
	var logs *otlp.Sink
	closeOTLP := func() {}
	if ep := c.String("otlp"); ep != "" {
		o, closer, err := openOTLP(c, ep)
		if err != nil {
			return nil, nil, err
		}
		logs, closeOTLP = o, closer
	}
	// Owners come placed in their containers: the snapshot and the
	// tracer place them.
	toTable := x.Event
	if err := snapshotEvents(s.Clock(), toTable); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	return func(e *rdma.Event) error {
		toTable(e)
		if logs != nil {
			logs.Write(e)
		}
		return nil
	}, closeOTLP, nil
}

// netlinkSnapshot is one scrape's read of the kernel; each error names
// its part (exporter.Parts) for rdmatrace_scrape_collector_success.
func netlinkSnapshot() exporter.Snapshot {
	var s exporter.Snapshot
	cl, err := nldev.Dial()
	if err != nil {
		s.Errors = append(s.Errors, &exporter.PartError{Part: exporter.PartNetlink, Err: err})
		return s
	}
	defer cl.Close()
	add := func(part string, err error) {
		if err != nil {
			s.Errors = append(s.Errors, &exporter.PartError{Part: part, Err: err})
		}
	}
	inv := cl.Inventory(nldev.InventoryOptions{Owners: enrich.New(enrich.Options{})})
	s.Devices, s.Resources, s.Unknown = inv.Devices, inv.Resources, inv.Unknown
	add("devices", inv.DevicesErr)
	var err2 error
	s.Ports, err2 = cl.Ports(s.Devices)
	add("ports", err2)
	s.Stats, err2 = cl.PortStats(s.Ports)
	add("port_stats", err2)
	for _, e := range inv.TypeErrs {
		if !errors.Is(e.Err, errors.ErrUnsupported) { // in s.Unknown
			add(exporter.ResourcesPart(e.Type), e.Err)
		}
	}
	return s
}
