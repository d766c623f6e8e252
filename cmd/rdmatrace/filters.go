package main

import (
	"errors"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
)

// filterUsage says what each --filter-KEY takes.
var filterUsage = map[string]string{
	"pid":       "only objects owned by these PIDs (comma list, ranges: 1234,2000-2100)",
	"comm":      "only objects whose owner has one of these names (comma list; kernel module names too)",
	"dev":       "only these devices (comma list)",
	"res":       "only these resource types (qp, cm_id, cq, mr, pd, ctx, srq)",
	"event":     "only these events (create, destroy, modify, cm_event_handler, ..., cm, cm-error or failure)",
	"cgroup":    "only objects whose owner is in these cgroup v2 paths or below them (comma list: /kubepods.slice)",
	"container": "only objects whose owner is in these containers (comma list of ids or their first characters)",
	"pod":       "only objects whose owner is in these Kubernetes pods (comma list of pod UIDs, or NAMESPACE/NAME where the node's pod logs name them)",
	"job":       "only objects whose owner is in these Slurm jobs (comma list of job ids, or JOB.STEP)",
}

// filterAliases are the --filter-KEY flags' short names.
var filterAliases = map[string]string{"pod": "pod", "job": "job"}

// filterFlags are the --filter-KEY flags for keys (and --pid, -p with
// pidShort, as in bpftrace and ptcpdump): the same words as the iproute2
// form KEY VALUE, through the same parser.
func filterFlags(pidShort bool, keys ...string) []cli.Flag {
	var fs []cli.Flag
	for _, k := range keys {
		f := &cli.StringFlag{Name: "filter-" + k, Usage: filterUsage[k]}
		if a, ok := filterAliases[k]; ok {
			f.Aliases = []string{a}
		}
		fs = append(fs, f)
	}
	pid := &cli.StringFlag{Name: "pid", Usage: "same as --filter-pid"}
	if pidShort {
		pid.Aliases = []string{"p"}
	}
	return append(fs, pid)
}

// filterOptions turns the --filter-KEY and --pid flags that were given
// into iproute2's KEY VALUE words, after words.
func filterOptions(c *cli.Context, words []string, keys ...string) []string {
	out := append([]string{}, words...)
	for _, k := range keys {
		if v := c.String("filter-" + k); v != "" {
			out = append(out, k, v)
		}
	}
	if v := c.String("pid"); v != "" {
		out = append(out, "pid", v)
	}
	return out
}

// eventFilterOptions read trace's and leaks' event filter: positional
// words (`qp pid 1234 comm rping`), --filter-KEY flags and --kernel-only
// or --user-only.
func eventFilterOptions(c *cli.Context, words []string, keys ...string) (*filter.Events, error) {
	f, err := filter.ParseEvents(filterOptions(c, words, keys...))
	if err != nil {
		return nil, err
	}
	f.KernelOnly, f.UserOnly = c.Bool("kernel-only"), c.Bool("user-only")
	if f.KernelOnly && f.UserOnly {
		return nil, errors.New("--kernel-only and --user-only exclude each other")
	}
	return f, nil
}

// filterHelp documents the filters once, for every command's help.
func filterHelp(keys ...string) string {
	return "FILTERS: KEY VALUE words, as iproute2's rdma takes them, or --filter-KEY VALUE\n" +
		"   (keys: " + strings.Join(keys, ", ") + "); numbers take comma lists and ranges\n" +
		"   (pid 1234,2000-2100), names take comma lists (comm rping,ib_srpt).\n"
}

// streamOutputFlags are -j and -o of the streams (trace, parse): -j is
// one JSON object a line (NDJSON), so that a consumer can read it as it
// comes, as -o ndjson; -o json is an array, as everywhere.
func streamOutputFlags(jsonUsage, formats string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: jsonUsage},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outText,
			Usage: "output `FORMAT`: " + formats},
	}
}

// streamDetailsFlag is -d of trace and leaks: accepted as everywhere, for
// iproute2's habit; their human view already shows every field it has.
var streamDetailsFlag = &cli.BoolFlag{Name: "details", Aliases: []string{"d"},
	Usage: "accepted as in iproute2 (-dd too); the human view shows every field already, -j has them all"}

// streamOptions are a stream's -o and -j (NDJSON), through the one -o
// parser: valid, the first the default.
func streamOptions(c *cli.Context, valid ...formats.Format) (formats.Format, error) {
	name := c.String("output")
	if name == outTable && !slices.Contains(valid, formats.FormatTable) {
		name = outText // trace's human view was -o table too
	}
	f, err := formats.ParseFormat(name, c.Bool("json"), formats.FormatNDJSON, valid...)
	if err != nil {
		return "", usagef("%w", err)
	}
	return f, nil
}
