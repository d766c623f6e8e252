package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// The flags of a tracing session (tracer.Session), declared once for
// trace, leaks and the exporter.
var (
	durationFlag = &cli.DurationFlag{Name: "duration", Usage: "stop after this long (-d is --details, as in iproute2)"}
	ringSizeFlag = &cli.IntFlag{Name: "ring-size", Usage: "ring buffer size in bytes (a power of two)", DefaultText: "8 MiB a CPU online, from 16 to 64 MiB"}
	fallbackFlag = &cli.BoolFlag{Name: "fallback", Usage: "use kprobes and raw tracepoints instead of fentry/fexit/tp_btf"}
	// verboseFlag asks for each hook's attach report.
	verboseFlag = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say how each hook was attached, or why it was not"}
	// userFlag chooses who runs -- CMD, for every command that runs one.
	userFlag = &cli.StringFlag{Name: "user", Usage: "with -- CMD: run CMD as `USER` (name or uid; default: the user who ran sudo, or doas, else rdmatrace's own)"}
	// btfFlag reads BTF from elsewhere than /sys/kernel/btf
	// (tracer.LoadBTF).
	btfFlag = &cli.StringSliceFlag{Name: "btf", Usage: "read the kernel's or an RDMA module's BTF from `PATH`, for a kernel or module that has none (repeat it): " +
		"the kernel's (vmlinux), a module's named after it (ib_core, rdma_cm, ...), or a directory of these as /sys/kernel/btf holds them"}
	pollFlag = &cli.DurationFlag{Name: "poll", Value: 20 * time.Millisecond, Usage: "while events flow, read them every `DURATION` (a quarter-full ring wakes the reader sooner): longer costs less CPU and shows events later"}
)

// readyFileFlag is --ready-file; when says when the file is made.
func readyFileFlag(when string) cli.Flag {
	return &cli.StringFlag{Name: "ready-file", Usage: "create `PATH` " + when}
}

// checkTracerFlags checks the session's flags, before anything is loaded.
func checkTracerFlags(c *cli.Context) error {
	if d := c.Duration("duration"); d < 0 {
		return usagef("--duration %v: expected a positive duration such as 30s (0: no limit)", d)
	}
	if err := tracer.CheckRingSize(c.Int("ring-size")); c.IsSet("ring-size") && err != nil {
		return usagef("--ring-size %d: %w", c.Int("ring-size"), err)
	}
	if p := c.Duration("poll"); p < 0 || p > time.Minute {
		return usagef("--poll %v: expected a duration up to a minute, such as 250ms", p)
	}
	for _, p := range c.IntSlice("follow-pid") {
		if p <= 0 {
			return exitWith(2, fmt.Errorf("--follow-pid %d: expected a process ID", p))
		}
	}
	return nil
}

// sessionOptions are the session's flags as c has them, with argv to run.
func sessionOptions(c *cli.Context, argv []string) (tracer.SessionOptions, error) {
	o := tracer.SessionOptions{
		NeedsRoot: needsRoot(c.Command.Name),
		Tracer:    tracer.Options{RingBytes: c.Int("ring-size"), Fallback: c.Bool("fallback"), Poll: c.Duration("poll")},
		Verbose:   c.Bool("verbose"),
		Argv:      argv,
		Duration:  c.Duration("duration"),
		Count:     uint64(c.Int("count")),
		ReadyFile: c.String("ready-file"),
	}
	for _, p := range c.IntSlice("follow-pid") {
		o.Tracer.Follow = append(o.Tracer.Follow, uint32(p))
	}
	if paths := c.StringSlice(btfFlag.Name); len(paths) > 0 && !c.Bool("no-trace") {
		kb, err := tracer.LoadBTF(paths)
		if err != nil {
			return o, usagef("%w", err)
		}
		o.Tracer.BTF = kb
	}
	if len(argv) > 0 {
		id, err := programUser(c.String(userFlag.Name))
		if err != nil {
			return o, err
		}
		o.User = id
	}
	return o, nil
}

// programUser is who runs -- CMD: --user, else the user who invoked
// rdmatrace (launch.ChooseUser).
func programUser(name string) (*launch.Identity, error) {
	id, err := launch.ChooseUser(name, os.Getenv, os.Geteuid(), launch.SystemUsers{})
	if err != nil {
		return nil, exitWith(2, err)
	}
	return id, nil
}
