package tracer

import (
	"strings"
	"testing"
)

const sampleMaps = `55d4c3a00000-55d4c3a01000 r--p 00000000 fd:01 1311 /usr/bin/leak sites
55d4c3a01000-55d4c3a02000 r-xp 00001000 fd:01 1311 /usr/bin/leak sites
7f1c2a000000-7f1c2a028000 r--p 00000000 fd:01 2222 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a028000-7f1c2a1bd000 r-xp 00028000 fd:01 2222 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd8c9f0000-7ffd8ca11000 rw-p 00000000 00:00 0 [stack]
7ffd8cbf8000-7ffd8cbfa000 r-xp 00000000 00:00 0 [vdso]
`

func TestMapsKeepTheExecutableMappingsOfFiles(t *testing.T) {
	ms, err := parseMaps(strings.NewReader(sampleMaps), "maps")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].path != "/usr/bin/leak sites" || ms[1].ino != 2222 {
		t.Fatalf("mappings %+v, want the program's and libc's text", ms)
	}
	for _, tc := range []struct {
		addr uint64
		path string
		off  uint64
	}{
		{0x55d4c3a01166, "/usr/bin/leak sites", 0x1166},
		{0x7f1c2a02924a, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x2924a},
		{0x7ffd8cbf8100, "", 0}, // the vdso is no file
		{0x55d4c3a00010, "", 0}, // not executable
	} {
		m := findMapping(ms, tc.addr)
		switch {
		case tc.path == "" && m != nil:
			t.Errorf("0x%x: in %s, want no file", tc.addr, m.path)
		case tc.path != "" && (m == nil || m.path != tc.path || tc.addr-m.start+m.off != tc.off):
			t.Errorf("0x%x: %+v, want %s at 0x%x", tc.addr, m, tc.path, tc.off)
		}
	}
}

func TestABadMapsLineIsAnErrorNamingIt(t *testing.T) {
	ms, err := parseMaps(strings.NewReader(sampleMaps[:200]+"\nnot a mapping\n"), "/proc/7/maps")
	if err == nil || !strings.Contains(err.Error(), "/proc/7/maps:4: expected start-end perms offset dev inode") {
		t.Errorf("error %v, want one naming /proc/7/maps:4 and what was expected", err)
	}
	if len(ms) != 1 {
		t.Errorf("%d mappings before the bad line, want 1", len(ms))
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add(sampleMaps)
	f.Add("0-1 r-xp 0 0:0 1 /x\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, _ := parseMaps(strings.NewReader(s), "maps")
		for i := range ms {
			if ms[i].end < ms[i].start || (i > 0 && ms[i].start < ms[i-1].start) {
				t.Fatalf("mapping %+v out of order or inverted", ms[i])
			}
			if m := findMapping(ms, ms[i].start); m == nil {
				t.Fatalf("0x%x: no mapping, though one starts there", ms[i].start)
			}
		}
	})
}
