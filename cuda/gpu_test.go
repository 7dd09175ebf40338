//go:build cuda

package cuda

// The GPU test suite: each kernel against package quant's, tensor's and
// rope's CPU reference, then whole models against llama.cpp's golden
// logits. Every test here needs an NVIDIA driver and GPU. Without them they
// skip with the reason, except under SMOLGO_GPU=1 (set by gputest.sh),
// where a missing GPU fails: a GPU run must not pass by testing nothing.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/quant"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
	"github.com/x448/float16"
)

// testDevice is the device the GPU tests use: SMOLGO_CUDA_DEVICE, or cuda:0.
func testDevice() string {
	if d := os.Getenv("SMOLGO_CUDA_DEVICE"); d != "" {
		return d
	}
	return "cuda:0"
}

// noGPU skips (or, under SMOLGO_GPU=1, fails) a test that found no GPU.
func noGPU(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("SMOLGO_GPU") == "1" {
		t.Fatalf("SMOLGO_GPU=1 but no GPU: %v", err)
	}
	t.Skipf("no GPU (SMOLGO_GPU=1 makes this fail): %v", err)
}

// testGPU opens the test device with its kernels loaded.
func testGPU(t testing.TB) *gpu {
	t.Helper()
	n, err := ParseDevice(testDevice())
	if err != nil {
		t.Fatal(err)
	}
	g, err := openDevice("", n)
	if err != nil {
		noGPU(t, err)
	}
	if err := g.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.close() })
	return g
}

// kernelBackend is a Backend with only what the kernel helpers (mul,
// quantize, rmsnorm, attention) read: the GPU, the config and activation
// buffers for up to maxTok tokens of maxK.
func kernelBackend(t testing.TB, g *gpu, cfg llama.Config, maxTok, maxK int) *Backend {
	t.Helper()
	b := &Backend{g: g, cfg: cfg, group: max(1, cfg.Heads/max(1, cfg.KVHeads))}
	b.w.qa = devAlloc(t, g, int64(maxTok*maxK))
	b.w.ad = devAlloc(t, g, int64(4*maxTok*maxK/32))
	b.w.as = devAlloc(t, g, int64(4*maxTok*maxK/32))
	return b
}

func devAlloc(t testing.TB, g *gpu, bytes int64) devPtr {
	t.Helper()
	var p devPtr
	if err := g.run(func() (err error) { p, err = g.alloc(bytes); return }); err != nil {
		t.Fatal(err)
	}
	return p
}

