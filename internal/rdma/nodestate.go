package rdma

// NodeState is one read of a node's RDMA state over netlink: what exists
// now, with the parts that could not be read. A part's failure leaves the
// others' values in place, so a reader serves what it has.
type NodeState struct {
	Devices   []Device
	Ports     []Port
	Resources []Resource // every type; owners named (Comm) and placed
	Stats     []PortStats
	// Unknown are the types the kernel cannot dump (ctx and srq before
	// Linux 5.x): nothing is known of them, not a count of 0.
	Unknown []ResType
	// Errors are the parts that could not be read. A *PartError names its
	// part (one of NodeParts); another error is the connection's
	// (PartNetlink).
	Errors []error
}

// PartError is a part of a NodeState that could not be read.
type PartError struct {
	Part string // one of NodeParts
	Err  error
}

func (e *PartError) Error() string { return e.Part + ": " + e.Err.Error() }
func (e *PartError) Unwrap() error { return e.Err }

// The parts of a NodeState. When PartNetlink (the connection to the
// kernel) fails, no other part is read.
const (
	PartNetlink   = "netlink"
	PartDevices   = "devices"
	PartPorts     = "ports"
	PartPortStats = "port_stats"
)

// NodeParts are the parts a NodeState is read in: the connection,
// devices, ports, port counters, and each type's objects
// ("resources_qp"...).
var NodeParts = func() []string {
	ps := []string{PartNetlink, PartDevices, PartPorts, PartPortStats}
	for _, t := range ResourceTypes {
		ps = append(ps, ResourcesPart(t))
	}
	return ps
}()

// ResourcesPart is the part that reads t's objects.
func ResourcesPart(t ResType) string { return "resources_" + t.String() }
