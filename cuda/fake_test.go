//go:build cuda

package cuda

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/smolgo/smolgo/backend"
)

// fakeDriver builds testdata/fakecuda.c, a stand-in libcuda whose "device
// memory" is host memory and whose kernels do nothing, and returns its path
// and its counters. It needs a C compiler ($CC or cc); CI has one.
func fakeDriver(t *testing.T) (string, func() (launches, bad, live int)) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no C compiler to build the fake driver: %v", err)
		}
		t.Skipf("no C compiler to build the fake driver: %v", err)
	}
	lib := filepath.Join(t.TempDir(), "libfakecuda.so.1")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, "testdata/fakecuda.c").CombinedOutput(); err != nil {
		t.Fatalf("building the fake driver: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var launches, bad, live func() int64
	var lastError func() string
	purego.RegisterLibFunc(&launches, h, "fakecuda_launches")
	purego.RegisterLibFunc(&bad, h, "fakecuda_bad_launches")
	purego.RegisterLibFunc(&live, h, "fakecuda_live_allocs")
	purego.RegisterLibFunc(&lastError, h, "fakecuda_last_error")
	return lib, func() (int, int, int) {
		if n := bad(); n > 0 {
			t.Errorf("the fake driver refused %d launches; the last: %s", n, lastError())
		}
		return int(launches()), int(bad()), int(live())
	}
}

// With a driver that reports devices and memory, NewBackend refuses a device
// number it does not have and a model larger than the memory before it
// allocates anything, and otherwise runs the whole host side of a Step:
// upload, cache growth, every launch (their shapes checked by the fake as
// a driver would), logits back, snapshots, Close.
func TestFakeDriver(t *testing.T) {
	lib, counts := fakeDriver(t)
	m := demoModel(t)
	t.Setenv("FAKECUDA_DEVICES", "2")
	t.Setenv("FAKECUDA_MEM", "1073741824")

	_, err := NewBackend(m, Options{Device: "cuda:2", Library: lib})
	if err == nil || err.Error() != "cuda: no device cuda:2: the CUDA driver sees 2 (cuda:0 to cuda:1)" {
		t.Errorf("device 2 of 2: %v", err)
	}
	t.Setenv("FAKECUDA_MEM", "3000000")
	_, err = NewBackend(m, Options{Device: "cuda:1", Library: lib})
	if err == nil || !strings.Contains(err.Error(), "but cuda:1 (Fake GPU) has 2.9 MiB") {
		t.Errorf("too small: %v", err)
	}
	if _, _, live := counts(); live != 0 {
		t.Errorf("%d allocations after refusals, want none", live)
	}

	t.Setenv("FAKECUDA_MEM", "1073741824")
	be, err := NewBackend(m, Options{Device: "cuda:1", Library: lib, BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	b := be.(*Backend)
	if got := b.Device(); got != "cuda:1 (Fake GPU, 1.0 GiB)" {
		t.Errorf("Device() = %q", got)
	}
	V, ctx := b.Vocab(), context.Background()
	c1, _ := b.NewCache()
	c2, _ := b.NewCache()
	prompt := make([]int32, 40) // GEMM path
	for i := range prompt {
		prompt[i] = int32(i)
	}
	steps := []struct {
		seqs  []backend.Seq
		lens  []int
		error string
	}{
		{[]backend.Seq{{Cache: c1, Tokens: prompt, Logits: make([]float32, 2*V)}}, []int{40, 0}, ""},
		{[]backend.Seq{{Cache: c1, Tokens: []int32{1}, Logits: make([]float32, V)}, {Cache: c2, Tokens: []int32{5, 6, 7}, Logits: make([]float32, 3*V)}}, []int{41, 3}, ""},
		{[]backend.Seq{{Cache: c2, Tokens: make([]int32, 300)}}, []int{41, 3}, "more than the batch size 64"},
		{[]backend.Seq{{Cache: c2, Tokens: []int32{1}, Logits: make([]float32, V+1)}}, []int{41, 3}, "not a whole number of rows"},
		{[]backend.Seq{{Cache: c1, Tokens: []int32{1}}, {Cache: c1, Tokens: []int32{2}}}, []int{41, 3}, "appears twice"},
		{[]backend.Seq{{Cache: c2, Tokens: []int32{9, 9}}}, []int{41, 5}, ""},
	}
	for i, s := range steps {
		err := b.Step(ctx, s.seqs)
		if s.error == "" && err != nil || s.error != "" && (err == nil || !strings.Contains(err.Error(), s.error)) {
			t.Errorf("step %d: %v, want %q", i, err, s.error)
		}
		if c1.Len() != s.lens[0] || c2.Len() != s.lens[1] {
			t.Errorf("step %d: caches hold %d, %d; want %v", i, c1.Len(), c2.Len(), s.lens)
		}
	}
	launches, bad, _ := counts()
	if launches < 4*m.Config.Layers || bad != 0 {
		t.Errorf("%d launches, %d refused by the driver", launches, bad)
	}
	// Grow past the first allocation, then snapshot.
	long := make([]int32, 64)
	for c1.Len()+64 <= 600 {
		if err := b.Step(ctx, []backend.Seq{{Cache: c1, Tokens: long}}); err != nil {
			t.Fatal(err)
		}
	}
	if c1.Bytes() != int64(c1.(*Cache).cap)*2*int64(m.Config.Layers)*int64(2*m.Config.KVDim()) || c1.(*Cache).cap < c1.Len() {
		t.Errorf("cache of %d positions: capacity %d, %d bytes", c1.Len(), c1.(*Cache).cap, c1.Bytes())
	}
	snap, err := c1.(backend.Snapshotter).Clone(500)
	if err != nil || snap.Len() != 500 {
		t.Fatalf("Clone: %v, %d positions", err, snap.Len())
	}
	if err := c2.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if err := c2.(backend.Snapshotter).CopyFrom(c1, 2, 300); err != nil || c2.Len() != 300 {
		t.Errorf("CopyFrom: %v, %d positions", err, c2.Len())
	}
	full := &Cache{b: b, n: b.p.context, max: b.p.context}
	if err := b.Step(ctx, []backend.Seq{{Cache: full, Tokens: []int32{1}}}); !errors.Is(err, backend.ErrContextFull) {
		t.Errorf("full cache: %v", err)
	}
	for _, c := range []backend.Cache{c1, c2, snap} {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		c.Close() // twice is harmless
	}
	if _, bad, _ := counts(); bad != 0 {
		t.Errorf("%d launches refused by the driver", bad)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, live := counts(); live != 0 {
		t.Errorf("%d allocations left after Close", live)
	}
	if err := b.Step(ctx, []backend.Seq{{Cache: c1, Tokens: []int32{1}}}); err == nil {
		t.Error("Step after Close succeeded")
	}
}

// The launch check reads each kernel's parameters from the PTX and refuses
// arguments of the wrong number or kind.
func TestLaunchArgumentCheck(t *testing.T) {
	params := map[string]string{}
	for _, m := range modules {
		for k, v := range ptxParams(*m.ptx) {
			params[k] = v
		}
	}
	if got := params["attn"]; got != "pippiiiiifipp" {
		t.Errorf("attn parameters %q", got)
	}
	if got := params["gemm_q4_K"]; got != "piiiippppii" {
		t.Errorf("gemm_q4_K parameters %q", got)
	}
	if len(params) != 39 {
		t.Errorf("%d kernels in the PTX, want 39", len(params))
	}
	k := params["swiglu"]
	if err := checkArgs("swiglu", k, []arg{devPtr(1), devPtr(2), 5}); err != nil {
		t.Error(err)
	}
	for _, args := range [][]arg{{devPtr(1), devPtr(2)}, {devPtr(1), devPtr(2), float32(5)}, {devPtr(1), 2, 5}} {
		if err := checkArgs("swiglu", k, args); err == nil {
			t.Errorf("swiglu%v accepted", args)
		}
	}
}
