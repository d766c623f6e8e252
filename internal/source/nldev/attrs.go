// Package nldev is a client of the kernel's RDMA netlink interface
// (NETLINK_RDMA, client NLDEV): the data behind iproute2's `rdma dev`,
// `rdma link` and `rdma res`. It decodes replies into rdma values; it does
// not print.
package nldev

// Numbers from include/uapi/rdma/rdma_netlink.h.
const (
	familyRDMA  = 20 // NETLINK_RDMA
	clientNLDEV = 5  // RDMA_NL_NLDEV
)

// Commands (enum rdma_nldev_command).
const (
	cmdGet        = 1
	cmdPortGet    = 5
	cmdSysGet     = 6
	cmdSysSet     = 7
	cmdResGet     = 9
	cmdResQPGet   = 10
	cmdResCMIDGet = 11
	cmdResCQGet   = 12
	cmdResMRGet   = 13
	cmdResPDGet   = 14
	cmdStatGet    = 17
	cmdResCTXGet  = 22
	cmdResSRQGet  = 23
)

// Attributes (enum rdma_nldev_attr).
const (
	attrDevIndex            = 1
	attrDevName             = 2
	attrPortIndex           = 3
	attrCapFlags            = 4
	attrFWVersion           = 5
	attrNodeGUID            = 6
	attrSysImageGUID        = 7
	attrSubnetPrefix        = 8
	attrLID                 = 9
	attrSMLID               = 10
	attrLMC                 = 11
	attrPortState           = 12
	attrPortPhysState       = 13
	attrDevNodeType         = 14
	attrResSummary          = 15
	attrResSummaryEntry     = 16
	attrResSummaryEntryName = 17
	attrResSummaryEntryCurr = 18
	attrResQP               = 19
	attrResQPEntry          = 20
	attrResLQPN             = 21
	attrResRQPN             = 22
	attrResRQPSN            = 23
	attrResSQPSN            = 24
	attrResPathMigState     = 25
	attrResType             = 26
	attrResState            = 27
	attrResPID              = 28
	attrResKernName         = 29
	attrResCMID             = 30
	attrResCMIDEntry        = 31
	attrResPS               = 32
	attrResSrcAddr          = 33
	attrResDstAddr          = 34
	attrResCQ               = 35
	attrResCQEntry          = 36
	attrResCQE              = 37
	attrResUsecnt           = 38
	attrResPollCtx          = 39
	attrResMR               = 40
	attrResMREntry          = 41
	attrResRKey             = 42
	attrResLKey             = 43
	attrResIOVA             = 44
	attrResMRLen            = 45
	attrResPD               = 46
	attrResPDEntry          = 47
	attrResLocalDMALKey     = 48
	attrResUnsafeGlobalRKey = 49
	attrNdevIndex           = 50
	attrNdevName            = 51
	attrResPDN              = 60
	attrResCQN              = 61
	attrResMRN              = 62
	attrResCMIDN            = 63
	attrResCTXN             = 64
	attrSysNetNSMode        = 66 // u8: 0 exclusive, 1 shared
	attrDevProtocol         = 67
	attrStatMode            = 74 // u32: enum rdma_nl_counter_mode
	attrStatRes             = 75 // u32: the resource's attribute (attrResQP)
	attrStatAutoModeMask    = 76 // u32: enum rdma_nl_counter_mask
	attrStatCounter         = 77 // nested
	attrStatCounterEntry    = 78 // nested
	attrStatCounterID       = 79 // u32
	attrStatHWCounters      = 80 // nested
	attrStatHWCounterEntry  = 81 // nested
	attrStatHWCounterName   = 82 // string
	attrStatHWCounterValue  = 83 // u64
	attrDevDIM              = 84
	attrResCTX              = 86
	attrResCTXEntry         = 87
	attrResSRQ              = 88
	attrResSRQEntry         = 89
	attrResSRQN             = 90
	attrMinRange            = 91
	attrMaxRange            = 92
	attrSysCopyOnFork       = 93  // u8
	attrSysPrivilegedQKey   = 96  // u8
	attrSysMonitorMode      = 103 // u8 (6.12+: the MONITOR multicast group exists)
)
