package debugfs

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
)

// genDump makes a legacy dump of n lines as `cat /sys/kernel/debug/rdma_cm/*`
// gives it on a busy host: device files of 1000 lines, each under its
// header, half of them with PID and COMM columns; listeners, IPv4 and IPv6
// connections, IDs bound to no port.
func genDump(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 80)
	const plain = "TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\n"
	const owned = "TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM\n"
	for i := 0; i < n; i++ {
		dev := i / 1000
		withOwner := dev%2 == 1
		if i%1000 == 0 {
			if withOwner {
				b.WriteString(owned)
			} else {
				b.WriteString(plain)
			}
			continue
		}
		name := "mlx4_" + strconv.Itoa(dev%8)
		switch i % 10 {
		case 0:
			fmt.Fprintf(&b, "%s 0 0.0.0.0:%d TCP LISTEN 0", name, 7000+i%100)
		case 1:
			fmt.Fprintf(&b, "ETH %s 1 eth2 [fe80::1%%eth2]:%d [fe80::%x]:4791 UDP CONNECT %d", name, 30000+i%30000, i%4096, i%1000000)
		case 2:
			fmt.Fprintf(&b, "ETH %s 2 eth3 10.2.%d.5:%d UDP ADDR_RESOLVED 0", name, i%256, 20000+i%40000)
		default:
			fmt.Fprintf(&b, "IB %s 1 ib0 192.30.%d.%d:%d 192.30.3.248:7174 TCP CONNECT %d", name, i%256, (i/256)%256, 32768+i%32768, 100000+i%900000)
		}
		if withOwner {
			fmt.Fprintf(&b, " %d %s", 1000+i%50, [...]string{"rping", "nvmet", "fio", "ib_write_bw"}[i%4])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func drain(tb testing.TB, in []byte) (recs int) {
	rd := NewReader(bytes.NewReader(in), "bench")
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			tb.Fatal(err)
		}
		recs++
	}
}

// BenchmarkParseLegacy reads a generated dump of 1 M lines (about 75 MB).
//
//	go test -run '^$' -bench ParseLegacy -benchmem -cpu 1 ./debugfs/
func BenchmarkParseLegacy(b *testing.B) {
	dump := genDump(1 << 20)
	b.SetBytes(int64(len(dump)))
	b.ReportAllocs()
	var recs int
	for b.Loop() {
		recs = drain(b, dump)
	}
	b.ReportMetric(float64(recs)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestMemoryDoesNotGrowWithTheDump reads dumps of 100 k and 1 M lines and
// compares what reading them allocated: the same, bar the name cache.
func TestMemoryDoesNotGrowWithTheDump(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 M lines")
	}
	alloc := func(n int) uint64 {
		dump := genDump(n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if got := drain(t, dump); got < n*99/100 {
			t.Fatalf("%d records of %d lines", got, n)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(100_000), alloc(1_000_000)
	t.Logf("allocated %d bytes for 100 k lines, %d bytes for 1 M lines", small, large)
	if large > 2*small+(1<<20) {
		t.Errorf("allocation grows with the dump: %d bytes for 100 k lines, %d for 1 M", small, large)
	}
}
