package replay_test

import (
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

func init() {
	replay.RenderEvent = func(ev *rdma.Event) string {
		return string(formats.AppendJSON(nil, formats.EventObject(ev))) + "\n"
	}
}
