package main

import (
	"errors"
	"io"

	"github.com/rdmatrace/rdmatrace/rdma"
)

// writeLegacy prints live cm_ids in the legacy rdma_cm debugfs layout.
func writeLegacy(w io.Writer, rs []rdma.Resource) error {
	return errors.New("-o legacy is not available yet")
}
