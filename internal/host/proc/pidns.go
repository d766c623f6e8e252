package proc

import (
	"os"
	"syscall"
)

// initialPIDNS is the inode of the initial pid namespace
// (PROC_PID_INIT_INO in include/linux/proc_ns.h): fixed, so a namespace of
// our own is known without looking at pid 1's.
const initialPIDNS = 0xEFFFFFFC

// OwnPIDNamespace says whether the process runs in a pid namespace other
// than the host's: then the kernel lists the objects of processes it
// cannot see without their owners, and gives pids as seen from there
// (rdma_is_visible_in_pid_ns; seen on 6.1 and 6.12).
func OwnPIDNamespace(root string) bool {
	if root == "" {
		root = "/proc"
	}
	var st syscall.Stat_t
	if err := syscall.Stat(root+"/self/ns/pid", &st); err != nil {
		return false
	}
	return st.Ino != initialPIDNS
}

// PIDNamespaceNote is what the snapshot commands say when OwnPIDNamespace.
const PIDNamespaceNote = "rdmatrace runs in a pid namespace of its own: the kernel hides who owns the objects of processes outside it and gives pids as seen there; run it in the host's (hostPID: true, or nsenter -t 1 -p) to see every owner"

// WarnPIDNamespace writes PIDNamespaceNote to w when it applies.
func WarnPIDNamespace(w *os.File) {
	if OwnPIDNamespace("") {
		w.WriteString("rdmatrace: " + PIDNamespaceNote + "\n")
	}
}
