package trace

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// trace -l: the rows go to write, the notes after them on slog (escaped);
// a bad glob is a usage error, no match an error once the (empty) view is
// written.
func TestListHooks(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	hooks := []Hook{{Hook: "rdma_restrack_add", Variant: "fexit"}, {Hook: "rdma_restrack_del", Variant: "fexit"}}
	list := func(pattern string) ([]Hook, []string, error) {
		switch pattern {
		case "[":
			return nil, nil, errors.New(`pattern "[": syntax error in pattern`)
		case "none":
			return nil, nil, nil
		case "broken":
			return nil, nil, errors.New("reading kallsyms: permission denied")
		}
		return hooks, []string{"module smc not loaded\x1b[31m"}, nil
	}
	var wrote [][]Hook
	write := func(ls []Hook) error { wrote = append(wrote, ls); return nil }

	if err := listHooks("rdma_restrack_*", list, write); err != nil {
		t.Fatal(err)
	}
	if len(wrote) != 1 || len(wrote[0]) != 2 {
		t.Errorf("wrote %v, want the two hooks once", wrote)
	}
	if got := log.String(); !strings.Contains(got, "trace -l: module smc not loaded") || strings.Contains(got, "\x1b") {
		t.Errorf("notes on slog: %q", got)
	}

	var ue *UsageError
	if err := listHooks("[", list, write); !errors.As(err, &ue) {
		t.Errorf("bad glob: %v, want a UsageError", err)
	}
	if err := listHooks("broken", list, write); err == nil || errors.As(err, &ue) {
		t.Errorf("list failing: %v, want an error that is no usage error", err)
	}
	wrote = nil
	if err := listHooks("none", list, write); err == nil || !strings.Contains(err.Error(), `no hook matches "none"`) || len(wrote) != 1 {
		t.Errorf("no match: %v (wrote %d views), want the empty view, then the error", err, len(wrote))
	}
}
