// Package exporter serves RDMA metrics to Prometheus: what exists now
// (read from netlink at each scrape, so a gauge is never stale) and what
// happened (counted from the tracer's events). It is a collector for the
// official client library, not an aggregator: Prometheus stores, sums and
// alerts.
package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rdmatrace/rdmatrace/internal/analysis/failures"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Source reads the node's state for a scrape until ctx ends (nldev in
// the binary, fixed data in tests): devices, ports, counters and errors
// in the NodeState, and each object given to count as it is read, so that
// nothing holds every object at once (objects in the NodeState are
// counted too). Each part of it has its
// rdmatrace_scrape_collector_success{collector} series, as node_exporter's
// node_scrape_collector_success (rdma.NodeParts).
type Source func(ctx context.Context, count func(*rdma.Resource)) rdma.NodeState

// Exporter is a prometheus.Collector of the snapshot metrics plus the
// event counters that Event feeds.
type Exporter struct {
	source Source
	topN   int

	mu           sync.Mutex
	born         map[uint64]birth // a CM_ID's or QP's creation, by kernel address
	creates      *prometheus.CounterVec
	destroys     *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	cmEvents     *prometheus.CounterVec
	setup        *prometheus.HistogramVec
	qpLife       *prometheus.HistogramVec
	createFails  *prometheus.CounterVec
	scrapeErrors prometheus.Counter
	atExit       *prometheus.CounterVec
	failures     *prometheus.CounterVec
	// ranks chooses the owners rdma_failures_total names (the rest are
	// counted as comm "other"); uidOf finds an owner's uid for it, uids
	// caches what it found.
	ranks *failRank
	// quiet holds a QP's move to ERR until its disconnect or destroy
	// says it was the connection's end, not a failure.
	quiet *failures.Quiet[heldFailure]
	uidOf func(pid uint32) (uint32, bool)
	uids  map[pidComm]string
	// unregs are the device unregistrations under way: when each began,
	// by whom, and who held the device's objects then (from live, the
	// table the tracer's events and the start snapshot keep).
	unregs    map[string]unregistration
	live      *restable.Table
	untracked prometheus.CounterFunc
	now       func() time.Time
	// failing is each part's error kind while it fails, to log a part's
	// failure once and its recovery once (one entry per part at most).
	failing map[string]string
	log     *ratelog.Logger
	health  *Health

	success, resources, byOwner, qps, portActive, portCounter, blocked, holders *prometheus.Desc
	// portFams are the named port counters' families (portFamilies),
	// read from netlink's counters and sysfs under sysfs.
	portFams []*prometheus.Desc
	sysfs    string
}

// birth is when and on which device a CM_ID or a QP was created.
type birth struct {
	at  time.Time
	dev string
}

type unregistration struct {
	since   time.Time
	by      string
	holders map[holder]int // what the device's users held when it began
}

// holder is an owner as the by-owner series label it.
type holder struct{ name, container string }

func holderOf(o *rdma.Owner) holder {
	h := holder{name: ownerName(o)}
	if o.Place != nil {
		h.container = o.Place.ContainerID
	}
	return h
}

// LiveTableSize bounds the live table that names an unregistration's holders:
// at about 1 kB an entry (67 MB of heap, measured), at worst; past it, objects are
// counted untracked (rdmatrace_live_untracked_total) and not named. The
// start snapshot stops once it has given that many.
const LiveTableSize = 1 << 16

// maxBorn bounds the creation times kept for the histograms: objects
// whose destroy was never seen (a missed event) must not grow it forever.
const maxBorn = 1 << 16

