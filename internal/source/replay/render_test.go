package replay

import "github.com/rdmatrace/rdmatrace/internal/rdma"

// RenderEvent writes an event as `trace -j` does, one line: formats'
// writer, which package replay's tests cannot import (formats imports an
// analysis that reads recordings); package replay_test sets it.
var RenderEvent func(*rdma.Event) string
