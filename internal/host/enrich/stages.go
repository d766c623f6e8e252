package enrich

import "github.com/rdmatrace/rdmatrace/internal/rdma"

// Events enriches the tracer's events (tracer.Options.Enrich): an
// Enricher, or a Pipeline of one and its stages.
type Events interface {
	Event(*rdma.Event)
}

// A Stage adds to an event what is found outside this package: who holds
// the port a bind could not have (from sockets and rdma_cm IDs, which
// sources read), what lives on a port whose state changed. It runs after
// the owner is named, and only on the events it is for.
type Stage func(*rdma.Event)

// PortHolders names, with names, who holds the port of a port-busy event,
// as it is now: named as the event arrives, before the holder lets go. An
// event that has its holders already (a recording) is left alone.
func PortHolders(names func(*rdma.Event) []string) Stage {
	return func(e *rdma.Event) {
		if e.Kind == rdma.EvPortBusy && e.PortBusy.Holders == nil {
			e.PortBusy.Holders = names(e)
		}
	}
}

// PortObjects says, with names, what lives on the port (or device) of a
// port's or device's async event (Failure.OnPort).
func PortObjects(names func(*rdma.Event) []string) Stage {
	return func(e *rdma.Event) {
		if e.IsPortEvent() && e.Fault.OnPort == nil {
			e.Fault.OnPort = names(e)
		}
	}
}

// A Pipeline is a run's enrichment of events: its one Enricher names the
// owner, then each stage adds to the event, in order. The stages may ask
// the same Enricher to name what they find (a port's objects' owners):
// they hold it, it holds none of them.
type Pipeline struct {
	x      *Enricher
	stages []Stage
}

// Then is x followed by stages, in this order.
func (x *Enricher) Then(stages ...Stage) *Pipeline {
	return &Pipeline{x: x, stages: stages}
}

// Event names e's owner, then runs each stage.
func (p *Pipeline) Event(e *rdma.Event) {
	p.x.Event(e)
	for _, s := range p.stages {
		s(e)
	}
}
