package rdma

// IsDevice says whether k is about a device as a whole (registration,
// its net devices, its name) rather than one of its resources.
func (k EventKind) IsDevice() bool {
	switch k {
	case EvDevRegister, EvDevUnregister, EvDevUnregistered, EvNetdevAttach, EvNetdevDetach, EvDevRename, EvNetdevRename:
		return true
	}
	return false
}
