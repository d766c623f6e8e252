package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/analysis/why/live"
	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, whyCommand()) }

func whyCommand() *cli.Command {
	return &cli.Command{
		Name:  "why",
		Usage: "list what went wrong with a process's, container's or QP's RDMA objects, in words",
		Description: "Reads a recording (trace -w) or traces live, and lists in time order each failure of\n" +
			"the selected owner's objects: rdma_cm steps that failed (a reject, no listener, no route,\n" +
			"no answer to ARP), connect and resolve steps that got no answer before their ID was\n" +
			"destroyed or within --no-answer, QPs moved to ERR or SQE, ports taken, destroys the\n" +
			"driver refused, SMC fallbacks and link failures. Each line has the time, the object,\n" +
			"its owner, the peer where known and the sentence.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace why --pid 1234 -r rec.ndjson        # what went wrong for pid 1234 in a recording\n" +
			"   rdmatrace why --container 3f2a -r rec.ndjson.gz\n" +
			"   rdmatrace why --qpn 17 -r rec.ndjson -j       # one QP and the rdma_cm ID that made it, NDJSON\n" +
			"   rdmatrace why --pid 1234 --duration 60s       # live, for a minute\n" +
			"   rdmatrace why --pod 5d1c0f3e --no-answer 5s   # live: also steps unanswered for 5 s\n" +
			"   rdmatrace why --pid 1234 -r rec.ndjson --log dmesg-T.txt   # with mlx5's QP error syndromes from the kernel log\n" +
			"   rdmatrace why --comm train.py --store http://vlogs:9428   # each failed QP's peer named: node, owner, fate\n\n" +
			"EXIT STATUS:\n" + exitStatus("nothing could be attached; a recording or log could not be read, or has lines not understood;\n"+
			"      or none of the QP error syndromes of the --log files could be joined with a QP of the recording\n"+
			"      (the lines before say why)", "",
			"130  a second Ctrl-C (128 + the signal): exited at once"),
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "one JSON object a failure (NDJSON; same as -o ndjson)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outText, Usage: "output `FORMAT`: text, json (one array) or ndjson"},
			&cli.StringFlag{Name: "pid", Aliases: []string{"p"}, Usage: "only objects owned by these PIDs (comma list, ranges)"},
			&cli.StringFlag{Name: "container", Usage: "only objects whose owner is in these containers (ids or their first characters)"},
			&cli.StringFlag{Name: "pod", Usage: "only objects whose owner is in these Kubernetes pods (comma list of pod `UID`s, or NAMESPACE/NAME where the node's pod logs name them)"},
			&cli.StringFlag{Name: "job", Usage: "only objects whose owner is in these Slurm jobs (comma list of job `ID`s, or JOB.STEP)"},
			&cli.StringFlag{Name: "comm", Usage: "only objects whose owner has one of these names (comma list)"},
			&cli.UintFlag{Name: "qpn", Usage: "only the QP with this `N`umber and the rdma_cm ID that created it"},
			&cli.DurationFlag{Name: "no-answer", Usage: "also list an rdma_cm step unanswered after this long (0: only when its ID is destroyed unanswered or the run ends)"},
			&cli.StringFlag{Name: "read", Aliases: []string{"r"}, Usage: "read a recording from `FILE` (- for stdin; compressed ones too) instead of tracing"},
			&cli.StringSliceFlag{Name: "log", Usage: "with -r: also list the QP error syndromes mlx5 logged in this kernel log (`FILE`: dmesg -T or journalctl text place them on the recording's clock; dmesg's time since boot only where the QP number is unique), with the owner of the recording's QP"},
			&cli.StringFlag{Name: "store", EnvVars: []string{"RDMATRACE_STORE"}, Usage: "name each failed QP's peer on its node (owner, pod, fate) from the fleet's log store at `URL` (VictoriaLogs: http://HOST:9428), where the nodes' trace or exporter --otlp --node send their records"},
			&cli.StringFlag{Name: "node", Usage: "with --store: the `NAME` this node's records carry (its --node; default: the host name); with -r, the node that recorded"},
			maxInputFlag,
			durationFlag,
			readyFileFlag("once every available hook is attached"),
			ringSizeFlag,
			fallbackFlag,
			btfFlag,
			pollFlag,
			verboseFlag,
		},
		Action: runWhy,
	}
}

