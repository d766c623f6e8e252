package formats

import (
	"errors"
	"fmt"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// EventTee is trace's sink: each event to the screen (Print), to a
// recording (Record, whose errors say -w) and to Also (an OpenTelemetry
// collector), any of which may be absent. Closers run at Close, after the
// screen's end, in order.
type EventTee struct {
	Print, Record Sink[*rdma.Event]
	Also          func(*rdma.Event)
	Closers       []func() error
}

func (s *EventTee) Write(e *rdma.Event) error {
	if s.Also != nil {
		s.Also(e)
	}
	if s.Print != nil {
		if err := s.Print.Write(e); err != nil {
			return err
		}
	}
	if s.Record != nil {
		if err := s.Record.Write(e); err != nil {
			return fmt.Errorf("-w: %w", err)
		}
	}
	return nil
}

func (s *EventTee) Flush() error {
	var errs []error
	if s.Print != nil {
		errs = append(errs, s.Print.Flush())
	}
	if s.Record != nil {
		if err := s.Record.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("-w: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Close ends the printed events (a JSON array's "]"), then runs the
// closers (the OTLP sink's, the recording's).
func (s *EventTee) Close() error {
	var errs []error
	if s.Print != nil {
		errs = append(errs, s.Print.Close())
	}
	for _, c := range s.Closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