// New makes an exporter that reads source at each scrape and keeps, per
// device and type, the topN owners with most objects (the rest summed as
// owner="other"): the worst case is devices × 7 types × (topN+1) series
// for rdma_resources_by_owner.
func New(source Source, topN int) *Exporter {
	x := &Exporter{source: source, topN: topN, born: map[uint64]birth{}, sysfs: defaultSysfs, portFams: newPortFamilyDescs(), unregs: map[string]unregistration{}, now: time.Now,
		live: restable.New(LiveTableSize), failing: map[string]string{}, log: ratelog.New(os.Stderr, 10*time.Second)}
	x.success = prometheus.NewDesc("rdmatrace_scrape_collector_success",
		"1 when the last scrape read this part of the RDMA state, 0 when it could not (rdmatrace logs why when it starts failing).",
		[]string{"collector"}, nil)
	x.untracked = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rdmatrace_live_untracked_total",
		Help: "Objects created while the live table (which names the holders of a blocked unregistration) was full."},
		func() float64 { x.mu.Lock(); defer x.mu.Unlock(); return float64(x.live.Untracked()) })
	x.holders = prometheus.NewDesc("rdma_device_unregister_holders",
		"While a device's unregistration is blocked: the objects each owner held on it when it began (the top owners, the rest as owner=\"other\").",
		[]string{"device", "owner", "container"}, nil)
	x.atExit = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_resources_freed_at_exit_total",
		Help: "RDMA objects the kernel freed when their owner exited or closed the device file, not the owner itself: left behind."}, []string{"device", "type"})
	x.ranks, x.uids, x.quiet = newFailRank(topN), map[pidComm]string{}, failures.NewQuiet[heldFailure]()
	x.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_failures_total",
		Help: "Failures the tracer saw (rdma_cm errors, QPs moved to ERR or SQE, ports taken, refused destroys, SMC fallbacks and link failures), by device, port, failure and owner: the owners with most failures lately (halved every 10 minutes; a user takes at most half of them) by name and uid, the rest as comm=\"other\"."},
		[]string{"device", "port", "event", "comm", "container", "uid"})
	x.blocked = prometheus.NewDesc("rdma_device_unregister_blocked_seconds",
		"How long a device's unregistration has been waiting for its users (0 series when none is).", []string{"device", "by"}, nil)
	x.creates = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_resource_creates_total",
		Help: "RDMA objects created, by device and type (from the tracer)."}, []string{"device", "type"})
	x.destroys = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_resource_destroys_total",
		Help: "RDMA objects destroyed, by device and type (from the tracer)."}, []string{"device", "type"})
	x.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_qp_transitions_total",
		Help: "QP state changes, by device and the state entered (ERR: a QP failed)."}, []string{"device", "state"})
	x.cmEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_cm_events_total",
		Help: "rdma_cm events delivered, by event and status name (REJECTED, UNREACHABLE, ADDR_ERROR ...)."}, []string{"event", "status"})
	x.setup = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rdma_cm_connection_setup_seconds",
		Help:    "Connection setup, each side of a connection once, by device: from a CM_ID's tracking (its bind to a device, or a connection request) to ESTABLISHED, or CONNECT_RESPONSE for an active side whose QP user space owns.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"device"})
	x.qpLife = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rdma_qp_lifetime_seconds",
		Help:    "From a QP's creation to its destruction, by device.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 14)}, []string{"device"})
	x.createFails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdma_create_failures_total",
		Help: "Creates, opens and registrations that failed inside the call and created nothing, and rdma_cm steps that did (type cm_id), by device, object type and reason: cgroup (the rdma cgroup's rdma.max), memlock (RLIMIT_MEMLOCK), device_cap (more asked than the device allows), else the errno's name (EINVAL, ENOMEM, ... a fixed set; other for the rest)."},
		[]string{"device", "type", "reason"})
	x.scrapeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "rdmatrace_scrape_errors_total",
		Help: "Parts of the RDMA state that a scrape could not read (the rest was served)."})
	x.resources = prometheus.NewDesc("rdma_resources", "Live RDMA objects, by device and type (from netlink at the scrape).",
		[]string{"device", "type"}, nil)
	x.byOwner = prometheus.NewDesc("rdma_resources_by_owner",
		"Live RDMA objects by owner: the top owners per device and type by count, the rest as owner=\"other\".",
		[]string{"device", "type", "owner", "container"}, nil)
	x.qps = prometheus.NewDesc("rdma_qps", "Live QPs by device and state.", []string{"device", "state"}, nil)
	x.portActive = prometheus.NewDesc("rdma_port_active", "1 when the port is ACTIVE.", []string{"device", "port"}, nil)
	x.portCounter = prometheus.NewDesc("rdma_port_stat_total", "A port's counters, by the name `rdma statistic show` gives them.",
		[]string{"device", "port", "stat"}, nil)
	return x
}

