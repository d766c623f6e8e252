package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// trace -r reads a recording through trace's filters and views, needing
// neither BPF nor root: the human view with each --timestamp, -j, and a
// filter; the output is the same whichever way the file is compressed.
func TestTraceReadsARecordingGolden(t *testing.T) {
	rec := filepath.Join("..", "..", "testdata", "leaklog", "6.12", "trace.ndjson")
	var out strings.Builder
	for _, args := range [][]string{
		{"trace", "-r", rec, "--timestamp", "relative", "-c", "12"},
		{"trace", "-r", rec, "--timestamp", "none", "qp", "event", "create,destroy"},
		{"trace", "-r", rec, "-j", "-c", "3"},
	} {
		stdout, stderr, code := rdmatrace(t, args...)
		out.WriteString("--- " + strings.Join(args[3:], " ") + "\n" + stdout + "--- stderr\n" + stderr + "--- exit status " + strconv.Itoa(code) + "\n")
		if code != 0 {
			t.Errorf("rdmatrace %v: exit %d: %s", args, code, stderr)
		}
	}
	goldenCLI(t, "trace-read.txt", out.String())
}

// A bad line is named (file, line, what was expected); the rest is still
// shown; the exit status is 1.
func TestTraceReadNamesBadLinesAndGoesOn(t *testing.T) {
	good := `{"time":"2026-11-23T18:00:00.5Z","event":"create","res":"pd","ifname":"rxe0","id":3,"pid":301,"comm":"leakqp"}`
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	os.WriteFile(path, []byte(good+"\n{\"time\":\"yesterday\"}\n"+good+"\n"), 0o644)
	stdout, stderr, code := rdmatrace(t, "trace", "-r", path, "--timestamp", "none")
	if code != 1 || strings.Count(stdout, "create") != 2 || !strings.Contains(stderr, "rec.ndjson:2:") || !strings.Contains(stderr, "1 lines were not events") {
		t.Errorf("exit %d\nstdout %q\nstderr %q\nwant both good lines shown, line 2 named, exit 1", code, stdout, stderr)
	}
	if _, stderr, code := rdmatrace(t, "trace", "-r", filepath.Join(t.TempDir(), "missing")); code != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("a missing recording: exit %d, %q", code, stderr)
	}
}

// The flags that go together, and those that do not, are usage errors
// before anything is attached.
func TestTraceRecordingFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"trace", "-C", "10"}, {"trace", "--print"}, {"trace", "-w", "x", "-W", "3"},
		{"trace", "-w", "-", "--print"}, {"trace", "-r", "x", "-w", "y"}, {"trace", "-r", "x", "--", "true"},
		{"trace", "--timestamp", "epoch"}, {"trace", "-w", "x", "-C", "-1"}, {"trace", "-w", "x", "-C", "1", "-W", "0"},
		{"trace", "--snapshot", "--no-snapshot"},
	} {
		_, stderr, code := rdmatrace(t, args...)
		if code != 2 || !strings.HasPrefix(stderr, "rdmatrace: trace: ") {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// doctor -- CMD runs CMD, not "--": a word before -- is a usage error.
func TestDoctorRunsTheCommandAfterTheSeparator(t *testing.T) {
	stdout, stderr, code := rdmatrace(t, "doctor", "-j", "--after", "5s", "--", "sh", "-c", "echo ran-$((40+2))")
	if !strings.Contains(stdout, "ran-42") || !strings.Contains(stdout, `"check":"modules"`) {
		t.Errorf("doctor -- sh: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if _, stderr, code := rdmatrace(t, "doctor", "ib_write_lat"); code != 2 || !strings.Contains(stderr, "after --") {
		t.Errorf("doctor ib_write_lat: exit %d, %q", code, stderr)
	}
}

// The human view of a recording that starts with what existed: one line
// of counts by default, each object with --snapshot, nothing with
// --no-snapshot; -j has every one; the rdma_cm event is one line with its
// handler's result, its thread (tid=) only with -d.
func TestTraceReadShowsTheSnapshotAsOneLine(t *testing.T) {
	lines := []string{
		`{"time":"2026-11-23T18:00:00.1Z","event":"exists","res":"pd","ifname":"rxe0","id":3,"pid":301,"comm":"rping"}`,
		`{"time":"2026-11-23T18:00:00.2Z","event":"exists","res":"qp","ifname":"rxe0","port":1,"id":0,"lqpn":17,"type":"RC","state":"RTS","pid":301,"comm":"rping"}`,
		`{"time":"2026-11-23T18:00:00.3Z","event":"cm_event_handler","res":"cm_id","ifname":"rxe0","port":1,"id":1,"state":"CONNECT","cm-event":"ESTABLISHED","status":0,"ps":"TCP","src-addr":"10.0.0.1:7174","dst-addr":"10.0.0.2:40000","pid":302,"tgid":301,"comm":"rping","actor-pid":10,"actor-comm":"kworker/0:1"}`,
		`{"time":"2026-11-23T18:00:00.4Z","event":"cm_event_done","res":"cm_id","ifname":"rxe0","port":1,"id":1,"state":"CONNECT","cm-event":"ESTABLISHED","status":0,"ps":"TCP","src-addr":"10.0.0.1:7174","dst-addr":"10.0.0.2:40000","pid":302,"tgid":301,"comm":"rping","actor-pid":10,"actor-comm":"kworker/0:1"}`,
	}
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{nil, []string{"2 resources existed when tracing started: 1 pd, 1 qp (--snapshot lists them)\n",
			"rping[301]               id=1 state=CONNECT event=ESTABLISHED result=0 src=10.0.0.1:7174 dst=10.0.0.2:40000 by=kworker/0:1[10]\n"},
			[]string{"exists", "cm_event_done", "tid="}},
		{[]string{"--snapshot", "-d"}, []string{"exists            pd", "exists            qp", "rping[301]               tid=302 id=1 "}, []string{"resources existed", "cm_event_done"}},
		{[]string{"--no-snapshot"}, []string{"cm_event_handler"}, []string{"exists", "resources existed"}},
		{[]string{"-j"}, lines, nil},
	} {
		stdout, stderr, code := rdmatrace(t, append([]string{"trace", "-r", path, "--timestamp", "none"}, c.args...)...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, stdout)
			}
		}
		for _, n := range c.not {
			if strings.Contains(stdout, n) {
				t.Errorf("%v: %q in\n%s", c.args, n, stdout)
			}
		}
	}
}

