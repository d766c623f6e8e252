package trace

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// Hook is one way of attaching a hook, as trace -l lists it.
type Hook = tracer.Listed

// ListHooks is trace -l [PATTERN], as bpftrace -l lists its probes: the
// hooks whose name matches the glob pattern ("": all), each of their
// variants and whether the running kernel has their targets, handed to
// write; then what could not be checked, on slog. A pattern that is no
// glob is a UsageError; none matching is an error, after write.
func ListHooks(pattern string, write func([]Hook) error) error {
	return listHooks(pattern, tracer.List, write)
}

func listHooks(pattern string, list func(string) ([]Hook, []string, error), write func([]Hook) error) error {
	ls, notes, err := list(pattern)
	if err != nil {
		if strings.HasPrefix(err.Error(), "pattern ") {
			return &UsageError{Err: err}
		}
		return err
	}
	if err := write(ls); err != nil {
		return err
	}
	for _, n := range notes {
		slog.Info("trace -l: " + termsafe.Sanitize(n))
	}
	if len(ls) == 0 {
		return fmt.Errorf("no hook matches %q", pattern)
	}
	return nil
}