func put(t testing.TB, g *gpu, b []byte) devPtr {
	t.Helper()
	p := devAlloc(t, g, int64(len(b)))
	if err := g.run(func() error {
		if err := g.upload(p, b); err != nil {
			return err
		}
		return g.sync()
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t testing.TB, g *gpu, p devPtr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := g.run(func() error { return g.download(floats(out), p) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func do(t testing.TB, g *gpu, f func() error) {
	t.Helper()
	if err := g.run(func() error {
		if err := f(); err != nil {
			return err
		}
		return g.sync()
	}); err != nil {
		t.Fatal(err)
	}
}

// weightRows makes m rows of k weights with edge cases: a zero row, a row
// of one sign, a row with one large element per block, tiny values.
func weightRows(r *rand.Rand, m, k int) []float32 {
	w := make([]float32, m*k)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	for j := range k {
		w[0*k+j] = 0
		w[1*k+j] = float32(math.Abs(float64(w[1*k+j])))
		if j%32 == 7 {
			w[2*k+j] = 3
		}
		w[3*k+j] *= 1e-3
	}
	return w
}

// testWeights quantizes weightRows to typ: the blocks, their dequantized
// values and the bytes per row.
func testWeights(t *testing.T, r *rand.Rand, typ gguf.Type, m, k int) (blocks []byte, values []float32, rowBytes int) {
	t.Helper()
	rowBytes, _ = typ.RowBytes(k)
	blocks, values = make([]byte, m*rowBytes), make([]float32, m*k)
	if err := quant.Quantize(typ, weightRows(r, m, k), blocks); err != nil {
		t.Fatal(err)
	}
	if err := quant.Dequantize(typ, blocks, values); err != nil {
		t.Fatal(err)
	}
	return blocks, values, rowBytes
}

// TestGPUMatMul checks every weight type's GEMV (1 to 8 tokens) and GEMM
// (more) against the exact product of the dequantized weights, within the
// bound of rounding the activations to int8 blocks (float types: to the
// weight's float type), and with accumulate adding to what out held.
func TestGPUMatMul(t *testing.T) {
	g := testGPU(t)
	const M, K = 100, 768
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range supported {
		wb, wd, rowB := testWeights(t, r, typ, M, K)
		dm := devMat{ptr: put(t, g, wb), typ: typ, rows: M, cols: K, rowB: rowB, name: typ.String()}
		for _, ntok := range []int{1, 2, 3, 5, 8, 9, 70} {
			t.Run(fmt.Sprintf("%v/tokens=%d", typ, ntok), func(t *testing.T) {
				b := kernelBackend(t, g, llama.Config{}, ntok, K)
				x := make([]float32, ntok*K)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for j := range K { // a zero token and a spiky one
					x[j] = 0
					if ntok > 1 && j%50 == 0 {
						x[K+j] = 40
					}
				}
				xd := put(t, g, floats(x))
				out := make([]float32, ntok*M)
				for i := range out {
					out[i] = 1
				}
				od := put(t, g, floats(out))
				do(t, g, func() error {
					if err := b.quantize(xd, ntok, K, dm); err != nil {
						return err
					}
					return b.mul(dm, xd, ntok, od, M, true)
				})
				got := get(t, g, od, ntok*M)
				// The CPU path (quant's dot products, activations in the
				// weight's vec dot type) on the first token, for comparison.
				cpu := cpuMatVec(t, typ, wb, x[:K], M)
				var worstCPU float64
				for tok := range ntok {
					xs := x[tok*K : (tok+1)*K]
					for row := range M {
						ws := wd[row*K : (row+1)*K]
						exact, bound := dotBound(typ, ws, xs, 32)
						gpu := float64(got[tok*M+row]) - 1
						if e := math.Abs(gpu - exact); e > bound || math.IsNaN(e) {
							t.Fatalf("token %d row %d: got %v, exact %v, error %.3g > bound %.3g", tok, row, gpu, exact, e, bound)
						}
						// Tight: the exact product with the activations
						// rounded as the GPU rounds them leaves only float32
						// rounding.
						rounded, _ := dotBound(gguf.TypeF32, ws, gpuActivations(typ, xs), 0)
						if e, tight := math.Abs(gpu-rounded), 1e-5*magnitude(ws, xs)+1e-6; e > tight || math.IsNaN(e) {
							t.Fatalf("token %d row %d: got %v, exact with rounded activations %v, error %.3g > %.3g", tok, row, gpu, rounded, e, tight)
						}
						if tok == 0 {
							_, cpuBound := dotBound(typ, ws, xs, cpuBlock(typ))
							d := math.Abs(gpu - float64(cpu[row]))
							worstCPU = math.Max(worstCPU, d)
							if d > bound+cpuBound {
								t.Fatalf("row %d: GPU %v, CPU %v: apart by %.3g > %.3g", row, gpu, cpu[row], d, bound+cpuBound)
							}
						}
					}
				}
				t.Logf("max |GPU - CPU| %.3g", worstCPU)
			})
		}
	}
}

// The bound TestGPUMatMul holds the GPU to is checked here on the CPU path,
// which needs no GPU: quant's products stay within dotBound for their own
// activation blocks, on the same weights and activations.
func TestCPUWithinDotBound(t *testing.T) {
	const M, K = 100, 768
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range supported {
		wb, wd, _ := testWeights(t, r, typ, M, K)
		x := make([]float32, K)
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if i%50 == 0 {
				x[i] = 40
			}
		}
		cpu := cpuMatVec(t, typ, wb, x, M)
		var worst float64
		for row := range M {
			exact, bound := dotBound(typ, wd[row*K:(row+1)*K], x, cpuBlock(typ))
			e := math.Abs(float64(cpu[row]) - exact)
			if e > bound || math.IsNaN(e) {
				t.Errorf("%v row %d: CPU %v, exact %v, error %.3g > bound %.3g", typ, row, cpu[row], exact, e, bound)
			}
			worst = math.Max(worst, e/bound)
		}
		t.Logf("%v: worst error %.2f of the bound", typ, worst)
	}
}

// dotBound returns the exact dot product of dequantized weights w with x and
// a bound on the error of computing it with activations rounded to int8 in
// blocks of blk (|x - d*q| <= d/2, d = amax/127; blk 0: not rounded) or to
// the weight's float type, plus float32 rounding. The float32 term uses each
// block's largest weight because a block's weights are a*q + b, summed as
// a*Σq·x + b*Σx.
func dotBound(typ gguf.Type, w, x []float32, blk int) (exact, bound float64) {
	for j := range w {
		exact += float64(w[j]) * float64(x[j])
	}
	mag := magnitude(w, x)
	if quantized(typ) && blk > 0 {
		for b0 := 0; b0 < len(w); b0 += blk {
			var amax float64
			for _, v := range x[b0 : b0+blk] {
				amax = math.Max(amax, math.Abs(float64(v)))
			}
			for _, v := range w[b0 : b0+blk] {
				bound += math.Abs(float64(v)) * amax / 254
			}
		}
		bound += mag / (1 << 10) // a float16 activation scale (Q8_0 on the CPU)
	}
	switch typ { // activations rounded to the weight's type
	case gguf.TypeF16:
		bound += mag / (1 << 11)
	case gguf.TypeBF16:
		bound += mag / (1 << 8)
	}
	return exact, bound*1.01 + 1e-5*mag + 1e-6
}

// gpuActivations rounds x as the kernels do: to int8 in blocks of 32 with
// d = amax/127 and q = roundf(x/d) in float32 (quantize_q8) for the
// quantized types, to the weight's type for f16 and bf16.
func gpuActivations(typ gguf.Type, x []float32) []float32 {
	out := make([]float32, len(x))
	switch {
	case quantized(typ):
		for b0 := 0; b0 < len(x); b0 += 32 {
			var amax float32
			for _, v := range x[b0 : b0+32] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			d := amax / 127
			for j := b0; j < b0+32; j++ {
				if d != 0 {
					out[j] = d * float32(math.Round(float64(x[j]/d)))
				}
			}
		}
	case typ == gguf.TypeF16:
		for i, v := range x {
			out[i] = float16.Fromfloat32(v).Float32()
		}
	case typ == gguf.TypeBF16:
		for i, v := range x {
			u := math.Float32bits(v)
			out[i] = math.Float32frombits((u + 0x7fff + (u>>16)&1) &^ 0xffff)
		}
	default:
		copy(out, x)
	}
	return out
}

// magnitude is the float32 rounding scale of a blocked dot product: each
// element's activation times the largest weight of its block of 32.
func magnitude(w, x []float32) float64 {
	var mag float64
	for b0 := 0; b0 < len(w); b0 += 32 {
		var wmax float64
		for _, v := range w[b0 : b0+32] {
			wmax = math.Max(wmax, math.Abs(float64(v)))
		}
		for j := b0; j < b0+32; j++ {
			mag += wmax * math.Abs(float64(x[j]))
		}
	}
	return mag
}

// cpuBlock is the activation block of the CPU's dot product for a type.
func cpuBlock(typ gguf.Type) int {
	if vt, _ := quant.VecDotType(typ); vt == gguf.TypeQ8_K {
		return 256
	}
	return 32
}

// cpuMatVec is package quant's product of m rows of w with x.
func cpuMatVec(t *testing.T, typ gguf.Type, w []byte, x []float32, m int) []float32 {
	t.Helper()
	vt, err := quant.VecDotType(typ)
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := vt.RowBytes(len(x))
	a := make([]byte, ab)
	if err := quant.QuantizeActivations(vt, x, a); err != nil {
		t.Fatal(err)
	}
	mv, err := quant.MatVec(typ)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, m)
	mv(len(x), w, a, out)
	return out
}

// The RMSNorm kernel computes tensor.RMSNorm's float32 operations, gathering
// rows by index as the output norm does.
func TestGPURMSNorm(t *testing.T) {
	g := testGPU(t)
	const E, n = 576, 5
	cfg := llama.Config{Embd: E, RMSEps: 1e-6}
	b := kernelBackend(t, g, cfg, 1, 32)
	r := rand.New(rand.NewPCG(3, 4))
	x, w := make([]float32, n*E), make([]float32, E)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	rows := []int32{4, 0, 2}
	xd, wd, od, rd := put(t, g, floats(x)), put(t, g, floats(w)), devAlloc(t, g, 4*n*E), put(t, g, ints(rows))
	do(t, g, func() error { return b.rmsnorm(xd, rd, wd, od, len(rows)) })
	got := get(t, g, od, len(rows)*E)
	want := make([]float32, E)
	for i, r := range rows {
		tensor.RMSNorm(want, x[int(r)*E:(int(r)+1)*E], w, cfg.RMSEps)
		for j := range E {
			if d := math.Abs(float64(got[i*E+j] - want[j])); d > 1e-6*math.Abs(float64(want[j])) {
				t.Fatalf("row %d elem %d: %v, want %v", r, j, got[i*E+j], want[j])
			}
		}
	}
}

// RoPE on the GPU turns q and k exactly as rope.Config.Rotate does, for both
// layouts and a partial rotation.
func TestGPURoPE(t *testing.T) {
	g := testGPU(t)
	for _, c := range []rope.Config{
		{Dims: 64, Base: 10000, Layout: rope.Norm},
		{Dims: 64, Base: 5e6, Layout: rope.NeoX},
		{Dims: 32, Base: 10000, Layout: rope.Norm},
	} {
		const hd, heads, n, pos0 = 64, 3, 7, 1000
		half := c.Dims / 2
		r := rand.New(rand.NewPCG(5, 6))
		x := make([]float32, n*heads*hd)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		cs, sn := make([]float32, n*half), make([]float32, n*half)
		for tk := range n {
			c.Angles(pos0+tk, cs[tk*half:(tk+1)*half], sn[tk*half:(tk+1)*half])
		}
		xd, cd, sd := put(t, g, floats(x)), put(t, g, floats(cs)), put(t, g, floats(sn))
		neox := 0
		if c.Layout == rope.NeoX {
			neox = 1
		}
		do(t, g, func() error {
			return g.launch("rope", grid1(n*heads*half, 256), block1(256), 0, xd, cd, sd, n, heads, hd, heads*hd, half, neox)
		})
		got := get(t, g, xd, len(x))
		for tk := range n {
			for h := range heads {
				v := x[(tk*heads+h)*hd : (tk*heads+h+1)*hd]
				c.Rotate(v, cs[tk*half:(tk+1)*half], sn[tk*half:(tk+1)*half])
			}
		}
		for i := range x {
			if got[i] != x[i] {
				t.Fatalf("%+v: element %d: %v, want %v", c, i, got[i], x[i])
			}
		}
	}
}

func TestGPUSwiGLU(t *testing.T) {
	g := testGPU(t)
	const n = 4099
	r := rand.New(rand.NewPCG(7, 8))
	gate, up := make([]float32, n), make([]float32, n)
	for i := range gate {
		gate[i], up[i] = float32(r.NormFloat64()*4), float32(r.NormFloat64())
	}
	gate[0], gate[1] = -100, 100
	gd, ud := put(t, g, floats(gate)), put(t, g, floats(up))
	do(t, g, func() error { return g.launch("swiglu", grid1(n, 256), block1(256), 0, gd, ud, n) })
	got := get(t, g, gd, n)
	want := make([]float32, n)
	tensor.SwiGLU(want, gate, up)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 2e-6*math.Abs(float64(want[i]))+1e-30 {
			t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func toF16(v float32) uint16 { return float16.Fromfloat32(v).Bits() }

// Attention over a cache of f16 keys and values, prefill (one split, several
// query tiles) and decode (split-K), against float64 softmax attention.
func TestGPUAttention(t *testing.T) {
	g := testGPU(t)
	for _, c := range []struct{ hd, heads, kvHeads, L0, ns int }{
		{64, 4, 2, 0, 37},    // prefill from empty
		{64, 4, 2, 5, 100},   // prefill after a few positions
		{128, 8, 2, 1000, 1}, // decode, split-K
		{128, 4, 4, 700, 3},  // a short draft, split-K
		{64, 2, 1, 20, 1},    // decode, one split
	} {
		t.Run(fmt.Sprintf("hd%d_h%d_kv%d_L%d_n%d", c.hd, c.heads, c.kvHeads, c.L0, c.ns), func(t *testing.T) {
			cfg := llama.Config{Layers: 1, Heads: c.heads, KVHeads: c.kvHeads, HeadDim: c.hd, Context: c.L0 + c.ns}
			Q, KV, total := cfg.QDim(), cfg.KVDim(), c.L0+c.ns
			b := kernelBackend(t, g, cfg, 1, 32)
			b.p = &plan{context: total}
			r := rand.New(rand.NewPCG(uint64(c.L0), uint64(c.ns)))
			rnd := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				return v
			}
			q, k, v := rnd(c.ns*Q), rnd(total*KV), rnd(total*KV)
			cache := &Cache{b: b, max: total}
			do(t, g, func() error { return cache.reserve(total) })
			kh, vh := make([]byte, 2*c.L0*KV), make([]byte, 2*c.L0*KV)
			for i := range c.L0 * KV {
				binary.LittleEndian.PutUint16(kh[2*i:], toF16(k[i]))
				binary.LittleEndian.PutUint16(vh[2*i:], toF16(v[i]))
			}
			kc, vc := cache.layer(0)
			do(t, g, func() error {
				if err := g.upload(kc, kh); err != nil {
					return err
				}
				return g.upload(vc, vh)
			})
			cache.n = c.L0
			b.w.q, b.w.att = put(t, g, floats(q)), devAlloc(t, g, int64(4*c.ns*Q))
			b.w.k, b.w.v = put(t, g, floats(k[c.L0*KV:])), put(t, g, floats(v[c.L0*KV:]))
			b.w.part = devAlloc(t, g, 4*int64(splitMaxQueries*c.heads*maxSplits*(c.hd+2)))
			do(t, g, func() error { return b.attention(0, cache, 0, c.ns) })
			got := get(t, g, b.w.att, c.ns*Q)
			f16 := func(x float32) float64 { return float64(float16.Fromfloat32(x).Float32()) }
			scale := 1 / math.Sqrt(float64(c.hd))
			var worst float64
			for i := range c.ns {
				for h := range c.heads {
					kh := h / (c.heads / c.kvHeads)
					last := c.L0 + i
					s := make([]float64, last+1)
					m := math.Inf(-1)
					for p := range s {
						for d := range c.hd {
							s[p] += float64(q[i*Q+h*c.hd+d]) * f16(k[p*KV+kh*c.hd+d])
						}
						s[p] *= scale
						m = math.Max(m, s[p])
					}
					var sum float64
					for p := range s {
						s[p] = math.Exp(s[p] - m)
						sum += s[p]
					}
					for d := range c.hd {
						var o float64
						for p := range s {
							o += s[p] * f16(v[p*KV+kh*c.hd+d])
						}
						o /= sum
						e := math.Abs(float64(got[i*Q+h*c.hd+d]) - o)
						worst = math.Max(worst, e)
						if e > 1e-4 || math.IsNaN(e) {
							t.Fatalf("query %d head %d dim %d: %v, want %v", i, h, d, got[i*Q+h*c.hd+d], o)
						}
					}
				}
			}
			t.Logf("max error %.3g", worst)
		})
	}
}

// The output of a whole model on the GPU agrees with llama.cpp's golden
// logits within selfcheck.md's tolerance for each model whose weight types
// the kernels cover: the prompts as prefill, then teacher-forced decode.
func TestGPUGoldenLogits(t *testing.T) {
	testGPU(t).close()
	for _, name := range []string{
		"smollm3-tinyq-F32", "smollm3-tinyq-F16", "smollm3-tinyq-BF16", "smollm3-tinyq-Q8_0",
		"smollm3-tinyq-Q4_K_M", "smollm3-tinyq-Q5_K_M", "smollm3-tinyq-Q6_K",
		"llama-tiny-F32", "smollm3-tinyyarn-F32",
	} {
		t.Run(name, func(t *testing.T) {
			tol := goldenTolerance(t, name)
			gold := loadGolden(t, name)
			b := newTestBackend(t, goldenModelPath(t, name), Options{})
			V := b.Vocab()
			var all diffStats
			for _, p := range gold.Prompts {
				c, err := b.NewCache()
				if err != nil {
					t.Fatal(err)
				}
				logits := make([]float32, len(p.Tokens)*V)
				for i := 0; i < len(p.Tokens); i += b.BatchSize() {
					j := min(len(p.Tokens), i+b.BatchSize())
					if err := b.Step(context.Background(), []backend.Seq{{Cache: c, Tokens: p.Tokens[i:j], Logits: logits[i*V : j*V]}}); err != nil {
						t.Fatalf("%s prefill: %v", p.Name, err)
					}
				}
				for i, r := range p.Prefill {
					all.add(fmt.Sprintf("%s prefill pos %d", p.Name, r.Pos), logits[i*V:(i+1)*V], r.Logits)
				}
				row := make([]float32, V)
				for _, r := range p.Decode {
					if err := b.Step(context.Background(), []backend.Seq{{Cache: c, Tokens: []int32{r.Token}, Logits: row}}); err != nil {
						t.Fatalf("%s decode pos %d: %v", p.Name, r.Pos, err)
					}
					all.add(fmt.Sprintf("%s decode pos %d", p.Name, r.Pos), row, r.Logits)
				}
				c.Close()
			}
			t.Logf("%s: max abs %.4g (tolerance %g), RMS %.3g (tolerance %g); worst at %s", name, all.maxAbs, tol.MaxAbs, all.rms(), tol.RMS, all.worstWhere)
			if all.maxAbs > tol.MaxAbs || all.rms() > tol.RMS {
				t.Errorf("%s: max abs %.4g / RMS %.3g exceed the tolerance %g / %g", name, all.maxAbs, all.rms(), tol.MaxAbs, tol.RMS)
			}
		})
	}
}

// Sequences stepped together give the logits they give alone (each attends
// only to its own cache), and a failed Step leaves the caches as they were.
func TestGPUBatchOfSequences(t *testing.T) {
	testGPU(t).close()
	b := newTestBackend(t, "../testdata/smollm3-tinyq-Q4_K_M.gguf", Options{})
	V := b.Vocab()
	ctx := context.Background()
	prompts := [][]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {40, 41, 42}, {100, 7, 300, 2, 9, 9, 9}}
	alone := make([][]float32, len(prompts))
	for i, p := range prompts {
		c, _ := b.NewCache()
		alone[i] = make([]float32, len(p)*V)
		if err := b.Step(ctx, []backend.Seq{{Cache: c, Tokens: p, Logits: alone[i]}}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	var batch []backend.Seq
	for _, p := range prompts {
		c, _ := b.NewCache()
		batch = append(batch, backend.Seq{Cache: c, Tokens: p, Logits: make([]float32, len(p)*V)})
	}
	if err := b.Step(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i, s := range batch {
		var d diffStats
		d.add(fmt.Sprintf("sequence %d", i), s.Logits, alone[i])
		// Batched, the matrices go through the GEMM instead of the GEMV: the
		// same int8 products summed in another order, which can move an
		// activation across an int8 rounding boundary in a later layer
		// (llama.cpp's own batch-size spread on this model is 0.45); a wrong
		// row or cache offset moves logits by whole units.
		if d.maxAbs > 0.1 {
			t.Errorf("sequence %d: batched logits differ from alone by %.3g at %s", i, d.maxAbs, d.worstWhere)
		}
	}
	// A bad token fails the step and leaves every cache's length alone.
	bad := []backend.Seq{{Cache: batch[0].Cache, Tokens: []int32{5}}, {Cache: batch[1].Cache, Tokens: []int32{int32(V)}}}
	if err := b.Step(ctx, bad); err == nil {
		t.Fatal("token outside the vocabulary accepted")
	}
	if batch[0].Cache.Len() != len(prompts[0]) {
		t.Errorf("cache 0 holds %d after a failed step, want %d", batch[0].Cache.Len(), len(prompts[0]))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Step(cancelled, bad[:1]); err != context.Canceled {
		t.Errorf("cancelled step: %v", err)
	}
}

// A model that does not fit the device's memory is refused before upload.
func TestGPUTooBig(t *testing.T) {
	g := testGPU(t)
	m := demoModel(t)
	p, err := newPlan(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = p.fits(p.weights, g.n, g.info.name) // no room for work buffers and a cache
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
}

func newTestBackend(t testing.TB, path string, opts Options) *Backend {
	t.Helper()
	m := openModel(t, path)
	if opts.Device == "" {
		opts.Device = testDevice()
	}
	be, err := NewBackend(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := be.(*Backend)
	t.Cleanup(func() { b.Close() })
	return b
}

// benchModel is the model of the GPU benchmarks: SMOLGO_MODEL (e.g. the 3B
// Q4_K_M made by ../shared/tools/peer-bench/make-3b.sh), else the demo.
func benchModel() string {
	if p := os.Getenv("SMOLGO_MODEL"); p != "" {
		return p
	}
	return "../testdata/smollm3-tinyq-Q4_K_M.gguf"
}

// BenchmarkGPUPrefill is llama-bench's pp512: one 512-token prompt step.
func BenchmarkGPUPrefill(bb *testing.B) {
	testGPU(bb).close()
	b := newTestBackend(bb, benchModel(), Options{Context: 4096})
	tokens := make([]int32, 512)
	for i := range tokens {
		tokens[i] = int32(i*7919) % int32(b.Vocab())
	}
	c, _ := b.NewCache()
	logits := make([]float32, b.Vocab())
	bb.ResetTimer()
	for range bb.N {
		c.Truncate(0)
		if err := b.Step(context.Background(), []backend.Seq{{Cache: c, Tokens: tokens, Logits: logits}}); err != nil {
			bb.Fatal(err)
		}
	}
	bb.ReportMetric(float64(bb.N*len(tokens))/bb.Elapsed().Seconds(), "tokens/s")
	reportMemory(bb, b, c)
}

// reportMemory reports the device memory in use beside what the weights and
// the cache need (the bound: weights + KV + 10 %). The driver's
// context itself takes a few hundred MiB, counted in the first figure.
func reportMemory(bb *testing.B, b *Backend, c backend.Cache) {
	used, err := b.g.used()
	if err != nil {
		bb.Fatal(err)
	}
	bb.ReportMetric(float64(used)/(1<<20), "MiB-used")
	bb.ReportMetric(float64(b.p.weights+c.Bytes())/(1<<20), "MiB-weights+KV")
}

// BenchmarkGPUDecode is llama-bench's tg128 (at a context depth of
// SMOLGO_DEPTH positions, default 0): 128 one-token steps.
func BenchmarkGPUDecode(bb *testing.B) {
	testGPU(bb).close()
	depth, _ := strconv.Atoi(os.Getenv("SMOLGO_DEPTH"))
	b := newTestBackend(bb, benchModel(), Options{Context: depth + 256})
	c, _ := b.NewCache()
	ctx := context.Background()
	for i := 0; i < depth; i += b.BatchSize() {
		n := min(b.BatchSize(), depth-i)
		if err := b.Step(ctx, []backend.Seq{{Cache: c, Tokens: make([]int32, n)}}); err != nil {
			bb.Fatal(err)
		}
	}
	logits := make([]float32, b.Vocab())
	bb.ResetTimer()
	for range bb.N {
		c.Truncate(depth)
		for k := range 128 {
			if err := b.Step(ctx, []backend.Seq{{Cache: c, Tokens: []int32{int32(k)}, Logits: logits}}); err != nil {
				bb.Fatal(err)
			}
		}
	}
	bb.ReportMetric(float64(bb.N*128)/bb.Elapsed().Seconds(), "tokens/s")
	reportMemory(bb, b, c)
}
