package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
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
	trace := !c.Bool("no-trace")
	var parts []string
	if trace {
		parts = append(parts, exporter.PartTracer)
	}
	health := exporter.NewHealth(versionString(), buildver.Revision(), parts...)
	x.SetHealth(health)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		return err
	}
	tm := exporter.NewTracerMetrics()
	if err := reg.Register(tm); err != nil {
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
	feed, closeOTLP, err := exporterFeed(c, x)
	if err != nil {
		return err
	}
	defer closeOTLP() // after the tracer's last events
	var ready atomic.Bool
	srv := exporter.NewServer(reg, exporter.ServeOptions{
		MaxConnections: c.Int("web.max-connections"),
		MaxRequests:    c.Int("web.max-requests"),
		Timeout:        c.Duration("web.timeout"),
		WebConfigFile:  c.String("web.config.file"),
		Log:            logs,
		Ready: func() error {
			if !ready.Load() {
				return errors.New("the tracer's first start is under way")
			}
			return nil
		},
	})
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln); cancel() }()
	if p := c.String("web.config.file"); p != "" {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on %s/metrics as %s says (TLS, basic auth)\n", ln.Addr(), formats.Sanitize(p))
	} else {
		fmt.Fprintf(os.Stderr, "rdmatrace: serving metrics on http://%s/metrics\n", ln.Addr())
	}
	var readyErr error
	markReady := func() {
		ready.Store(true)
		if p := c.String("ready-file"); p != "" { // its first line is the address served on: scripts read it whole
			if err := safefile.WriteFile(p, []byte(ln.Addr().String()+"\n"), safefile.Invoker(os.Getenv)); err != nil {
				readyErr = exitWith(1, fmt.Errorf("--ready-file: %s", formats.Sanitize(err.Error())))
				cancel()
			}
		}
	}
	if trace {
		r := &exporter.Retry{
			Part:      exporter.PartTracer,
			Health:    health,
			Start:     func() (func() error, func(), error) { return startTracer(o, x, tm, feed) },
			Probe:     func() string { return tracerProbe(o.Tracer.BTF) },
			Log:       func(msg string) { fmt.Fprintln(os.Stderr, "rdmatrace: "+formats.Sanitize(msg)) },
			Attempted: markReady,
		}
		r.Run(ctx)
	} else {
		markReady()
		<-ctx.Done()
	}
	select {
	case serr := <-served: // the server ended by itself
		return errors.Join(readyErr, serr)
	default:
	}
	shut, cancelShut := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShut()
	return errors.Join(readyErr, srv.Shutdown(shut))
}

// startTracer loads and attaches the tracer for the exporter; its
// metrics are served from then until run returns. When it cannot start,
// the error says why in the preflight's and the loader's words.
func startTracer(o tracer.SessionOptions, x *exporter.Exporter, tm *exporter.TracerMetrics, feed func(*rdma.Event) error) (run func() error, stop func(), err error) {
	// What the session says while it starts is kept: a failure is said
	// once per reason by the caller, not at every try.
	out := &startWriter{}
	o.Stderr = out
	s, err := tracer.NewSession(o)
	if err != nil {
		msgs := out.lines()
		var ee *tracer.ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			msgs = append(msgs, err.Error())
		}
		return nil, nil, errors.New(formats.Sanitize(strings.Join(msgs, "; ")))
	}
	out.started(os.Stderr) // what it could not attach, and from now on its own lines
	t := s.Tracer()
	failed := 0
	for _, r := range t.Reports {
		if r.Variant == "" && !r.Skipped { // not a hook whose module is absent
			failed++
		}
	}
	tm.Attach(t.Attached(), failed, exporter.TracerCounts{
		Drops:            func() uint64 { d, _ := t.Drops(); return d },
		PortBusyHeldBack: func() uint64 { n, _ := t.BusySuppressed(); return n },
		PortBusyDropped:  func() uint64 { n, _ := t.BusyDrops(); return n },
	})
	// Owners come placed in their containers: the snapshot and the
	// tracer place them.
	if err := snapshotEvents(s.Clock(), x.Event); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	return func() error {
		err := s.Run(tracer.Loop{Consumer: tracer.Consumer{Event: feed}})
		tm.Detach() // before the close: no scrape reads a closed tracer
		return errors.Join(err, s.Close())
	}, s.Stop, nil
}

// tracerProbe is what the tracer's start depends on, cheaply: the
// preflight's problems (privileges, BTF, the RDMA modules). A change
// retries a tracer that could not start, and restarts one that started
// without some hooks. given is the BTF of --btf, if any.
func tracerProbe(given *tracer.KernelBTF) string {
	var b strings.Builder
	for _, p := range tracer.Preflight(given) {
		b.WriteString(p.Msg)
		b.WriteByte('\n')
	}
	return b.String()
}

// startWriter keeps a session's lines while it starts; once it has
// started, it passes them on.
type startWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	to  io.Writer
}

func (w *startWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to != nil {
		return w.to.Write(p)
	}
	return w.buf.Write(p)
}

// lines are the kept lines without their "rdmatrace: ".
func (w *startWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ls []string
	for l := range strings.Lines(w.buf.String()) {
		if l = strings.TrimSpace(strings.TrimPrefix(l, "rdmatrace: ")); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// started writes the kept lines to to, and every line after them.
func (w *startWriter) started(to io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = to.Write(w.buf.Bytes())
	w.buf.Reset()
	w.to = to
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
// and --otlp), and the OTLP sink's closer.
func exporterFeed(c *cli.Context, x *exporter.Exporter) (func(*rdma.Event) error, func(), error) {
	var logs *otlp.Sink
	closeOTLP := func() {}
	if ep := c.String("otlp"); ep != "" {
		o, closer, err := openOTLP(c, ep)
		if err != nil {
			return nil, nil, err
		}
		logs, closeOTLP = o, closer
	}
	return func(e *rdma.Event) error {
		x.Event(e)
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
