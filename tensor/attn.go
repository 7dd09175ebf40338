package tensor

import "math"

// The kernels of attention over a KV cache, as llama.cpp's flash-attention
// kernel (ggml_compute_forward_flash_attn_ext_f16) computes them, so that
// package llama's attention agrees with llama.cpp's to float noise:
//
//   - over an f16 cache (the small-batch path): DotF16 and DotsF16 score a
//     query (rounded to f16) against f16 key rows, MadF16 and MadSeqF16 add
//     f16 value rows to an accumulator kept in f16 precision;
//   - in f32 (the tiled path of long prompts, and the f32 cache): DotF32,
//     DotsF32x4, AxpyF32 and WeightedSumF32;
//   - over a Q8_0 cache: see kvq8.go.
//
// Each has a pure Go twin, the reference, and on amd64 with AVX2, FMA and
// F16C an assembly version that gives the same bits (attn_amd64.go quotes
// the loop each assembly function computes). The exported functions take
// the assembly where the shape allows it (whole 8- or 64-element groups)
// and the Go twin otherwise; the online softmax that drives them stays
// with the caller.

// Path names the kernel set of this package's own kernels (Expf, SwiGLU,
// ExpShift and the attention and KV-cache kernels): "avx2" (amd64 with AVX2,
// FMA and F16C) or "generic" (the pure Go twins, which the purego build tag,
// GODEBUG=cpu.avx2=off and other architectures get). Both give the same
// results. The block dot products of Matrix run package quant's kernels,
// whose choice quant.Path names.
func Path() string {
	if haveAttnKernels && haveExpKernels {
		return "avx2"
	}
	return "generic"
}

// DotF16 is ggml_vec_dot_f16 as llama.cpp's AVX-512 build computes it, for
// key row k (float16 bits) and query q (float32 values already rounded to
// float16, see RoundF16), over len(q) elements: 64 float32 lanes each
// accumulate every 64th product (exact, since an f16·f16 product fits in
// f32), the four 16-lane accumulators are added pairwise, the 16 lanes
// reduced as _mm512_reduce_add_ps does, and the elements past the last
// multiple of 64 added in float64. k must hold at least len(q) values.
func DotF16(k []uint16, q []float32) float32 { return dotF16(k, q, haveAttnKernels) }

func dotF16(k []uint16, q []float32, asm bool) float32 {
	if n := len(q); asm && n > 0 && n%64 == 0 && len(k) >= n {
		return dotF16x64(&k[0], &q[0], n)
	}
	return dotF16Go(k, q)
}

// dotF16Go is the Go twin of DotF16.
func dotF16Go(k []uint16, q []float32) float32 {
	n := len(q)
	k = k[:n]
	np := n &^ 63
	if np == 0 {
		var s float64
		for i := range n {
			s += float64(FromF16(k[i]) * q[i])
		}
		return float32(s)
	}
	var lanes [64]float32
	for i := 0; i < np; i += 64 {
		kk, qq := k[i:i+64], q[i:i+64]
		for l := range 64 {
			lanes[l] += FromF16(kk[l]) * qq[l]
		}
	}
	var r [16]float32
	for i := range 16 {
		r[i] = (lanes[i] + lanes[32+i]) + (lanes[16+i] + lanes[48+i])
	}
	var t3 [8]float32
	for i := range 8 {
		t3[i] = r[i+8] + r[i]
	}
	var t6 [4]float32
	for i := range 4 {
		t6[i] = t3[i+4] + t3[i]
	}
	sum := float64((t6[0] + t6[2]) + (t6[1] + t6[3]))
	for i := np; i < n; i++ {
		sum += float64(FromF16(k[i]) * q[i])
	}
	return float32(sum)
}

// DotsF16 scores len(out) key rows, stride float16 elements apart in k
// (the rows of one head in a KV cache), against query q:
//
//	for p := range out {
//		out[p] = DotF16(k[p*stride:p*stride+len(q)], q) * scale
//	}
//
// In assembly (len(q) a multiple of 64) it prefetches the rows ahead.
func DotsF16(out []float32, k []uint16, stride int, q []float32, scale float32) {
	dotsF16(out, k, stride, q, scale, haveAttnKernels)
}

func dotsF16(out []float32, k []uint16, stride int, q []float32, scale float32, asm bool) {
	np, n := len(out), len(q)
	if np == 0 {
		return
	}
	if asm && n > 0 && n%64 == 0 {
		_ = k[(np-1)*stride+n-1]
		dotsF16x64(&k[0], stride, np, &q[0], n, scale, &out[0])
		return
	}
	dotsF16Go(out, k, stride, q, scale)
}

