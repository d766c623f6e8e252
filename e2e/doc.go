// Package e2e holds rdmatrace's end-to-end tests. They run inside a qemu
// guest booted by guest/run on Debian's own kernels, as root, with soft-RoCE
// (rxe0 on a guest-only veth, 10.99.0.1) set up by guest/rdma-up.sh and real
// workloads from Debian's packages: rping, perftest's ib_write_lat -R and
// ibv_rc_pingpong. The tests compare what rdmatrace reports with what the
// kernel reports through iproute2's `rdma` tool.
//
// They are built with the e2e tag, so a plain `go test ./...` on a machine
// without RDMA leaves them out; `make e2e` builds the test binary and runs it
// in the guest on each kernel.
package e2e
