package buildver

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.2.3", nil, "v1.2.3"}, // go install ...@v1.2.3
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}, "devel-0123456789ab-dirty"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}, "devel-0123456789ab"},
		{"(devel)", nil, "devel"}, // -buildvcs=false
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}, Settings: tc.settings}
		if got := FromBuildInfo(bi); got != tc.want {
			t.Errorf("FromBuildInfo(%s, %v) = %q, want %q", tc.main, tc.settings, got, tc.want)
		}
	}
	if got := Version("0.9.0"); got != "0.9.0" {
		t.Errorf("Version(0.9.0) = %q: the stamped version comes first", got)
	}
}
