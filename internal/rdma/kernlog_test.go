package rdma

import "testing"

// mlx5 prints a CQE syndrome through ib_wc_status_msg(): the text is read
// back to the syndrome, and the syndrome to the status mlx5 gives it in a
// completion, which differs from the text from 0x10 on.
func TestMLX5SyndromeFromTheTextTheKernelPrints(t *testing.T) {
	for _, c := range []struct {
		logged   string
		syndrome uint8
		status   string // "" when mlx5 defines no such syndrome
	}{
		{"local length error", 0x01, "LOC_LEN_ERR"},
		{"local protection error", 0x04, "LOC_PROT_ERR"},
		{"WR flushed", 0x05, "WR_FLUSH_ERR"},
		{"bad response error", 0x07, ""},
		{"operation aborted", 0x10, "BAD_RESP_ERR"},
		{"invalid EE context number", 0x11, "LOC_ACCESS_ERR"},
		{"invalid EE context state", 0x12, "REM_INV_REQ_ERR"},
		{"fatal error", 0x13, "REM_ACCESS_ERR"},
		{"response timeout error", 0x14, "REM_OP_ERR"},
		{"general error", 0x15, "RETRY_EXC_ERR"},
	} {
		syn, ok := MLX5SyndromeOfMessage(c.logged)
		if !ok || syn != c.syndrome {
			t.Errorf("%q: syndrome 0x%x %v, want 0x%x", c.logged, syn, ok, c.syndrome)
			continue
		}
		st, ok := MLX5SyndromeStatus(syn)
		if got := st.String(); (c.status == "") == ok || (ok && got != c.status) {
			t.Errorf("%q (0x%x): status %s %v, want %q", c.logged, syn, got, ok, c.status)
		}
	}
	for _, s := range []string{"unrecognized status", "Fatal Error", ""} {
		if syn, ok := MLX5SyndromeOfMessage(s); ok {
			t.Errorf("%q read as syndrome 0x%x", s, syn)
		}
	}
	// 0x16 and 0x22 print as "unrecognized status" but are defined.
	for syn, want := range map[uint8]string{0x16: "RNR_RETRY_EXC_ERR", 0x22: "REM_ABORT_ERR"} {
		if st, ok := MLX5SyndromeStatus(syn); !ok || st.String() != want {
			t.Errorf("0x%x: %s %v, want %s", syn, st, ok, want)
		}
	}
}
