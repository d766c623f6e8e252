package rdma

import "testing"

func stackAt(fn string, off uint64) *CallStack {
	return &CallStack{Via: "ibv_create_qp", Frames: []CallFrame{{Func: fn, File: "leakqp.c", Line: int(off), Binary: "/bin/leakqp", Offset: off, BuildID: "ab"}}}
}

func TestLeaksAreGroupedByCallSiteAndTypeLargestFirst(t *testing.T) {
	helper, inMain := stackAt("setup_conn", 40), stackAt("main", 80)
	leak := func(s *CallStack, res ResType) *Finding {
		return &Finding{Report: LeakExitCleanup, Res: Event{Resource: Resource{Type: res}, Stack: s}}
	}
	fs := []*Finding{
		leak(inMain, ResQP),
		leak(helper, ResQP), leak(stackAt("setup_conn", 40), ResQP), // the same site, another call's stack
		leak(helper, ResCQ),
		leak(nil, ResQP),
		{Report: LeakWaiting, Res: Event{Stack: helper}},
	}
	got := ByCallSite(fs)
	want := []struct {
		fn  string
		res ResType
		n   int
	}{{"setup_conn", ResQP, 2}, {"main", ResQP, 1}, {"setup_conn", ResCQ, 1}}
	if len(got) != len(want) {
		t.Fatalf("groups %+v, want %+v", got, want)
	}
	for i, w := range want {
		if g := got[i]; g.Stack.Site().Func != w.fn || g.Res != w.res || g.N != w.n {
			t.Errorf("group %d: %s %v x%d, want %s %v x%d", i, g.Stack.Site().Func, g.Res, g.N, w.fn, w.res, w.n)
		}
	}
}

func TestAFrameSaysWhatIsKnownOfIt(t *testing.T) {
	for _, tc := range []struct {
		f    CallFrame
		want string
	}{
		{CallFrame{Func: "setup_conn", File: "/src/leakqp.c", Line: 40, Binary: "/bin/leakqp", Offset: 0x1a2b}, "setup_conn (leakqp.c:40)"},
		{CallFrame{Func: "setup_conn", Binary: "/bin/leakqp", Offset: 0x1a2b}, "setup_conn (leakqp+0x1a2b)"},
		{CallFrame{Binary: "/bin/leakqp", Offset: 0x1a2b, BuildID: "e898"}, "leakqp+0x1a2b (build-id e898)"},
		{CallFrame{Binary: "/bin/leakqp", Offset: 0x1a2b}, "leakqp+0x1a2b"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}
