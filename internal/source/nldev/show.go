package nldev

import (
	"errors"

	"github.com/rdmatrace/rdmatrace/internal/host/netns"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
)

// Show is the use case of dev, link, res and stat: List in each
// namespace w names (ours when w.NetNS is ""), then write what each found
// (names[i] is rows[i]'s namespace). Listing our namespace alone, w.Note
// is first told of the devices other namespaces hide and of a PID
// namespace of our own (the owners' PIDs are its). What could not be
// decoded comes back as problems, after write; err is a listing that
// failed (nothing written) or write's error.
func Show[T any](w Where, list func(*Client) ([]T, error), write func(names []string, rows [][]T) error) (problems, err error) {
	secs, err := List(w, list)
	if err != nil {
		return nil, err
	}
	names, rows, errs := make([]string, len(secs)), make([][]T, len(secs)), make([]error, len(secs))
	for i, s := range secs {
		names[i], rows[i], errs[i] = s.NetNS, s.Rows, s.Err
	}
	if w.NetNS == "" && w.Note != nil {
		if note := HiddenNote(netns.Roots{}); note != "" {
			w.Note(note)
		}
		if proc.OwnPIDNamespace("") {
			w.Note(proc.PIDNamespaceNote)
		}
	}
	if err := write(names, rows); err != nil {
		return nil, err
	}
	return errors.Join(errs...), nil
}
