//go:build gc && !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// BenchmarkGEMM compares the prefill kernels on a batch of a prefill's
// size: "x4" is one weight row × 4 tokens (dot_*_amd64.s; q8_0's is the
// AVX2 one, AVX-512 has none), "gemm" the
// 16-row panels of gemm_amd64.go (q8_0: gemm_legacy_amd64.go), panel
// unpacking included,
// "gemm-ilv" the same over interleaved weights (panels unpacked from them).
// Rates
// count the weights once per token (as if streamed per token), so they
// compare with MatVec's; tok/s is tokens per second (wall clock) through
// as many weights as a 2048×2048 matrix, like a 3B model's attention
// projections.
//
//	go test -run '^$' -bench GEMM ./quant/
func BenchmarkGEMM(b *testing.B) {
	if detectLevel() < levelAVX512 {
		b.Skip("no AVX-512 VNNI")
	}
	ks := newKernelSet(levelAVX512)
	const rows = 128
	variants := []struct {
		t    gguf.Type
		name string
		mm   MatMulFunc
	}{
		{gguf.TypeQ4_K, "gemm-ilv", ks.interleaved[gguf.TypeQ4_K]},
		{gguf.TypeQ6_K, "gemm-ilv", ks.interleaved[gguf.TypeQ6_K]},
		{gguf.TypeQ4_K, "x4", matMulBy4(gguf.TypeQ4_K, matQ4KAVX512x4, nil, ks.matVecs[gguf.TypeQ4_K])},
		{gguf.TypeQ4_K, "gemm", ks.matMuls[gguf.TypeQ4_K]},
		{gguf.TypeQ6_K, "x4", matMulBy4(gguf.TypeQ6_K, matQ6KAVX512x4, nil, ks.matVecs[gguf.TypeQ6_K])},
		{gguf.TypeQ6_K, "gemm", ks.matMuls[gguf.TypeQ6_K]},
		{gguf.TypeQ5_K, "x4", matMulBy4(gguf.TypeQ5_K, matQ5KAVX512x4, nil, ks.matVecs[gguf.TypeQ5_K])},
		{gguf.TypeQ5_K, "gemm", ks.matMuls[gguf.TypeQ5_K]},
		{gguf.TypeQ8_0, "x4", matMulBy4(gguf.TypeQ8_0, matQ8_0AVX2x4, nil, matVecByRows(gguf.TypeQ8_0, dotQ8_0))},
		{gguf.TypeQ8_0, "gemm", ks.matMuls[gguf.TypeQ8_0]},
	}
	for _, n := range []int{2048, 11008} {
		for _, v := range variants {
			rng := rand.New(rand.NewPCG(15, 16))
			w := makeWeights(rng, v.t, n*rows, fillRandom)
			rb, _ := v.t.RowBytes(n)
			vt, _ := VecDotType(v.t)
			if v.name == "gemm-ilv" {
				iw := make([]byte, len(w))
				if v.t == gguf.TypeQ4_K {
					interleaveQ4K(iw, w, rows, n/256, ks.ilvRows)
				} else {
					interleaveQ6K(iw, w, rows, n/256, ks.ilvRows)
				}
				w = iw
			}
			for _, ntok := range []int{16, 32, 64, 512} {
				a := make([]byte, 0, 0)
				for range ntok {
					a = append(a, makeActs(b, rng, vt, n, fillRandom)...)
				}
				out := make([]float32, rows*ntok)
				b.Run(fmt.Sprintf("%v/n=%d/%s/tok=%d", v.t, n, v.name, ntok), func(b *testing.B) {
					bytes := int64(rows * rb * ntok)
					b.SetBytes(bytes)
					done := cpuRate(b, bytes)
					for b.Loop() {
						v.mm(n, w, rows, a, ntok, out, rows)
					}
					b.ReportMetric(float64(b.N*ntok)*float64(rows*n)/(2048*2048)/b.Elapsed().Seconds(), "tok/s")
					done()
				})
			}
		}
	}
}

