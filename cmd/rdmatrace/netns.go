package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/host/netns"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// netnsFlag is --netns for the snapshot commands.
var netnsFlag = &cli.StringFlag{Name: "netns", Usage: "list from network namespace `NAME|PATH|all` (a name under /run/netns, a file such as /proc/PID/ns/net, or every named namespace and every one a process is in); needs CAP_SYS_ADMIN to enter"}

// listing is what a snapshot command found through one netlink socket.
type listing struct {
	objs  []formats.Object
	text  func(*formats.TextWriter, int) error
	table func() *formats.Table
	err   error // decode problems: shown after the data, exit status 1
	// missing says the device (or port) asked for is not there: an error
	// only when no namespace has it.
	missing error
}

// snapshot runs gather on our own netlink socket, or on one in each
// namespace --netns names, and writes what it found: one JSON array
// whose objects say their namespace (netns-name), or a section per
// namespace in the human views, as `ip -all netns exec` prints.
func snapshot(c *cli.Context, format string, gather func(*nldev.Client) listing) error {
	spec := c.String("netns")
	if spec == "" {
		cl, err := dial(c)
		if err != nil {
			return err
		}
		defer cl.Close()
		l := gather(cl)
		if l.missing != nil {
			return exitWith(1, l.missing)
		}
		warnHidden(cl, os.Stderr)
		proc.WarnPIDNamespace(os.Stderr)
		if err := writeObjects(os.Stdout, format, c.Bool("pretty"), l.objs, l.text, l.table); err != nil {
			return err
		}
		return partial(l.err)
	}
	nss, err := netns.DefaultRoots.Find(spec)
	if err != nil {
		return exitWith(1, err)
	}
	if spec == "all" && sharedMode(c) {
		// Every namespace sees every device and resource: one listing,
		// not the same rows once per namespace.
		fmt.Fprintln(os.Stderr, "rdmatrace: the RDMA netns mode is shared: every network namespace sees the same devices; listed once")
		nss = nss[:1]
	}
	var (
		names   []string
		ls      []listing
		errs    []error
		missing error
	)
	for _, ns := range nss {
		l, err := gatherIn(ns, gather)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l.missing != nil {
			missing = l.missing
			continue
		}
		names, ls = append(names, ns.Name), append(ls, l)
		errs = append(errs, l.err)
	}
	if len(ls) == 0 && missing != nil {
		return exitWith(1, fmt.Errorf("%w, in any of the %d network namespaces", missing, len(nss)))
	}
	if err := writeListings(os.Stdout, format, c.Bool("pretty"), names, ls); err != nil {
		return err
	}
	return partial(errors.Join(errs...))
}

// sharedMode says whether the kernel's netns mode is shared (false when
// it cannot be read: then each namespace is asked).
func sharedMode(c *cli.Context) bool {
	cl, err := dial(c)
	if err != nil {
		return false
	}
	defer cl.Close()
	sys, err := cl.System()
	return err == nil && sys.NetNSMode == "shared"
}

// gatherIn runs gather on a socket made in ns.
func gatherIn(ns netns.NS, gather func(*nldev.Client) listing) (listing, error) {
	cl, err := nldev.DialIn(ns)
	if err != nil {
		return listing{}, err
	}
	defer cl.Close()
	return gather(cl), nil
}

// writeListings writes each namespace's listing: JSON as one array (or
// NDJSON) with netns-name first in each object, the human views as a
// "netns NAME:" line before each namespace's rows.
func writeListings(w io.Writer, format string, pretty bool, names []string, ls []listing) error {
	if format == outJSON || format == outNDJSON {
		var all []formats.Object
		for i, l := range ls {
			for _, o := range l.objs {
				all = append(all, append(formats.Object{{Key: "netns-name", Kind: formats.Str, Str: names[i]}}, o...))
			}
		}
		return writeObjects(w, format, pretty, all, nil, nil)
	}
	for i, l := range ls {
		if len(l.objs) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "netns %s:\n", formats.Sanitize(names[i])); err != nil {
			return err
		}
		if err := writeObjects(w, format, pretty, l.objs, l.text, l.table); err != nil {
			return err
		}
	}
	return nil
}

// warnHidden says, on stderr, when the kernel hides devices from us: in
// exclusive mode a device moved into another network namespace is not
// listed here, and nothing else would say so.
func warnHidden(cl *nldev.Client, stderr io.Writer) {
	sys, err := cl.System()
	if err != nil || sys.NetNSMode != "exclusive" {
		return
	}
	all, err := netns.DefaultRoots.All()
	if err != nil || len(all) < 2 {
		return
	}
	hidden, unknown := 0, 0
	for _, ns := range all[1:] { // all[0] is ours
		l, err := gatherIn(ns, func(cl *nldev.Client) listing {
			devs, err := cl.Devices()
			return listing{objs: make([]formats.Object, len(devs)), err: err}
		})
		if err != nil {
			unknown++
			continue
		}
		hidden += len(l.objs)
	}
	switch {
	case hidden > 0:
		fmt.Fprintf(stderr, "rdmatrace: the RDMA netns mode is exclusive: %d devices in other network namespaces are not listed here; --netns all lists them\n", hidden)
	case unknown > 0:
		fmt.Fprintf(stderr, "rdmatrace: the RDMA netns mode is exclusive: devices in the %d other network namespaces are not listed here, and looking needs CAP_SYS_ADMIN; --netns all lists them\n", unknown)
	}
}
