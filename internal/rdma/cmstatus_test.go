package rdma

import "testing"

func TestCMStatusNameAsTheKernelSaysIt(t *testing.T) {
	for _, tc := range []struct {
		ev     CMEvent
		status int32
		want   string
	}{
		{CMRejected, 28, "consumer defined"},  // rdma_reject() of a listener
		{CMRejected, 8, "invalid service ID"}, // no listener on the port
		{CMRejected, 35, "vendor option is not supported"},
		{CMRejected, 34, "unrecognized reason"}, // a hole in the kernel's table
		{CMRejected, 99, "unrecognized reason"},
		{CMRejected, -111, "ECONNREFUSED"}, // iWARP: an errno
		{1, -110, "ETIMEDOUT"},             // ADDR_ERROR
		{7, -22, "EINVAL"},                 // UNREACHABLE
		{9, 0, ""},
		{9, 5, "5"},
		{9, -4000, "-4000"},
	} {
		if got := CMStatusName(tc.ev, tc.status); got != tc.want {
			t.Errorf("CMStatusName(%s, %d) = %q, want %q", tc.ev, tc.status, got, tc.want)
		}
	}
}
