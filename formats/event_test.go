package formats

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/rdma"
)

// A CM status is named in both views: the IB CM reject reason for
// REJECTED (as rdma_reject_msg says it), the errno's name otherwise, and
// nothing when it is 0.
func TestCMStatusIsNamedInBothViews(t *testing.T) {
	ev := func(cm rdma.CMEvent, status int32) *rdma.Event {
		return &rdma.Event{Time: time.Unix(0, 0), Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM | rdma.EvHasRes,
			Res: rdma.ResCMID, CMEvent: cm, Status: status}
	}
	for _, tc := range []struct {
		e         *rdma.Event
		line, key string // key: the JSON's status-name, "" for none
	}{
		{ev(rdma.CMRejected, 28), "REJECTED status 28 (consumer defined)", `"status":28,"status-name":"consumer defined"`},
		{ev(1, -110), "ADDR_ERROR status ETIMEDOUT", `"status":-110,"status-name":"ETIMEDOUT"`},
		{ev(9, 0), "ESTABLISHED", `"status":0}`},
		{&rdma.Event{Time: time.Unix(0, 0), Kind: rdma.EvCMQPCreate, Status: -12}, "status ENOMEM", `"status":-12,"status-name":"ENOMEM"`},
	} {
		line := EventLine(tc.e)
		js := string(AppendJSON(nil, EventObject(tc.e)))
		if !strings.Contains(line, tc.line) || !strings.Contains(js, tc.key) {
			t.Errorf("event %s status %d:\n line %q, want %q in it\n JSON %s, want %s in it", tc.e.CMEvent, tc.e.Status, line, tc.line, js, tc.key)
		}
		if tc.e.Status == 0 && (strings.Contains(line, "status") || strings.Contains(js, "status-name")) {
			t.Errorf("status 0 shown: %q %s", line, js)
		}
	}
}
