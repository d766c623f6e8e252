package formats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/analysis/doctor"
)

// doctor's report: a passed check's fix is left out, a failed one's
// shown, in text and JSON.
func TestWriteDoctorShowsTheFixOfWhatFailed(t *testing.T) {
	r := &doctor.Report{Target: doctor.Target{PID: 42, Comm: "rping"}, Findings: []doctor.Finding{
		{Check: "memlock", Status: doctor.Pass, Detail: "unlimited", Fix: "not shown"},
		{Check: "qp-timeout", Status: doctor.Fail, Detail: "timeout 0", Fix: "set a timeout"},
	}}
	var text, js bytes.Buffer
	if err := WriteDoctor(&text, FormatText, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteDoctor(&js, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String()} {
		if strings.Contains(out, "not shown") || !strings.Contains(out, "set a timeout") {
			t.Errorf("%s: %q", name, out)
		}
	}
	if !strings.HasPrefix(text.String(), "rping[42]:\n") || !strings.Contains(js.String(), `"check":"qp-timeout"`) {
		t.Errorf("text %q, json %q", text.String(), js.String())
	}
}
