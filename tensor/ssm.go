package tensor

// The arithmetic of a Mamba-2 layer's selective scan (llama.cpp's
// ggml_ssm_scan) and the SiLU after its convolution, with the CPU
// backend's rounding.

// SiLU sets dst[i] = x[i] / (1 + e^-x[i]), with Expf as ggml's vectorized
// silu computes it (the bits of SwiGLU with up = 1). dst may alias x.
func SiLU(dst, x []float32) {
	x = x[:len(dst)]
	for i := 0; i < len(dst); i += len(ones) {
		j := min(i+len(ones), len(dst))
		SwiGLU(dst[i:j], x[i:j], ones[:j-i])
	}
}

// ones is SiLU's "up" operand: g·σ(g)·1 is g·σ(g) exactly. Read-only.
var ones = func() (o [64]float32) {
	for i := range o {
		o[i] = 1
	}
	return
}()

// SSMScan advances one Mamba-2 head by one token and writes its outputs:
// for each of the head's len(x) channels i, with state row
// s[i·N : (i+1)·N] (N = len(B) = len(C), the state size),
//
//	xdt    = x[i]·dt
//	s[i,k] = s[i,k]·dA + B[k]·xdt   (the product B[k]·xdt rounded, then one fused multiply-add)
//	y[i]   = Σ_k s[i,k]·C[k]
//
// as ggml's ssm_scan computes it in llama.cpp's AVX2 build (the prebuilt
// "haswell" CPU backend that ../shared/golden-next's logits come from,
// read from its machine code): the sum runs in 32 lanes, lane k mod 32
// taking its products by fused multiply-adds, over the whole multiples of
// 32; the lanes are reduced as ggml_vec_reduce does (lanes j, j+16 and
// j+8, j+24 first, then the two 8-lane halves, then pairs), and the last
// N mod 32 products are added one by one, fused, after that. dt is the
// time step after softplus, dA = exp(dt·A) the head's decay.
//
// len(s) must be len(x)·N and len(y) at least len(x).
func SSMScan(y, s, x, B, C []float32, dA, dt float32) {
	N := len(B)
	C = C[:N]
	s = s[:len(x)*N]
	y = y[:len(x)]
	if haveSSMKernels && N >= 32 && N%32 == 0 && len(x) > 0 {
		ssmScanAVX2(&y[0], &s[0], &x[0], &B[0], &C[0], len(x), N, dA, dt)
		return
	}
	ssmScanGo(y, s, x, B, C, dA, dt)
}

// ssmScanGo is SSMScan in Go: the reference the assembly is checked
// against.
func ssmScanGo(y, s, x, B, C []float32, dA, dt float32) {
	N := len(B)
	whole := N &^ 31
	for i, xi := range x {
		xdt := xi * dt
		row := s[i*N : (i+1)*N]
		var lanes [32]float32
		for k := 0; k < whole; k += 32 {
			for j := range 32 {
				st := fma32(row[k+j], dA, float32(B[k+j]*xdt))
				row[k+j] = st
				lanes[j] = fma32(st, C[k+j], lanes[j])
			}
		}
		var sum float32
		if whole > 0 {
			sum = reduce32(&lanes)
		}
		for k := whole; k < N; k++ {
			st := fma32(row[k], dA, float32(B[k]*xdt))
			row[k] = st
			sum = fma32(st, C[k], sum)
		}
		y[i] = sum
	}
}

// reduce32 sums ggml's four 8-lane accumulators (lanes 0-7, 8-15, 16-23,
// 24-31) in the order of GGML_F32x8_REDUCE: a0+a2 and a1+a3, their sum,
// the high four lanes onto the low four, then two horizontal pair adds.
func reduce32(l *[32]float32) float32 {
	var v [8]float32
	for j := range 8 {
		v[j] = (l[j] + l[16+j]) + (l[8+j] + l[24+j])
	}
	t0, t1, t2, t3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (t0 + t1) + (t2 + t3)
}

// SSMConv is one token of a causal depthwise convolution over C = len(x)
// channels with K = len(w)/C taps each (w[ch·K : (ch+1)·K], oldest input
// first), as ggml's ssm_conv computes it. window holds each channel's K-1
// previous inputs, channel after channel (window[ch·(K-1) + k], oldest
// first: ggml's layout of the conv state), and x the new ones;
//
//	dst[ch] = Σ_k w[ch·K+k] · in_k[ch]   (in_0 … in_{K-2} the window, in_{K-1} = x)
//
// then each channel's window moves on by one (x[ch] becomes its newest
// input). The sum runs in float32 from 0 in tap order, as llama.cpp's AVX2
// build (the prebuilt "haswell" backend) compiles ggml's loop: the
// products of the first K &^ 3 taps rounded and added (its 8- and 4-wide
// blocks), those of the last K mod 4 taps fused into the sum (its scalar
// tail: with d_conv 4, as Mamba-2 has, nothing is fused). Channels are
// independent, so a range of them is the same sub-slices of the four
// arguments. dst must not alias window or x.
func SSMConv(dst, window, x, w []float32) {
	C := len(x)
	K := len(w) / C
	dst = dst[:C]
	window = window[:(K-1)*C]
	if K == 4 {
		for ch, v := range x {
			win, wc := window[3*ch:3*ch+3:3*ch+3], w[4*ch:4*ch+4:4*ch+4]
			var sum float32
			sum += float32(win[0] * wc[0])
			sum += float32(win[1] * wc[1])
			sum += float32(win[2] * wc[2])
			sum += float32(v * wc[3])
			dst[ch] = sum
			win[0], win[1], win[2] = win[1], win[2], v
		}
		return
	}
	rounded := K &^ 3
	for ch, v := range x {
		win, wc := window[ch*(K-1):(ch+1)*(K-1)], w[ch*K:(ch+1)*K]
		var sum float32
		for k := range K {
			in := v
			if k < K-1 {
				in = win[k]
			}
			if k < rounded {
				sum += float32(in * wc[k])
			} else {
				sum = fma32(in, wc[k], sum)
			}
		}
		dst[ch] = sum
		copy(win, win[1:])
		win[K-2] = v
	}
}