// TestGEMMPack holds the assembly panel unpacking to the Go packers, byte
// for byte, and the Go packers to the dequantized weights.
func TestGEMMPack(t *testing.T) {
	if detectLevel() < levelAVX512 {
		t.Skip("no AVX-512 VNNI")
	}
	for _, tc := range []struct {
		t        gguf.Type
		asm, ref gemmPack
	}{
		{gguf.TypeQ4_K, gemmPackQ4K, gemmPackQ4KGo},
		{gguf.TypeQ5_K, gemmPackQ5K, gemmPackQ5KGo},
		{gguf.TypeQ6_K, gemmPackQ6K, gemmPackQ6KGo},
	} {
		rng := rand.New(rand.NewPCG(17, 18))
		const nb = 3
		n := 256 * nb
		rb, _ := tc.t.RowBytes(n)
		w := makeWeights(rng, tc.t, n*gemmRows, fillRandom)
		got, want := make([]byte, nb*gemmPanelLen), make([]byte, nb*gemmPanelLen)
		tc.asm(got, w, rb, nb)
		tc.ref(want, w, rb, nb)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%v: panel byte %d (block %d, offset %d): asm %#x, Go %#x", tc.t, i, i/gemmPanelLen, i%gemmPanelLen, got[i], want[i])
			}
		}
		// The quants times the scales are the dequantized weights (q6_K:
		// after taking the 32 back; q4_K: before the mins).
		deq := make([]float32, n*gemmRows)
		if err := Dequantize(tc.t, w, deq); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < gemmRows; r++ {
			for e := 0; e < n; e++ {
				p := want[e/256*gemmPanelLen:]
				i := e % 256
				q := float64(p[64*(i/4)+4*r+i%4])
				sc := float64(int32(binary.LittleEndian.Uint32(p[gemmPanelSC+64*(i/16)+4*r:])))
				d := float64(math.Float32frombits(binary.LittleEndian.Uint32(p[gemmPanelD+4*r:])))
				var v float64
				if tc.t == gguf.TypeQ6_K {
					v = d * sc * (q - 32)
				} else {
					mc := float64(int16(binary.LittleEndian.Uint16(p[gemmPanelMC+64*(i/32)+4*r:])))
					dm := float64(math.Float32frombits(binary.LittleEndian.Uint32(p[gemmPanelDM+4*r:])))
					v = d*sc*q - dm*mc
				}
				if want := float64(deq[r*n+e]); math.Abs(v-want) > 1e-6*math.Abs(want)+1e-30 {
					t.Fatalf("%v row %d element %d: panel gives %g, Dequantize %g", tc.t, r, e, v, want)
				}
			}
		}
	}
}

// BenchmarkGEMMPack is the cost of unpacking one panel of 16 rows of 2048
// (8 blocks), which a GEMM call pays once per 16 rows for all its tokens.
func BenchmarkGEMMPack(b *testing.B) {
	if detectLevel() < levelAVX512 {
		b.Skip("no AVX-512 VNNI")
	}
	for _, tc := range []struct {
		t    gguf.Type
		name string
		pack gemmPack
	}{
		{gguf.TypeQ4_K, "asm", gemmPackQ4K}, {gguf.TypeQ4_K, "go", gemmPackQ4KGo},
		{gguf.TypeQ5_K, "asm", gemmPackQ5K}, {gguf.TypeQ5_K, "go", gemmPackQ5KGo},
		{gguf.TypeQ6_K, "asm", gemmPackQ6K}, {gguf.TypeQ6_K, "go", gemmPackQ6KGo},
	} {
		const nb = 8
		rng := rand.New(rand.NewPCG(19, 20))
		rb, _ := tc.t.RowBytes(256 * nb)
		w := makeWeights(rng, tc.t, 256*nb*gemmRows, fillRandom)
		panel := make([]byte, nb*gemmPanelLen)
		b.Run(fmt.Sprintf("%v/%s", tc.t, tc.name), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				tc.pack(panel, w, rb, nb)
			}
		})
	}
}

