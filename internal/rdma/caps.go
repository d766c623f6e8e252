package rdma

// deviceCapNames are the names iproute2's `rdma -d dev` gives the bits of
// a device's capability flags (RDMA_NLDEV_ATTR_CAP_FLAGS), by bit number;
// "" is a bit it has no name for.
var deviceCapNames = [64]string{
	0: "RESIZE_MAX_WR", 1: "BAD_PKEY_CNTR", 2: "BAD_QKEY_CNTR", 3: "RAW_MULTI",
	4: "AUTO_PATH_MIG", 5: "CHANGE_PHY_PORT",
	6: "UD_AV_PORT_ENFORCE_PORT_ENFORCE", // sic, as iproute2 spells it
	7: "CURR_QP_STATE_MOD",
	8: "SHUTDOWN_PORT", 9: "INIT_TYPE", 10: "PORT_ACTIVE_EVENT", 11: "SYS_IMAGE_GUID",
	12: "RC_RNR_NAK_GEN", 13: "SRQ_RESIZE", 14: "N_NOTIFY_CQ", 15: "LOCAL_DMA_LKEY",
	17: "MEM_WINDOW", 18: "UD_IP_CSUM", 19: "UD_TSO", 20: "XRC",
	21: "MEM_MGT_EXTENSIONS", 22: "BLOCK_MULTICAST_LOOPBACK", 23: "MEM_WINDOW_TYPE_2A",
	24: "MEM_WINDOW_TYPE_2B", 25: "RC_IP_CSUM", 26: "RAW_IP_CSUM", 27: "CROSS_CHANNEL",
	29: "MANAGED_FLOW_STEERING", 30: "SIGNATURE_HANDOVER", 31: "ON_DEMAND_PAGING",
	32: "SG_GAPS_REG", 33: "VIRTUAL_FUNCTION", 34: "RAW_SCATTER_FCS",
	35: "RDMA_NETDEV_OPA_VNIC", 36: "PCI_WRITE_END_PADDING",
}

// DeviceCapNames names the set bits of a device's capability flags, lowest
// first, as `rdma -d dev` lists them (UNKNOWN for a bit it cannot name).
func DeviceCapNames(flags uint64) []string {
	names := []string{}
	for bit := 0; flags != 0; bit++ {
		if flags&1 != 0 {
			n := deviceCapNames[bit]
			if n == "" {
				n = "UNKNOWN"
			}
			names = append(names, n)
		}
		flags >>= 1
	}
	return names
}
