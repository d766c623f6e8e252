package rdma

// PSSDP is RDMA_PS_SDP (0x0042). The kernel dropped the SDP port space long
// ago, but legacy rdma_cm debugfs dumps from older trees still print "SDP";
// readers and writers of that layout name it themselves, since
// PortSpace.String does not know it.
const PSSDP PortSpace = 0x0042

// LegacyColumns are the columns of the 2009 rdma_cm debugfs patch, in its
// order: the header debugfs reads rows under before any, and writes.
var LegacyColumns = []string{"TYPE", "DEVICE", "PORT", "NET_DEV", "SRC_ADDR", "DST_ADDR", "SPACE", "STATE", "QP_NUM"}