// TestGEMMPackInterleaved holds the panels unpacked from interleaved
// weights (assembly and Go) to the panel gemmPackQ4KGo or gemmPackQ6KGo
// makes from the same rows in the file's layout, byte for byte: the GEMM
// then gives the same results over either layout.
func TestGEMMPackInterleaved(t *testing.T) {
	for _, tc := range []struct {
		t          gguf.Type
		file       gemmPack
		asm, ref   gemmPack
		interleave func(dst, src []byte, rows, nb, g int)
	}{
		{gguf.TypeQ4_K, gemmPackQ4KGo, gemmPackQ4KIlv, gemmPackQ4KIlvGo, interleaveQ4K},
		{gguf.TypeQ6_K, gemmPackQ6KGo, gemmPackQ6KIlv, gemmPackQ6KIlvGo, interleaveQ6K},
	} {
		for _, f := range allFills {
			rng := rand.New(rand.NewPCG(21, 22))
			const nb = 3
			n := 256 * nb
			rb, _ := tc.t.RowBytes(n)
			w := makeWeights(rng, tc.t, n*gemmRows, f)
			iw := make([]byte, len(w))
			tc.interleave(iw, w, gemmRows, nb, gemmRows)
			want := make([]byte, nb*gemmPanelLen)
			tc.file(want, w, rb, nb)
			packs := []struct {
				name string
				pack gemmPack
			}{{"Go", tc.ref}}
			if detectLevel() >= levelAVX512 {
				packs = append(packs, struct {
					name string
					pack gemmPack
				}{"asm", tc.asm})
			} else {
				t.Logf("%v: the assembly unpacking needs AVX-512 VNNI, which this CPU lacks: only its Go twin is tested", tc.t)
			}
			for _, p := range packs {
				got := make([]byte, nb*gemmPanelLen)
				p.pack(got, iw, rb, nb)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%v %v %s: panel byte %d (block %d, offset %d): %#x from the interleaved layout, %#x from the file's",
							tc.t, f, p.name, i, i/gemmPanelLen, i%gemmPanelLen, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestInterleavedGEMM checks, at every level with interleaved kernels,
// the interleaved MatMul on prefill-sized batches: where the GEMM takes
// over (AVX-512: whole panels of 16 rows, tokens in fours) its results
// must be those of the file layout's MatMul to the bit, and the rest those
// of the interleaved kernels' Go twin.
func TestInterleavedGEMM(t *testing.T) {
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		for _, it := range interleaveTypes {
			im, g := ks.interleaved[it.t], ks.ilvRows
			if im == nil {
				continue
			}
			fm := ks.matMuls[it.t]
			for _, sh := range []struct{ n, nrows, ntok int }{{512, 32, 24}, {768, 48, 27}, {256, 16, 30}, {512, 48, 64}} {
				rng := rand.New(rand.NewPCG(23, uint64(sh.ntok)))
				w := makeWeights(rng, it.t, sh.n*sh.nrows, fillRandom)
				iw := make([]byte, len(w))
				it.interleave(iw, w, sh.nrows, sh.n/256, g)
				var a []byte
				for range sh.ntok {
					a = append(a, makeActs(t, rng, gguf.TypeQ8_K, sh.n, fillRandom)...)
				}
				ldo := sh.nrows + 5
				got, file, twin := make([]float32, sh.ntok*ldo), make([]float32, sh.ntok*ldo), make([]float32, sh.ntok*ldo)
				im(sh.n, iw, sh.nrows, a, sh.ntok, got, ldo)
				fm(sh.n, w, sh.nrows, a, sh.ntok, file, ldo)
				interleavedMatMulGo(it.t, g)(sh.n, iw, sh.nrows, a, sh.ntok, twin, ldo)
				gemm := level >= levelAVX512 && sh.nrows >= gemmRows
				for tok := range sh.ntok {
					for r := range sh.nrows {
						want, from := twin[tok*ldo+r], "Go twin"
						if gemm && r < sh.nrows/gemmRows*gemmRows && tok < sh.ntok/4*4 {
							want, from = file[tok*ldo+r], "file layout's GEMM"
						}
						if g := got[tok*ldo+r]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%v/%v n=%d %d rows × %d tokens: token %d row %d: %g, %s %g", level, it.t, sh.n, sh.nrows, sh.ntok, tok, r, g, from, want)
						}
					}
				}
			}
		}
	}
}