// dotsF16Go is the Go twin of DotsF16.
func dotsF16Go(out []float32, k []uint16, stride int, q []float32, scale float32) {
	for p := range out {
		out[p] = dotF16Go(k[p*stride:p*stride+len(q)], q) * scale
	}
}

// MadF16 is ggml_vec_mad_f16 for an accumulator held as float16 values in
// float32: acc[i] = RoundF16(fma(FromF16(v[i]), s, acc[i])) for i <
// len(acc). v must hold at least len(acc) values.
func MadF16(acc []float32, v []uint16, s float32) { madF16(acc, v, s, haveAttnKernels) }

func madF16(acc []float32, v []uint16, s float32, asm bool) {
	if n := len(acc); asm && n > 0 && n%8 == 0 && len(v) >= n {
		madF16x8(&acc[0], &v[0], s, n)
		return
	}
	madF16Go(acc, v, s)
}

// madF16Go is the Go twin of MadF16, with RoundF16's fast path written out
// so that the loop makes no calls.
func madF16Go(acc []float32, v []uint16, s float32) {
	v = v[:len(acc)]
	for i, a := range acc {
		y := float32(math.FMA(float64(f16Table[v[i]]), float64(s), float64(a)))
		b := math.Float32bits(y)
		if e := (b >> 23) & 0xff; e-(127-14) <= 29 {
			b += 0xfff + (b>>13)&1
			b &^= 0x1fff
			if (b>>23)&0xff <= 127+15 {
				acc[i] = math.Float32frombits(b)
				continue
			}
		}
		acc[i] = roundF16Slow(y)
	}
}

// MadSeqF16 is the accumulator pass of an online softmax over len(vs)
// positions of an f16 cache: value rows stride float16 elements apart in v,
// weights vs, and rescale factors ms (1 except where the running maximum
// rose):
//
//	for p := range vs {
//		if ms[p] != 1 {
//			for i, a := range acc {
//				acc[i] = RoundF16(a * ms[p])
//			}
//		}
//		MadF16(acc, v[p*stride:], vs[p])
//	}
//
// In assembly (len(acc) a multiple of 64) the accumulator stays in
// registers across the positions; ms must be at least as long as vs.
func MadSeqF16(acc []float32, v []uint16, stride int, vs, ms []float32) {
	madSeqF16(acc, v, stride, vs, ms, haveAttnKernels)
}

func madSeqF16(acc []float32, v []uint16, stride int, vs, ms []float32, asm bool) {
	np, hd := len(vs), len(acc)
	if np == 0 {
		return
	}
	ms = ms[:np]
	if asm && hd > 0 && hd%64 == 0 {
		_ = v[(np-1)*stride+hd-1]
		madSeqF16x64(&acc[0], &v[0], stride, &vs[0], &ms[0], np, hd)
		return
	}
	madSeqF16Go(acc, v, stride, vs, ms)
}

// madSeqF16Go is the Go twin of MadSeqF16.
func madSeqF16Go(acc []float32, v []uint16, stride int, vs, ms []float32) {
	for p, w := range vs {
		if m := ms[p]; m != 1 {
			for i, a := range acc {
				acc[i] = RoundF16(a * m)
			}
		}
		madF16Go(acc, v[p*stride:p*stride+len(acc)], w)
	}
}

// DotF32 is the float32 dot product of llama.cpp's f32 attention tiles over
// len(a) elements: eight FMA lanes (one AVX register) reduced pairwise, then
// the elements past the last multiple of 8 fused into the sum one by one. b
// must hold at least len(a) values.
func DotF32(a, b []float32) float32 { return dotF32(a, b, haveAttnKernels) }

func dotF32(a, b []float32, asm bool) float32 {
	n8 := len(a) &^ 7
	if asm && n8 > 0 && len(b) >= len(a) {
		s := dotF32x8(&a[0], &b[0], n8)
		for i := n8; i < len(a); i++ {
			s = fmaF64(a[i], b[i], s)
		}
		return s
	}
	return dotF32Go(a, b)
}

// dotF32Go is the Go twin of DotF32.
func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	n8 := len(a) &^ 7
	var l [8]float32
	for i := 0; i < n8; i += 8 {
		for j := range 8 {
			l[j] = fmaF64(a[i+j], b[i+j], l[j])
		}
	}
	t0, t1, t2, t3 := l[0]+l[4], l[1]+l[5], l[2]+l[6], l[3]+l[7]
	s := (t0 + t2) + (t1 + t3)
	for i := n8; i < len(a); i++ {
		s = fmaF64(a[i], b[i], s)
	}
	return s
}

