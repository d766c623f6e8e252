package tracer

import (
	"testing"
	"testing/fstest"
)

// TestPreemptionDetection: the active model in debugfs's sched/preempt
// wins; without it, the kernel version string (uname -v) names the build's
// model, and a PREEMPT_DYNAMIC kernel without debugfs is unknown.
func TestPreemptionDetection(t *testing.T) {
	const sid = "#1 SMP PREEMPT_DYNAMIC Debian 7.2.13-1 (2026-10-30)"
	for _, tc := range []struct {
		name, sched, version string
		model                string
		preemptible          bool
	}{
		{"sid's debugfs, full (lazy)", "full (lazy)\n", sid, "lazy", true},
		{"every model listed, lazy active", "none voluntary full (lazy)\n", sid, "lazy", true},
		{"Debian 6.12's debugfs, voluntary", "none (voluntary) full lazy\n", "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1~deb12u1", "voluntary", false},
		{"full chosen at boot", "none voluntary (full) lazy\n", sid, "full", true},
		{"none chosen at boot", "(none) voluntary full\n", sid, "none", false},
		{"a debugfs file without a mark falls back to uname", "none voluntary full lazy\n", "#1 SMP PREEMPT_RT Debian 7.2.13-1", "rt", true},
		{"PREEMPT_RT build", "", "#1 SMP PREEMPT_RT Debian 7.2.13-1", "rt", true},
		{"PREEMPT build", "", "#1 SMP PREEMPT Tue Jan 1", "full", true},
		{"PREEMPT_LAZY build", "", "#1 SMP PREEMPT_LAZY Tue Jan 1", "lazy", true},
		{"PREEMPT_DYNAMIC without debugfs is unknown", "", sid, "", false},
		{"no PREEMPT in the version: none or voluntary", "", "#1 SMP Debian 5.10.262-1 (2026-09-01)", "none or voluntary", false},
		{"no version string at all is unknown", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fstest.MapFS{}
			if tc.sched != "" {
				root[schedPreempt] = &fstest.MapFile{Data: []byte(tc.sched)}
			}
			if tc.version != "" {
				root["proc/sys/kernel/version"] = &fstest.MapFile{Data: []byte(tc.version + "\n")}
			}
			p := detectPreemption(root)
			if p.Model != tc.model || p.Preemptible() != tc.preemptible {
				t.Errorf("model %q preemptible %v (%s), want %q %v", p.Model, p.Preemptible(), p.Source, tc.model, tc.preemptible)
			}
			if p.Source == "" {
				t.Error("no source said")
			}
		})
	}
}

func TestKprobesExistWithThePMUOrTracefs(t *testing.T) {
	if haveKprobes(fstest.MapFS{"sys/bus/event_source/devices/tracepoint/type": {}}) {
		t.Error("kprobes found where only the tracepoint PMU is")
	}
	for _, p := range []string{"sys/bus/event_source/devices/kprobe/type", "sys/kernel/tracing/kprobe_events"} {
		if !haveKprobes(fstest.MapFS{p: {}}) {
			t.Errorf("kprobes not found with %s", p)
		}
	}
}

// TestKprobesFirstOnlyOnPreemptibleKernelsWithKprobes: kprobes first on a
// preemptible kernel that has them; fentry kept, and said why, when the
// kernel is preemptible without kprobes or its model is unknown; nothing
// said on a voluntary kernel or under --fallback (kprobes anyway).
func TestKprobesFirstOnlyOnPreemptibleKernelsWithKprobes(t *testing.T) {
	lazy := Preemption{Model: "lazy", Source: "x"}
	vol := Preemption{Model: "voluntary", Source: "x"}
	unknown := Preemption{Source: "PREEMPT_DYNAMIC kernel"}
	for _, tc := range []struct {
		name              string
		p                 Preemption
		fallback, kprobes bool
		first, why        bool
	}{
		{"preemptible with kprobes", lazy, false, true, true, true},
		{"preemptible without kprobes", lazy, false, false, false, true},
		{"voluntary", vol, false, true, false, false},
		{"unknown", unknown, false, true, false, true},
		{"preemptible under --fallback", lazy, true, true, false, false},
	} {
		c := chooseKprobes(tc.p, tc.fallback, tc.kprobes)
		if c.First != tc.first || (c.Why != "") != tc.why {
			t.Errorf("%s: %+v, want first %v, a reason %v", tc.name, c, tc.first, tc.why)
		}
	}
}
