package rdma

import (
	"fmt"
	"time"
)

// LeakReport is what a leak Finding says.
type LeakReport uint8

const (
	// LeakUnregister: alive on a device when its unregistration began.
	LeakUnregister LeakReport = iota + 1
	// LeakWaiting: a process the blocked unregistration waits for.
	LeakWaiting
	// LeakUnregistered: the unregistration finished (a summary).
	LeakUnregistered
	// LeakLeft: still tracked when the unregistration finished: nobody
	// freed it, the kernel dropped it (restrack.c WARNING).
	LeakLeft
	// LeakEnd: alive when the run ended.
	LeakEnd
	// LeakExitCleanup: a traced program did not destroy it; the kernel
	// freed it when the program exited or closed its device file.
	LeakExitCleanup
	// LeakAlive: a traced program created it and it outlived the program.
	LeakAlive
	// LeakPortBusy: a bind, rdma_listen or rdma_connect got EADDRINUSE
	// (Res is the port-busy event, with who held the port): the other
	// thing a program can be kept from having.
	LeakPortBusy
	numLeakReports
)

var leakReportNames = [numLeakReports]string{"", "unregister", "waiting", "unregistered", "left", "end",
	"exit-cleanup", "alive", "port-busy"}

func (r LeakReport) String() string {
	if r > 0 && r < numLeakReports {
		return leakReportNames[r]
	}
	return fmt.Sprintf("report-%d", uint8(r))
}

// IsLeak tells whether a report of this kind names a leaked resource (as
// opposed to a status line).
func (r LeakReport) IsLeak() bool {
	return r != LeakWaiting && r != LeakUnregistered && r != LeakPortBusy
}

// Finding is one line of a leak report: a resource (in Res, with the
// tracer's fields), a process the kernel waits for, or a summary.
type Finding struct {
	Report LeakReport
	Time   time.Time
	// Res describes the resource; for LeakWaiting its Owner is the
	// process, for LeakUnregistered its device is set.
	Res Event
	// By is the task doing a device's unregistration, for the reports
	// about one (unregister, waiting, left, unregistered): the task a
	// kernel WARNING or hung-task report names.
	By Owner
	// Age is how long the resource has existed; AgeAtLeast when it
	// predates the trace (the snapshot cannot say when it was created).
	Age        time.Duration
	AgeAtLeast bool
	// LeakWaiting: how long the unregistration has been blocked, how many
	// resources the holder (Res.Owner: a process, or a kernel module by
	// its KernName) still has on the device, of which types, and a
	// process's open device files.
	Blocked   time.Duration
	Resources int
	Held      []ResCount
	Files     []string
	// LeakUnregistered: how long it took and what became of the
	// resources that were alive when it began: freed in all, of which by
	// their owners' exit (or file close) cleanup, and by the unregistering
	// task itself (the kernel freeing its own objects, or disassociation);
	// Left were never freed (the kernel dropped them, with a WARNING).
	Took                                  time.Duration
	Freed, FreedAtExit, FreedByUnregister int
	Left                                  int
}

// ResCount is how many resources of one type a holder has.
type ResCount struct {
	Res ResType
	N   int
}
