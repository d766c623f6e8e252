package rdma

// PSSDP is RDMA_PS_SDP (0x0042). The kernel dropped the SDP port space long
// ago, but legacy rdma_cm debugfs dumps from older trees still print "SDP";
// readers and writers of that layout name it themselves, since
// PortSpace.String does not know it.
const PSSDP PortSpace = 0x0042