// LogTo sends the exporter's lines (a part of the state that starts or
// stops failing) to l instead of stderr; nil keeps stderr.
func (x *Exporter) LogTo(l *ratelog.Logger) {
	if l != nil {
		x.mu.Lock()
		x.log = l
		x.mu.Unlock()
	}
}

// SetUIDs names the uid of a failing owner's process with uidOf
// (rdma_failures_total's uid label, and whose share of the named owners
// it takes); nil: uids are not known.
func (x *Exporter) SetUIDs(uidOf func(pid uint32) (uint32, bool)) { x.uidOf = uidOf }

// SetHealth serves h (rdmatrace_build_info, the tracer's part_up) beside
// the exporter's metrics; call it before Register.
func (x *Exporter) SetHealth(h *Health) { x.health = h }

// Register adds the exporter's metrics but the scrape's read of the
// kernel to reg; Gatherer adds that read, bound to each scrape's context.
func (x *Exporter) Register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{x.creates, x.destroys, x.transitions, x.cmEvents, x.setup, x.qpLife, x.createFails, x.scrapeErrors, x.atExit, x.untracked, failuresCollector{x}}
	if x.health != nil {
		cs = append(cs, x.health)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Gatherer is what a scrape serves: reg's metrics and the kernel's state
// read now, until ctx ends (the scrape's timeout or its client's going
// cancels the read of the kernel).
func (x *Exporter) Gatherer(reg prometheus.Gatherer) func(ctx context.Context) prometheus.Gatherer {
	return func(ctx context.Context) prometheus.Gatherer {
		return prometheus.Gatherers{reg, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			r := prometheus.NewRegistry()
			if err := r.Register(scrapeCollector{x, ctx}); err != nil {
				return nil, err
			}
			return r.Gather()
		})}
	}
}

// scrapeCollector is the exporter's read of the kernel within one
// scrape's context.
type scrapeCollector struct {
	x   *Exporter
	ctx context.Context
}

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) { c.x.Describe(ch) }
func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) { c.x.collect(c.ctx, ch) }

// Describe is for prometheus.Collector: the kernel's state, read at each
// scrape (Gatherer).
func (x *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{partUpDesc, x.success, x.resources, x.byOwner, x.qps, x.portActive, x.portCounter, x.blocked, x.holders}, x.portFams...) {
		ch <- d
	}
}

// Collect reads the kernel's state now.
func (x *Exporter) Collect(ch chan<- prometheus.Metric) { x.collect(context.Background(), ch) }

