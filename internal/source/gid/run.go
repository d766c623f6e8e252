package gid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// RunOptions are `rdmatrace gid`'s: the tables Filter keeps, and with
// Watch their changes, read every Every.
type RunOptions struct {
	Filter Filter
	Watch  bool
	Every  time.Duration
}

// View is where gid writes: the table, then with -w each change, held
// until Flush (formats.GIDView).
type View interface {
	Table([]rdma.GIDEntry) error
	Change(at time.Time, what string, g *rdma.GIDEntry) error
	Flush() error
}

// Run is `rdmatrace gid`: the tables o.Filter keeps, written to v; with
// o.Watch, each difference from the read before, every o.Every until a
// signal (the run's lifecycle). A read's error comes after what could be
// read: the end of a run without Watch (or of one that read nothing),
// else a line on slog, and the watch goes on.
func (s Source) Run(o RunOptions, v View) error {
	warn := func(err error) { slog.Info("gid: " + termsafe.Sanitize(err.Error())) }
	gs, err := s.Read(o.Filter)
	if werr := v.Table(gs); werr != nil {
		return werr
	}
	if err != nil {
		if !o.Watch || gs == nil {
			return fmt.Errorf("gid: %w", err)
		}
		warn(err)
	}
	if !o.Watch {
		return nil
	}
	return s.runWatch(gs, o, v, warn)
}

func (s Source) runWatch(last []rdma.GIDEntry, o RunOptions, v View, warn func(error)) error {
	run, err := lifecycle.Start(context.Background(), lifecycle.Options{})
	if err != nil {
		return err
	}
	err = s.Watch(run.Context(), last, WatchOptions{Filter: o.Filter, Every: o.Every, Flush: v.Flush, Warn: warn,
		Change: func(at time.Time, c Change) error { return v.Change(at, c.What, &c.Entry) }})
	return errors.Join(err, v.Flush(), run.End())
}