func runWhy(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return usagef("unexpected argument %q: the owner is chosen with --pid, --container, --pod, --comm or --qpn", c.Args().First())
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	o, err := whyOptions(c)
	if err != nil {
		return err
	}
	format, err := streamOptions(c, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON)
	if err != nil {
		return err
	}
	sink := formats.NewWhySink(os.Stdout, format)
	an := why.New(o)
	logs := c.StringSlice("log")
	if path := c.String("read"); path != "" {
		if err := lineio.StdinOnce(append([]string{path}, logs...), "give it to -r or to one --log"); err != nil {
			return usagef("%w", err)
		}
		err = why.ReadRecording(an, why.RecordingOptions{Recording: path, Logs: logs, Stdin: os.Stdin, MaxInput: maxInputOptions(c),
			Warn: func(line string) { fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", line) }}, sink)
		if err != nil {
			err = exitWith(1, err) // what it says went wrong is exit status 1
		}
	} else if len(logs) > 0 {
		err = usagef("--log needs a recording (-r FILE): a kernel log's QP errors are joined with the QPs it recorded")
	} else {
		var so tracer.SessionOptions
		if so, err = sessionOptions(c, nil); err == nil {
			err = live.Run(an, live.Options{Session: so, Window: reorderWindow, Tick: tickInterval}, sink)
		}
	}
	return closeWhy(sink, format, err)
}

// closeWhy ends why's output. A run that failed ends the human view with
// its error alone: "nothing went wrong" would say it looked and found
// nothing. A JSON array is still closed.
func closeWhy(sink formats.Sink[why.Line], format formats.Format, err error) error {
	if err != nil && format == formats.FormatText {
		_ = sink.Flush()
		return err
	}
	if cerr := sink.Close(); err == nil {
		err = cerr
	}
	return err
}

// whyOptions are the analysis's choices: the owner (--pid, --comm,
// --container, --pod), --qpn and --no-answer.
func whyOptions(c *cli.Context) (why.Options, error) {
	if c.Duration("no-answer") < 0 {
		return why.Options{}, usagef("--no-answer %v: expected a positive duration such as 5s", c.Duration("no-answer"))
	}
	f, err := whyFilterOptions(c)
	if err != nil {
		return why.Options{}, usagef("%w", err)
	}
	o := why.Options{Match: f.Match, Wait: c.Duration("no-answer")}
	if u := c.String("store"); u != "" {
		if o.NamePeer, err = peer.NamePeer(peer.WhyOptions{Store: u, Node: c.String("node"), Live: c.String("read") == ""}); err != nil {
			return o, usagef("--store: %w", err)
		}
	} else if c.IsSet("node") {
		return o, usagef("--node names this node in the log store: it goes with --store URL")
	}
	if c.IsSet("qpn") {
		if c.Uint("qpn") > 1<<24-1 {
			return o, usagef("--qpn %d: a QP number has 24 bits", c.Uint("qpn"))
		}
		o.QPN, o.HasQPN = uint32(c.Uint("qpn")), true
	}
	return o, nil
}

// whyFilterOptions are the owner selection: --pid, --comm, --container,
// --job and --pod, through trace's filter.
func whyFilterOptions(c *cli.Context) (*filter.Events, error) {
	var words []string
	for _, k := range []string{"pid", "comm", "container", "job"} {
		if v := c.String(k); v != "" {
			words = append(words, k, v)
		}
	}
	if v := c.String("pod"); v != "" {
		words = append(words, "pod", v)
	}
	return filter.ParseEvents(words)
}