func (x *Exporter) collect(ctx context.Context, ch chan<- prometheus.Metric) {
	c := newScrapeCounts()
	s := x.source(ctx, c.add)
	for i := range s.Resources {
		c.add(&s.Resources[i])
	}
	if err := ctx.Err(); err != nil {
		s.Errors = append(s.Errors, &rdma.PartError{Part: rdma.PartNetlink, Err: fmt.Errorf("the scrape ended before the kernel's state was read: %w", err)})
	}
	x.scrapeErrors.Add(float64(len(s.Errors)))
	x.mu.Lock()
	logs := x.log
	x.partsHealth(ch, s.Errors)
	for dev, u := range x.unregs {
		ch <- prometheus.MustNewConstMetric(x.blocked, prometheus.GaugeValue, x.now().Sub(u.since).Seconds(), dev, u.by)
		for _, r := range x.top(u.holders) {
			ch <- prometheus.MustNewConstMetric(x.holders, prometheus.GaugeValue, float64(r.n), dev, r.o.name, r.o.container)
		}
	}
	x.mu.Unlock()
	counts, owners, qps := c.n, c.owners, c.qps
	// Every device has every type's series, 0 when it has none: a count
	// of 0 is not the same as not knowing.
	for _, d := range s.Devices {
		for _, t := range rdma.ResourceTypes {
			k := devType{d.Name, t.String()}
			if _, ok := counts[k]; !ok && !slices.Contains(s.Unknown, t) {
				ch <- prometheus.MustNewConstMetric(x.resources, prometheus.GaugeValue, 0, k.dev, k.typ)
			}
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(x.resources, prometheus.GaugeValue, float64(n), k.dev, k.typ)
		for _, r := range x.top(owners[k]) {
			ch <- prometheus.MustNewConstMetric(x.byOwner, prometheus.GaugeValue, float64(r.n), k.dev, k.typ, r.o.name, r.o.container)
		}
	}
	for k, n := range qps {
		ch <- prometheus.MustNewConstMetric(x.qps, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for _, p := range s.Ports {
		v := 0.0
		if p.State.String() == "ACTIVE" {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(x.portActive, prometheus.GaugeValue, v, p.DevName, strconv.FormatUint(uint64(p.Port), 10))
	}
	for _, st := range s.Stats {
		port := strconv.FormatUint(uint64(st.Port), 10)
		for _, c := range st.Counters {
			ch <- prometheus.MustNewConstMetric(x.portCounter, prometheus.CounterValue, float64(c.Value), st.DevName, port, c.Name)
		}
	}
	ok := 1.0
	if err := namedPortCounters(ch, x.portFams, x.sysfs, s.Ports, s.Stats); err != nil {
		ok = 0
		x.scrapeErrors.Inc()
		logs.Printf("scrape "+PartSysfsCounters, "scrape: cannot read some port counters in sysfs: %v (served without them)", err)
	}
	ch <- prometheus.MustNewConstMetric(x.success, prometheus.GaugeValue, ok, PartSysfsCounters)
}

// partsHealth sends each part's success and logs a part's first error
// (again when its kind changes) and its recovery. Called with x.mu held.
func (x *Exporter) partsHealth(ch chan<- prometheus.Metric, errs []error) {
	failed := map[string]error{}
	for _, err := range errs {
		part := rdma.PartNetlink
		var pe *rdma.PartError
		if errors.As(err, &pe) && slices.Contains(rdma.NodeParts, pe.Part) {
			part, err = pe.Part, pe.Err
		}
		failed[part] = errors.Join(failed[part], err)
	}
	down := failed[rdma.PartNetlink] != nil
	up := 1.0
	if down {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(partUpDesc, prometheus.GaugeValue, up, rdma.PartNetlink)
	for _, part := range rdma.NodeParts {
		err := failed[part]
		v := 1.0
		if err != nil || down {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(x.success, prometheus.GaugeValue, v, part)
		was, wasFailing := x.failing[part]
		switch {
		case err != nil:
			kind := ratelog.Kind(err.Error())
			if !wasFailing || kind != was {
				x.log.Printf("scrape "+part+" "+kind, "scrape: cannot read %s: %v (served without it; logged again when this changes)", part, err)
			}
			x.failing[part] = kind
		case wasFailing && !down:
			x.log.Printf("scrape "+part+" ok", "scrape: %s read again", part)
			delete(x.failing, part)
		}
	}
}

type devType struct{ dev, typ string }

// maxOwnersCounted bounds the owners a scrape tells apart per device and
// type: past it (that many processes or containers holding objects of
// one type), further owners are counted as "other" at once.
const maxOwnersCounted = 4096

// scrapeCounts are a scrape's objects, counted as the dump gives them:
// per device and type, per owner, and QPs per state.
type scrapeCounts struct {
	n      map[devType]int
	owners map[devType]map[holder]int
	qps    map[[2]string]int
}

func newScrapeCounts() *scrapeCounts {
	return &scrapeCounts{n: map[devType]int{}, owners: map[devType]map[holder]int{}, qps: map[[2]string]int{}}
}

func (c *scrapeCounts) add(r *rdma.Resource) {
	k := devType{r.DevName, r.Type.String()}
	c.n[k]++
	m := c.owners[k]
	if m == nil {
		m = map[holder]int{}
		c.owners[k] = m
	}
	h := holderOf(&r.Owner)
	if _, ok := m[h]; !ok && len(m) >= maxOwnersCounted {
		h = otherHolder
	}
	m[h]++
	if r.Type == rdma.ResQP && r.Has&rdma.HasState != 0 {
		c.qps[[2]string{r.DevName, r.QPState.String()}]++
	}
}

// otherHolder is the owners past the top ones, summed. A process named
// "other" outside a container is counted with them: its series would be
// the same.
var otherHolder = holder{name: "other"}

type ranked struct {
	o holder
	n int
}

// top ranks owners by count: the topN first, the rest summed as "other".
func (x *Exporter) top(owners map[holder]int) []ranked {
	var rs []ranked
	other, others := 0, false
	for o, n := range owners {
		if o == otherHolder {
			other, others = other+n, true
			continue
		}
		rs = append(rs, ranked{o, n})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.o.name, b.o.name), cmp.Compare(a.o.container, b.o.container))
	})
	if len(rs) > x.topN {
		for _, r := range rs[x.topN:] {
			other += r.n
		}
		rs, others = rs[:x.topN], true
	}
	if others {
		rs = append(rs, ranked{otherHolder, other})
	}
	return rs
}

// ownerName is how an owner is labelled: its comm, or [module] for the
// kernel's, as the tables print them.
func ownerName(o *rdma.Owner) string {
	if o.KernName != "" {
		return "[" + o.KernName + "]"
	}
	if o.Comm == "" {
		return "pid " + strconv.FormatUint(uint64(o.PID), 10)
	}
	return o.Comm
}

// Event counts one traced event.
func (x *Exporter) Event(e *rdma.Event) {
	dev, typ := e.DevName, e.Type.String()
	x.mu.Lock()
	defer x.mu.Unlock()
	_, en := x.live.Apply(e)
	if e.Kind != rdma.EvExists {
		for _, h := range x.quiet.Observe(e) {
			x.count(h)
		}
		x.countFailure(e, en)
	}
	if e.Kind == rdma.EvCallFail {
		x.countCallFail(e)
		return
	}
	switch e.Kind {
	case rdma.EvDevUnregister:
		held := map[holder]int{}
		for _, en := range x.live.Select(func(en *restable.Entry) bool { return en.Dev == e.DevIndex }) {
			held[holderOf(&en.Res.Owner)]++
		}
		x.unregs[dev] = unregistration{since: e.Time, by: e.Actor.Comm, holders: held}
		return
	case rdma.EvDevUnregistered:
		delete(x.unregs, dev)
		x.live.RemoveDevice(e.DevIndex)
		return
	case rdma.EvExists:
		return // the start snapshot: for the live table only
	}
	if !e.Has(rdma.EvHasRes) && !e.Has(rdma.EvHasCM) {
		return
	}
	switch e.Kind {
	case rdma.EvCreate:
		x.creates.WithLabelValues(dev, typ).Inc()
		if e.Obj != 0 && (e.Type == rdma.ResQP || e.Type == rdma.ResCMID) {
			if len(x.born) >= maxBorn {
				clear(x.born)
			}
			x.born[e.Obj] = birth{e.Time, dev}
		}
	case rdma.EvDestroy:
		x.destroys.WithLabelValues(dev, typ).Inc()
		if e.Cleanup() != "" && e.Owner.KernName == "" {
			x.atExit.WithLabelValues(dev, typ).Inc()
		}
		if b, ok := x.born[e.Obj]; ok && e.Obj != 0 {
			if e.Type == rdma.ResQP {
				x.qpLife.WithLabelValues(cmp.Or(dev, b.dev)).Observe(e.Time.Sub(b.at).Seconds())
			}
			delete(x.born, e.Obj)
		}
	case rdma.EvModify:
		if e.Type == rdma.ResQP && e.Given(rdma.HasState) {
			x.transitions.WithLabelValues(dev, e.StateName(false)).Inc()
		}
	}
	if e.Kind == rdma.EvCMEventHandler && e.Has(rdma.EvHasCM) { // delivered; cm_event_done is the same event
		status := rdma.CMStatusName(e.CMEvent, e.Status)
		if status == "" {
			status = strconv.Itoa(int(e.Status)) // 0: success
		}
		x.cmEvents.WithLabelValues(e.CMEvent.String(), status).Inc()
		// The end of a side's setup: ESTABLISHED; for an active side whose
		// QP is user space's, CONNECT_RESPONSE (librdmacm moves the QP and
		// makes ESTABLISHED itself: the kernel never delivers it).
		if ev := e.CMEvent.String(); ev == "ESTABLISHED" || ev == "CONNECT_RESPONSE" && e.Status == 0 {
			if b, ok := x.born[e.Obj]; ok && e.Obj != 0 {
				x.setup.WithLabelValues(cmp.Or(dev, b.dev)).Observe(e.Time.Sub(b.at).Seconds())
				delete(x.born, e.Obj) // each side once
			}
		}
	}
}

// heldFailure is a failure as rdma_failures_total counts it, kept while
// quiet decides whether it is one.
type heldFailure struct {
	dev, port, what string
	owner           rdma.Owner
}

// countFailure counts an event that reports a failure
// (rdma.Event.Failure), under its owner, or the owner the live table
// knows for an event that names none; a QP's move to ERR only once quiet
// says it was no disconnect's. Called with x.mu held.
func (x *Exporter) countFailure(e *rdma.Event, en *restable.Entry) {
	f, ok := e.Failure()
	if !ok {
		return
	}
	o := &e.Owner
	if !e.Has(rdma.EvHasOwner) && o.KernName == "" && en != nil {
		o = &en.Res.Owner
	}
	h := heldFailure{dev: e.DevName, what: f.What, owner: *o}
	if e.Given(rdma.HasPort) && e.Port != 0 {
		h.port = strconv.FormatUint(uint64(e.Port), 10)
	}
	if x.quiet.Failure(e, h) {
		x.count(h)
	}
}

// countExpired counts the moves to ERR nothing settled within
// failures.Hold, for a scrape after the events stopped.
func (x *Exporter) countExpired() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, h := range x.quiet.Expire(x.now()) {
		x.count(h)
	}
}

// failuresCollector is rdma_failures_total as a scrape reads it: the
// moves to ERR that waited failures.Hold are counted first.
type failuresCollector struct{ x *Exporter }

func (c failuresCollector) Describe(ch chan<- *prometheus.Desc) { c.x.failures.Describe(ch) }
func (c failuresCollector) Collect(ch chan<- prometheus.Metric) {
	c.x.countExpired()
	c.x.failures.Collect(ch)
}

// count adds one failure to rdma_failures_total. Called with x.mu held.
func (x *Exporter) count(f heldFailure) {
	o := &f.owner
	h := failOwner{holder: otherHolder}
	if o.PID != 0 || o.KernName != "" || o.Comm != "" {
		h = failOwner{holder: holderOf(o), uid: x.uid(o)}
	}
	if h.holder != otherHolder {
		named, evicted := x.ranks.fail(h, x.now())
		if evicted != nil {
			x.failures.DeletePartialMatch(prometheus.Labels{"comm": evicted.name, "container": evicted.container, "uid": evicted.uid})
		}
		if !named {
			h = failOwner{holder: otherHolder}
		}
	}
	x.failures.WithLabelValues(f.dev, f.port, f.what, h.name, h.container, h.uid).Inc()
}

type pidComm struct {
	pid  uint32
	comm string
}

// maxUIDs bounds the uids remembered; past it, they are read again.
const maxUIDs = 4096

// uid is o's uid as a label: "0" for the kernel's objects, "" when not
// known. Called with x.mu held.
func (x *Exporter) uid(o *rdma.Owner) string {
	if o.KernName != "" {
		return "0"
	}
	if x.uidOf == nil || o.PID == 0 {
		return ""
	}
	k := pidComm{o.PID, o.Comm}
	if u, ok := x.uids[k]; ok {
		return u
	}
	u := ""
	if n, ok := x.uidOf(o.PID); ok {
		u = strconv.FormatUint(uint64(n), 10)
	}
	if len(x.uids) >= maxUIDs {
		clear(x.uids)
	}
	x.uids[k] = u
	return u
}

// TracerCounts are the tracer's loss counters, read at each scrape.
type TracerCounts struct {
	Drops            func() uint64 // events the ring buffer had no room for
	PortBusyHeldBack func() uint64 // port-busy events the kernel's rate limit held back
	PortBusyDropped  func() uint64 // port-busy events refused to keep room for lifecycle events
}

// TracerMetrics is the tracer's health while one runs: hooks attached
// and skipped, events the kernel could not queue, and the port-busy
// events it held back or refused (a bind flood is bounded, and says so).
// Between tracers (one could not start, or is being restarted) it serves
// nothing: rdmatrace_part_up{part="tracer"} says why the series are gone.
type TracerMetrics struct {
	mu                                 sync.Mutex
	on                                 bool
	attached, skipped                  int
	n                                  TracerCounts
	hooks, drops, heldBack, busyDroppd *prometheus.Desc
}

// NewTracerMetrics makes the tracer's metrics, served once Attach says a
// tracer runs.
func NewTracerMetrics() *TracerMetrics {
	return &TracerMetrics{
		hooks: prometheus.NewDesc("rdmatrace_hooks", "The tracer's hooks, by whether they are attached.", []string{"state"}, nil),
		drops: prometheus.NewDesc("rdmatrace_events_dropped_total",
			"Events the kernel could not queue for the tracer (the ring buffer was full).", nil, nil),
		heldBack: prometheus.NewDesc("rdmatrace_port_busy_held_back_total",
			"Port-busy events the kernel held back: at most one a second per process, port and call.", nil, nil),
		busyDroppd: prometheus.NewDesc("rdmatrace_port_busy_dropped_total",
			"Port-busy events refused while the ring buffer was a quarter full, to keep room for lifecycle events.", nil, nil),
	}
}

// Attach serves a running tracer's health: attached and skipped hooks,
// and its loss counters, read at each scrape.
func (m *TracerMetrics) Attach(attached, skipped int, n TracerCounts) {
	m.mu.Lock()
	m.on, m.attached, m.skipped, m.n = true, attached, skipped, n
	m.mu.Unlock()
}

// Detach stops serving the tracer's series: it has stopped.
func (m *TracerMetrics) Detach() {
	m.mu.Lock()
	m.on, m.n = false, TracerCounts{}
	m.mu.Unlock()
}

// Describe is for prometheus.Collector.
func (m *TracerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.hooks, m.drops, m.heldBack, m.busyDroppd} {
		ch <- d
	}
}

// Collect is for prometheus.Collector.
func (m *TracerMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.hooks, prometheus.GaugeValue, float64(m.attached), "attached")
	ch <- prometheus.MustNewConstMetric(m.hooks, prometheus.GaugeValue, float64(m.skipped), "skipped")
	for _, c := range []struct {
		d *prometheus.Desc
		f func() uint64
	}{{m.drops, m.n.Drops}, {m.heldBack, m.n.PortBusyHeldBack}, {m.busyDroppd, m.n.PortBusyDropped}} {
		v := 0.0
		if c.f != nil {
			v = float64(c.f())
		}
		ch <- prometheus.MustNewConstMetric(c.d, prometheus.CounterValue, v)
	}
}
