package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// parseSize reads a size as perftest's users write it: 2, 4096, 4K, 1M, 1G
// (powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	if n := len(t); n > 0 {
		switch strings.ToUpper(t[n-1:]) {
		case "K":
			mult, t = 1<<10, t[:n-1]
		case "M":
			mult, t = 1<<20, t[:n-1]
		case "G":
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 1 || v > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes from 1 to 1T, optionally with K, M or G", s)
	}
	return v * mult, nil
}

// parseSizes reads a comma list of sizes.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// powers returns from, 4·from, 16·from, ... up to and including to when it
// is on the way, and to itself otherwise.
func powers(from, to, factor int64) []int64 {
	var out []int64
	for v := from; v <= to; v *= factor {
		out = append(out, v)
	}
	if len(out) == 0 || out[len(out)-1] != to {
		out = append(out, to)
	}
	return out
}

// emulated says why a device's numbers are not hardware numbers: a
// software device (rxe, siw: no PCI device behind it), and a CPU that qemu
// emulates. "" for a hardware NIC.
func emulated(sysfs, dev string) string {
	var why []string
	if _, err := os.Stat(sysfs + "/class/infiniband/" + dev + "/device"); err != nil {
		why = append(why, "software RDMA device (soft-RoCE/siw: the kernel moves the bytes, no NIC)")
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil && strings.Contains(string(b), "QEMU") {
		why = append(why, "CPU emulated by qemu")
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + ": emulation, not hardware latency"
}

// Flags common to the commands.
var (
	devFlag     = &cli.StringFlag{Name: "ib-dev", Aliases: []string{"d"}, Usage: "RDMA device (default: the first)"}
	ibPortFlag  = &cli.IntFlag{Name: "ib-port", Aliases: []string{"i"}, Value: 1, Usage: "port of the device"}
	gidFlag     = &cli.IntFlag{Name: "gid-index", Aliases: []string{"x"}, Value: -1, Usage: "GID index (checked to exist; with rdma_cm the address picks the GID, so it also picks the address)"}
	jsonFlag    = &cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "NDJSON records, each with a \"record\" key"}
	addrFlag    = &cli.StringFlag{Name: "addr", Usage: "the address to listen on and connect to (default: the device's IPv4 address from its GID table)"}
	timeoutFlag = &cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "a peer or rdma_cm step silent this long has failed"}
	traceFlag   = &cli.BoolFlag{Name: "trace", Usage: "run rdmatrace beside the benchmark and correlate (default when built with tracing)"}
	noTraceFlag = &cli.BoolFlag{Name: "no-trace", Usage: "do not trace"}
)