// DotsF32x4 scores key rows against four query rows at once: q holds the
// four queries back to back (hd = len(q)/4 floats each) and k whole key
// rows of hd floats back to back (np = len(k)/hd of them), and
//
//	for i := range 4 {
//		for p := range np {
//			out[i*ostride+p] = DotF32(k[p*hd:(p+1)*hd], q[i*hd:(i+1)*hd])
//		}
//	}
//
// In assembly (hd a multiple of 8) each key row is loaded once for the four
// queries. len(q) must be a positive multiple of 4.
func DotsF32x4(out []float32, ostride int, k, q []float32) {
	dotsF32x4(out, ostride, k, q, haveAttnKernels)
}

func dotsF32x4(out []float32, ostride int, k, q []float32, asm bool) {
	hd := len(q) / 4
	if hd == 0 || len(q) != 4*hd {
		panic("tensor: DotsF32x4 needs four query rows of equal length")
	}
	np := len(k) / hd
	if np == 0 {
		return
	}
	if asm && hd%8 == 0 {
		_, _ = out[3*ostride+np-1], k[np*hd-1]
		if n4 := np &^ 3; attnAVX512 && n4 > 0 {
			dotsF32x4x8AVX512(&k[0], n4, &q[0], hd, &out[0], ostride*4)
			if n4 == np {
				return
			}
			k, out, np = k[n4*hd:], out[n4:], np-n4
		}
		dotsF32x4x8(&k[0], np, &q[0], hd, &out[0], ostride*4)
		return
	}
	dotsF32x4Go(out, ostride, k, q)
}

// dotsF32x4Go is the Go twin of DotsF32x4.
func dotsF32x4Go(out []float32, ostride int, k, q []float32) {
	hd := len(q) / 4
	for i := range 4 {
		for p := range len(k) / hd {
			out[i*ostride+p] = dotF32Go(k[p*hd:(p+1)*hd], q[i*hd:(i+1)*hd])
		}
	}
}

// AxpyF32 sets y[i] = fma(x[i], a, y[i]) for i < len(y) (ggml_vec_mad_f32).
// x must hold at least len(y) values.
func AxpyF32(y, x []float32, a float32) { axpyF32(y, x, a, haveAttnKernels) }

func axpyF32(y, x []float32, a float32, asm bool) {
	n8 := len(y) &^ 7
	if asm && n8 > 0 && len(x) >= len(y) {
		axpyF32x8(&y[0], &x[0], a, n8)
		for i := n8; i < len(y); i++ {
			y[i] = fmaF64(x[i], a, y[i])
		}
		return
	}
	axpyF32Go(y, x, a)
}

// axpyF32Go is the Go twin of AxpyF32.
func axpyF32Go(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] = fmaF64(x[i], a, y[i])
	}
}

// WeightedSumF32 adds the rows of v (len(out) floats each, back to back),
// weighted by w, to out in order:
//
//	for p := range w {
//		AxpyF32(out, v[p*hd:(p+1)*hd], w[p]) // hd = len(out)
//	}
//
// In assembly (len(out) a multiple of 64) 64 outputs at a time (128 with
// AVX-512) stay in registers across all the rows.
func WeightedSumF32(out, v, w []float32) { weightedSumF32(out, v, w, haveAttnKernels) }

func weightedSumF32(out, v, w []float32, asm bool) {
	hd := len(out)
	if hd == 0 || len(w) == 0 {
		return
	}
	if asm && hd%64 == 0 {
		_ = v[len(w)*hd-1]
		if attnAVX512 && hd%128 == 0 {
			pvF32x128AVX512(&out[0], &v[0], &w[0], len(w), hd)
			return
		}
		pvF32x64(&out[0], &v[0], &w[0], len(w), hd)
		return
	}
	weightedSumF32Go(out, v, w)
}

// weightedSumF32Go is the Go twin of WeightedSumF32.
func weightedSumF32Go(out, v, w []float32) {
	hd := len(out)
	for p, pv := range w {
		axpyF32Go(out, v[p*hd:(p+1)*hd], pv)
	}
}

// fmaF64 is the fused multiply-add of the attention kernels' Go twins,
// a·b + c rounded to float64 by math.FMA and then to float32. That is the
// float32 FMA of the assembly except where the float64 result lands exactly
// on a float32 rounding midpoint, which needs a·b and c of very different
// sizes and a rare bit pattern (fma32 in ops.go rounds once, exactly); the
// twins keep it because it is what package llama's attention has always
// computed without the assembly.
func fmaF64(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}