// --job selects a Slurm job's steps (its id, or JOB.STEP), --pod a pod by
// NAMESPACE/NAME as well as by UID; -j names the job and the pod.
func TestTraceReadSelectsJobsAndPods(t *testing.T) {
	ev := func(pid int, place string) string {
		return `{"time":"2026-11-23T18:00:00.1Z","event":"create","res":"pd","ifname":"rxe0","id":` + strconv.Itoa(pid) + `,"pid":` + strconv.Itoa(pid) + `,"comm":"ib_write_bw",` + place + `}`
	}
	lines := []string{
		ev(1, `"cgroup":"/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0","runtime":"slurm","container-id":"4242.0","job":"4242"`),
		ev(2, `"cgroup":"/slurm/uid_1000/job_17/step_batch/task_0","runtime":"slurm","container-id":"17.batch","job":"17"`),
		ev(3, `"cgroup":"/kubepods.slice/kubepods-pod0d1e2f3a_4b5c_6d7e_8f90_a1b2c3d4e5f6.slice","pod-uid":"0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6","pod-namespace":"train","pod-name":"llm-0"`),
	}
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want []int // the lines kept
	}{
		{[]string{"--job", "4242"}, []int{0}},
		{[]string{"--job", "17.batch,4242"}, []int{0, 1}},
		{[]string{"--job", "4242.1"}, nil},
		{[]string{"job", "17"}, []int{1}},
		{[]string{"--pod", "train/llm-0"}, []int{2}},
		{[]string{"--pod", "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"}, []int{2}},
		{[]string{"--pod", "train/llm-1"}, nil},
	} {
		stdout, stderr, code := rdmatrace(t, append([]string{"trace", "-r", path, "-j"}, c.args...)...)
		var want []string
		for _, i := range c.want {
			want = append(want, lines[i]+"\n")
		}
		if code != 0 || stdout != strings.Join(want, "") {
			t.Errorf("%v: exit %d %s\n%s\nwant\n%s", c.args, code, stderr, stdout, strings.Join(want, ""))
		}
	}
	stdout, _, _ := rdmatrace(t, "trace", "-r", path, "--timestamp", "none")
	for _, w := range []string{"container=slurm:4242.0", "container=slurm:17.batch", "container=pod:train/llm-0"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("no %q in\n%s", w, stdout)
		}
	}
}
