package tracer

import (
	"io/fs"
	"os"
	"strings"
)

// Preemption is what rdmatrace knows of the kernel's preemption model.
//
// It matters because an fentry/fexit program runs with migration disabled
// but preemption enabled: on a preemptible kernel it can be preempted, and
// another task that enters the same function on that CPU meanwhile finds the
// program active and the trampoline skips it (a recursion miss, counted in
// the program's stats but otherwise lost). Kprobe handlers run with
// preemption off, so they do not lose runs that way (measured on Debian
// sid's 7.2, "full (lazy)": 18 misses on fentry_restrack_del in 4 rounds of
// killed rping pairs, none with kprobes).
type Preemption struct {
	// Model is the active model as the kernel names it: "none",
	// "voluntary", "full", "lazy", "rt", "none or voluntary" (a build
	// without PREEMPT in its version string), or "" when unknown.
	Model string
	// Source says where Model was read, or why it could not be.
	Source string
}

// Preemptible says whether fentry programs can be preempted.
func (p Preemption) Preemptible() bool {
	return p.Model == "full" || p.Model == "lazy" || p.Model == "rt"
}

// Known says whether the model was found.
func (p Preemption) Known() bool { return p.Model != "" }

// String says the model and where it was read, for messages.
func (p Preemption) String() string {
	if !p.Known() {
		return "preemption model unknown: " + p.Source
	}
	return "preemption " + p.Model + " (" + p.Source + ")"
}

// DetectPreemption finds the running kernel's preemption model.
func DetectPreemption() Preemption { return detectPreemption(os.DirFS("/")) }

const schedPreempt = "sys/kernel/debug/sched/preempt"

// detectPreemption reads, in order: debugfs's sched/preempt, where a
// PREEMPT_DYNAMIC kernel shows every model and the active one in
// parentheses ("none voluntary full (lazy)"); else the kernel version
// string (uname -v), which names the build's model: PREEMPT_RT, PREEMPT
// or PREEMPT_LAZY (preemptible), PREEMPT_DYNAMIC (chosen at boot: unknown
// without debugfs), or nothing (none or voluntary).
func detectPreemption(root fs.FS) Preemption {
	if b, err := fs.ReadFile(root, schedPreempt); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if m, ok := strings.CutPrefix(f, "("); ok {
				if m, ok = strings.CutSuffix(m, ")"); ok && m != "" {
					return Preemption{Model: m, Source: "/" + schedPreempt}
				}
			}
		}
	}
	b, _ := fs.ReadFile(root, "proc/sys/kernel/version") // uname -v
	version := strings.TrimSpace(string(b))
	flags := map[string]bool{}
	for _, f := range strings.Fields(version) {
		flags[f] = true
	}
	src := "uname -v: " + version
	switch {
	case version == "":
		return Preemption{Source: "no kernel version string"}
	case flags["PREEMPT_RT"]:
		return Preemption{Model: "rt", Source: src}
	case flags["PREEMPT_DYNAMIC"]:
		return Preemption{Source: "a PREEMPT_DYNAMIC kernel, whose model is chosen at boot, and no readable /" + schedPreempt + " (mount debugfs to tell)"}
	case flags["PREEMPT_LAZY"]:
		return Preemption{Model: "lazy", Source: src}
	case flags["PREEMPT"]:
		return Preemption{Model: "full", Source: src}
	}
	return Preemption{Model: "none or voluntary", Source: src}
}

// haveKprobes says whether kprobes can be created: the kprobe PMU, or
// tracefs's kprobe_events (cilium/ebpf's fallback).
func haveKprobes(root fs.FS) bool {
	for _, p := range []string{
		"sys/bus/event_source/devices/kprobe/type",
		"sys/kernel/tracing/kprobe_events",
		"sys/kernel/debug/tracing/kprobe_events",
	} {
		if _, err := fs.Stat(root, p); err == nil {
			return true
		}
	}
	return false
}

// KprobeChoice is whether the hooks that lose events to preempted fentry
// programs try kprobes first, and why.
type KprobeChoice struct {
	First bool
	// Why says the reason in a few words, for the attach summary and -v:
	// set when First, and when the kernel is preemptible or its model
	// unknown but fentry is kept all the same.
	Why string
}

func chooseKprobes(p Preemption, fallback, kprobes bool) KprobeChoice {
	switch {
	case fallback:
		return KprobeChoice{} // kprobes anyway
	case p.Preemptible() && kprobes:
		return KprobeChoice{First: true, Why: "preemptible kernel (" + p.Model + ")"}
	case p.Preemptible():
		return KprobeChoice{Why: "preemptible kernel (" + p.Model + ") without kprobes: fentry/fexit kept; a preempted program makes the kernel skip runs (counted as recursion misses)"}
	case !p.Known():
		return KprobeChoice{Why: p.String() + "; fentry/fexit kept: if the kernel is preemptible they can skip runs (counted as recursion misses), and --fallback avoids that"}
	}
	return KprobeChoice{}
}
