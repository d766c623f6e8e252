package exporter

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Each failed call is counted once under its object type and a reason
// from a closed set: the limit the kernel named, device_cap when the
// arithmetic shows one, else the errno's name, or other.
func TestCreateFailuresByTypeAndReason(t *testing.T) {
	x := New(fixed(snapshot()), 2)
	x.sysfs = fixtureSysfs
	fail := func(op string, errno unix.Errno, f func(c *rdma.CallFail)) {
		e := &rdma.Event{Kind: rdma.EvCallFail, Flags: rdma.EvHasDev | rdma.EvHasOwner, Resource: rdma.Resource{DevName: "rxe0", Owner: rdma.Owner{PID: 7, Comm: "app"}}}
		e.CallFail = rdma.CallFail{Op: op, Errno: int32(errno)}
		if f != nil {
			f(&e.CallFail)
		}
		x.Event(e)
	}
	caps := rdma.DevCaps{Valid: true, MaxQPWR: 16384, MaxSendSGE: 32, MaxRecvSGE: 32, MaxCQE: 32767}
	fail("create_cq", unix.EAGAIN, func(c *rdma.CallFail) { c.Limit = rdma.CallLimit{Kind: rdma.LimitRDMACgroup, CgroupRes: "hca_object"} })
	fail("get_context", unix.EAGAIN, func(c *rdma.CallFail) { c.Limit = rdma.CallLimit{Kind: rdma.LimitRDMACgroup, CgroupRes: "hca_handle"} })
	fail("reg_mr", unix.ENOMEM, func(c *rdma.CallFail) { c.Limit = rdma.CallLimit{Kind: rdma.LimitMemlock, Memlock: 65536} })
	for range 2 {
		fail("create_cq", unix.EINVAL, func(c *rdma.CallFail) {
			c.Caps, c.Asked = caps, rdma.Asked{Has: rdma.AskedCQE, CQE: 32768}
		})
	}
	fail("create_qp", unix.EINVAL, func(c *rdma.CallFail) {
		c.Caps, c.Asked = caps, rdma.Asked{Has: rdma.AskedQP, MaxSendWR: 40000, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	})
	// Within the device's limits: the errno is all there is.
	fail("create_qp", unix.EINVAL, func(c *rdma.CallFail) {
		c.Caps, c.Asked = caps, rdma.Asked{Has: rdma.AskedQP, MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	})
	fail("rdma_resolve_addr", unix.ENETUNREACH, nil)
	fail("create_ah", unix.EIO, nil)
	fail("some_future_call", unix.EINVAL, nil)
	out := scrapeText(t, x)
	for _, want := range []string{
		`rdma_create_failures_total{device="rxe0",reason="cgroup",type="cq"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="cgroup",type="ctx"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="memlock",type="mr"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="device_cap",type="cq"} 2`,
		`rdma_create_failures_total{device="rxe0",reason="device_cap",type="qp"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="EINVAL",type="qp"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="ENETUNREACH",type="cm_id"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="other",type="ah"} 1`,
		`rdma_create_failures_total{device="rxe0",reason="EINVAL",type="other"} 1`,
		// The failure stream counts them too, by owner.
		`rdma_failures_total{comm="app",container="",device="rxe0",event="create-failed",port="",uid=""} 9`,
		`rdma_failures_total{comm="app",container="",device="rxe0",event="cm-call-failed",port="",uid=""} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if n := strings.Count(out, "\nrdma_create_failures_total{"); n != 9 {
		t.Errorf("%d rdma_create_failures_total series, want 9:\n%s", n, out)
	}
}
