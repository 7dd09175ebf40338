package quant

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU measures the CPU time the benchmark's own thread spends, so a
// kernel's speed can be read on a machine shared with other work: it reports
// "cpu-GB/s", the bytes set with b.SetBytes per second of this thread's CPU
// time, next to the wall-clock MB/s. Call the returned function after the
// loop.
func threadCPU(b *testing.B, bytes int64) func() {
	runtime.LockOSThread()
	start := threadNow()
	return func() {
		d := threadNow() - start
		runtime.UnlockOSThread()
		if d > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/d.Seconds()/1e9, "cpu-GB/s")
		}
	}
}

func threadNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
