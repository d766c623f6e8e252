package kernlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchLogs are the logs the reader is measured on, about 64 MiB each:
//
//   - dmesg: the lines of a busy boot's dmesg, each a line of a driver
//     (the review's "[    1.000000] infiniband rxe0: x" among others),
//     with no report;
//   - dmesg-T, journal: the same in dmesg -T and journalctl -o short form;
//   - mixed: the real logs of testdata/kernlog (leak WARNINGs, hung
//     tasks, named reports, syndromes) between a thousand ordinary lines
//     each;
//   - blank: empty and blank lines, as a decompressed bomb of newlines is.
func benchLog(kind string) []byte {
	const size = 64 << 20
	var b bytes.Buffer
	b.Grow(size + 4096)
	other := []string{
		"infiniband rxe0: x",
		"rdma_rxe: loaded",
		"infiniband rxe0: set active",
		"mlx5_core 0000:3b:00.0: E-Switch: Total vports 10, per vport: max uc(128) max mc(2048)",
		"IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
		"systemd[1]: Started session-4.scope - Session 4 of User root.",
		"audit: type=1400 audit(1700000000.123:42): apparmor=\"STATUS\" operation=\"profile_load\"",
		"EXT4-fs (vda1): mounted filesystem with ordered data mode. Quota mode: none.",
	}
	var reports [][]byte
	if kind == "mixed" {
		ins, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "kernlog", "*.dmesg"))
		for _, in := range ins {
			data, err := os.ReadFile(in)
			if err != nil {
				panic(err)
			}
			reports = append(reports, data)
		}
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; b.Len() < size; i++ {
		secs := float64(i) / 1000
		switch kind {
		case "blank":
			b.WriteString([]string{"\n", "\n", "  \n", "\r\n", "\t\n"}[i%5])
			continue
		case "dmesg-T":
			fmt.Fprintf(&b, "[%s] ", t0.Add(time.Duration(i)*time.Millisecond).Format("Mon Jan _2 15:04:05 2006"))
		case "journal":
			fmt.Fprintf(&b, "%s node17 kernel: ", t0.Add(time.Duration(i)*time.Millisecond).Format("Jan _2 15:04:05"))
		default:
			fmt.Fprintf(&b, "[%12.6f] ", secs)
		}
		b.WriteString(other[i%len(other)])
		b.WriteByte('\n')
		if kind == "mixed" && i%1000 == 999 {
			b.Write(reports[(i/1000)%len(reports)])
		}
	}
	return b.Bytes()
}

// BenchmarkReader reads each benchLog on one core:
//
//	go test -run '^$' -bench Reader -benchmem -cpu 1 ./internal/source/kernlog/
func BenchmarkReader(b *testing.B) {
	for _, kind := range []string{"dmesg", "dmesg-T", "journal", "mixed", "blank"} {
		b.Run(kind, func(b *testing.B) {
			log := benchLog(kind)
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				r := NewReader(bytes.NewReader(log), "bench")
				r.SetLocation(time.UTC)
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
				}
			}
			reportCPU(b, cpu, len(log))
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// machine shared with other work, the rate per CPU second is what says
// what reading costs (ns/op and MB/s are wall time).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the bytes read per CPU second since start, in MB as
// SetBytes's MB/s are (1e6 bytes).
func reportCPU(b *testing.B, start time.Duration, size int) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/d.Seconds(), "MB/cpu-s")
	}
}
