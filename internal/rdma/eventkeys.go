package rdma

// EventValue is what the value of an event object's key is (`trace -j`).
type EventValue uint8

const (
	ValString  EventValue = iota // a JSON string (a time is one, in RFC 3339)
	ValBool                      // true or false
	ValStrings                   // an array of strings
	ValMicros                    // a number of microseconds with up to three decimals
	ValUint8                     // a whole number from 0 to 255
	ValUint32                    // a whole number from 0 to 2^32-1
	ValUint64                    // a whole number from 0 to 2^64-1
	ValInt32                     // a whole number from -2^31 to 2^31-1
	ValFrames                    // an array of call frames: objects of CallFrame's keys
)

// EventKey is one key of the event objects `rdmatrace trace -j` writes
// (formats.AppendEventObject) and `leaks --recording` reads back
// (replay.Reader): iproute2's names wherever the same thing exists.
type EventKey struct {
	Name  string
	Value EventValue
}

// EventKeys are every key an event object may have, each once, in the
// order the writer first puts them: the one table both directions hold
// to (their tests check it), so that nothing trace -j writes is refused
// when a recording is read back.
var EventKeys = []EventKey{
	{"time", ValString}, {"event", ValString}, {"func", ValString}, {"res", ValString},
	{KeyIfname.Name, ValString}, {KeyPort.Name, ValUint32}, {"id", ValUint32}, {KeyLQPN.Name, ValUint32},
	{KeyType.Name, ValString}, {KeyState.Name, ValString}, {"prev-state", ValString}, {"cm-event", ValString},
	{"status", ValInt32}, {"status-name", ValString}, {KeyPS.Name, ValString},
	{KeySrcAddr.Name, ValString}, {KeyDstAddr.Name, ValString},
	// The owner, and where it ran (formats.AppendPlace's keys).
	{KeyPID.Name, ValUint32}, {"tgid", ValUint32}, {KeyComm.Name, ValString}, {"cgroup-id", ValUint64},
	{"cgroup", ValString}, {"runtime", ValString}, {"container-id", ValString}, {"job", ValString},
	{"pod-uid", ValString}, {"pod-namespace", ValString}, {"pod-name", ValString},
	{"pidns-pid", ValUint32}, {"netns", ValUint64},
	{"actor-pid", ValUint32}, {"actor-comm", ValString}, {"cleanup", ValString},
	// Spans and off-CPU spells; an MR's size.
	{"dur-us", ValMicros}, {"size", ValUint64},
	// Port conflicts and SMC fallbacks.
	{"holders", ValStrings}, {"suppressed", ValUint32},
	{"fallback", ValUint32}, {"fallback-reason", ValString}, {"inode", ValUint64},
	// SMC-R links.
	{"lgr-id", ValString}, {"role", ValString}, {"link-id", ValUint8}, {"link-state", ValString},
	// Off-CPU spells.
	{"wait-us", ValMicros}, {"preempted", ValBool}, {"next-pid", ValUint32}, {"next-comm", ValString},
	// Device events: a port's net device; what trace without BPF found
	// by comparing netlink dumps.
	{"netdev", ValString}, {"polled", ValBool},
	// What went wrong, in words (Event.Failure), on the events that report a failure.
	{"why", ValString},
	// A QP's transport settings (qp-attr): each set by the modify, with
	// the source GID the QP uses and its netdev; risks is derived.
	{"timeout", ValUint8}, {"retry-cnt", ValUint8}, {"rnr-retry", ValUint8}, {"min-rnr-timer", ValUint8},
	{"path-mtu", ValUint32}, {"sgid-index", ValUint32}, {"sgid", ValString}, {"gid-type", ValString},
	{"gid-ndev", ValString}, {"gid-ndev-mtu", ValUint32}, {"gid-vlan", ValUint32}, {"gid-netns", ValUint64},
	{"dgid", ValString}, {"risks", ValStrings},
	// Async events and QP errors.
	{"ib-event", ValString}, {"qp-error", ValString}, {"wc-status", ValString}, {"count", ValUint64},
	{"rgid", ValString}, {"rqpn", ValUint32}, {"on-port", ValStrings},
	// A call that created nothing (call-fail): what it asked, the
	// device's limits, the limit that refused it.
	{"asked-qp-type", ValString}, {"asked-send-wr", ValUint32}, {"asked-recv-wr", ValUint32},
	{"asked-send-sge", ValUint32}, {"asked-recv-sge", ValUint32}, {"asked-inline", ValUint32},
	{"asked-cqe", ValUint32}, {"asked-length", ValUint64}, {"asked-access", ValUint32},
	{"max-qp-wr", ValUint32}, {"max-send-sge", ValUint32}, {"max-recv-sge", ValUint32}, {"max-cqe", ValUint32},
	{"max-mr-size", ValUint64}, {"max-qp", ValUint32}, {"max-cq", ValUint32}, {"max-mr", ValUint32},
	{"max-pd", ValUint32}, {"max-srq", ValUint32},
	{"limit", ValString}, {"rdmacg-res", ValString}, {"rdmacg-path", ValString}, {"rdmacg-max", ValString},
	{"rdmacg-current", ValUint64}, {"memlock", ValUint64}, {"pinned-pages", ValUint64}, {"needed-pages", ValUint64},
	// A GID table change (gid-change; gid-type and gid-ndev as above).
	{"gid-op", ValString}, {"gid", ValString}, {"gid-index", ValUint32},
	// Where a user object was created (--stacks): the library function
	// called, and the program's frames.
	{"via", ValString}, {"stack", ValFrames},
}

// OldEventKeys are keys that recordings of earlier versions have and the
// reader still takes, but nothing writes any more: kern-name, a kernel
// owner's module, is comm without pid now (as iproute2's rdma -j res).
var OldEventKeys = []EventKey{{"kern-name", ValString}}

// EventKeyNamed finds a key of the table by its exact name.
func EventKeyNamed(name string) (EventKey, bool) {
	for _, k := range EventKeys {
		if k.Name == name {
			return k, true
		}
	}
	return EventKey{}, false
}
