package quant

import "math"

// The K-quant reference quantizers. Each follows ggml's quantize_row_*_ref
// step for step (ggml's reference code is built without fused multiply-adds:
// every product below that feeds a sum is wrapped in float32(), which Go
// guarantees rounds it on its own, so GOAMD64=v3 or arm64 builds don't fuse
// it either): first every sub-block gets a scale (and min) from a small
// search that minimizes a weighted squared (or absolute) error, then the
// sub-block scales are themselves quantized to 4, 6 or 8 bits against a
// float16 super-scale, and finally every weight is re-quantized with the
// scales as stored. All arithmetic is float32 in ggml's order of operations;
// changing the order changes the chosen quants, so keep it.

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is treated as all zeros.
const groupMaxEps = 1e-15

func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) } // correctly rounded, like sqrtf

// makeQXQuants finds a symmetric scale for n = len(x) values with quants in
// -nmax..nmax-1 (stored in L offset by nmax), weighting each element by x²
// (ggml's make_qx_quants with rmse_type 1 and no importance weights). It
// starts from scale = max/-nmax and tries 18 nearby scales, keeping the one
// with the best weighted least-squares fit.
func makeQXQuants(nmax int, x []float32, L []int8) float32 {
	maxv, amax := largestMagnitude(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := v * v
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
			w := v * v
			fl := float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			for i, v := range x {
				L[i] = int8(nmax + clampInt(nearestInt(iscale*v), -nmax, nmax-1))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: a symmetric scale for
// quants in -nmax..nmax-1 (returned in L offset by nmax), refined by up to
// five passes that move single quants when that improves the x²-weighted fit.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	maxv, amax := largestMagnitude(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -float32(nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l)
		w := v * v
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := 0
		for i, v := range x {
			w := v * v
			fl := float32(L[i])
			slx := sumlx - float32(float32(w*v)*fl)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*fl)*fl)
				nl := clampInt(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if nl != int(L[i]) {
					fn := float32(nl)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(slx*slx)*suml2 > float32(sumlx*sumlx)*sl2 {
						L[i] = int8(nl)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is ggml's make_qkx2_quants: an asymmetric fit x ≈ scale*q -
// min with quants 0..nmax (into L), weights w, min ≤ 0. It starts from the
// range (max-min)/nmax and tries nstep+1 scales (rmin + rdelta*is + nmax) /
// (max-min), solving the weighted least-squares scale and min for each set of
// quants; the error is squared or, with mad, absolute. It returns the scale
// and -min (a non-negative number).
func makeQKX2Quants(nmax int, x, w []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, negMin float32) {
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := sumW * x[0]
	for i := 1; i < len(x); i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	fnmax := float32(nmax)
	iscale := fnmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+lo) - v
		if mad {
			diff = abs32(diff)
		} else {
			diff *= diff
		}
		bestErr += float32(w[i] * diff)
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fnmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
			Laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var cur float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - v
				if mad {
					diff = abs32(diff)
				} else {
					diff *= diff
				}
				cur += float32(w[i] * diff)
			}
			if cur < bestErr {
				copy(L, Laux[:len(L)])
				bestErr = cur
				scale, lo = thisScale, thisMin
			}
		}
	}
	return scale, -lo
}

// fitSubBlocks16 fits a symmetric scale to each of the 16 sub-blocks of 16
// (quants into L) and returns the scales and the one of largest magnitude
// (the first on ties), signed and absolute.
func fitSubBlocks16(x []float32, L []int8, nmax int, fit func(nmax int, x []float32, L []int8) float32) (scales [16]float32, maxScale, maxAbsScale float32) {
	for j := range scales {
		scales[j] = fit(nmax, x[16*j:16*j+16], L[16*j:16*j+16])
		if a := abs32(scales[j]); a > maxAbsScale {
			maxAbsScale, maxScale = a, scales[j]
		}
	}
	return scales, maxScale, maxAbsScale
}

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// quantQ2K: per sub-block of 16 an asymmetric 2-bit fit (weights |x|,
// absolute error), then the 16 scales and 16 mins to 4 bits each against
// d = max_scale/15 and dmin = max_min/15.
func quantQ2K(x []float32, b []byte) {
	var (
		L              [QKK]uint8
		laux           [16]uint8
		w              [16]float32
		scales, mins   [16]float32
		maxScale, maxM float32
	)
	for j := 0; j < 16; j++ {
		xs := x[16*j : 16*j+16]
		for l, v := range xs {
			w[l] = abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(3, xs, w[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
		maxScale = max(maxScale, scales[j])
		maxM = max(maxM, mins[j])
	}
	sc := b[q2KScales : q2KScales+16]
	if maxScale > 0 {
		iscale := 15 / maxScale
		for j := range sc {
			sc[j] = uint8(nearestInt(iscale * scales[j]))
		}
		putF16(b[q2KD:], maxScale/15)
	} else {
		clear(sc)
		putF16(b[q2KD:], 0)
	}
	if maxM > 0 {
		iscale := 15 / maxM
		for j := range sc {
			sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
		}
		putF16(b[q2KDmin:], maxM/15)
	} else {
		putF16(b[q2KDmin:], 0)
	}
	d, dmin := f16(b[q2KD:]), f16(b[q2KDmin:])
	for j := 0; j < 16; j++ {
		dl := d * float32(sc[j]&0xF)
		if dl == 0 {
			continue
		}
		dm := float32(dmin * float32(sc[j]>>4))
		for i, v := range x[16*j : 16*j+16] {
			L[16*j+i] = uint8(clampInt(nearestInt((v+dm)/dl), 0, 3))
		}
	}
	packQ2Bits(L[:], b[q2KQS:q2KQS+64])
}

// packQ2Bits packs 256 two-bit values: in half h, byte 32h+l holds elements
// 128h+l, +32, +64, +96 in bits 0-1, 2-3, 4-5, 6-7.
func packQ2Bits(L []uint8, qs []byte) {
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			j := 128 * h
			qs[32*h+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

// quantQ3K: per sub-block of 16 a symmetric 3-bit fit (makeQ3Quants), the
// 16 scales to signed 6 bits against d = max_scale/-32, then re-quantize.
func quantQ3K(x []float32, b []byte) {
	var L [QKK]int8
	scales, maxScale, _ := fitSubBlocks16(x, L[:], 4, makeQ3Quants)
	sc := b[q3KScales : q3KScales+12]
	clear(sc)
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := 0; j < 16; j++ {
			l := int(int8(nearestInt(iscale * scales[j]))) // ggml stores it in an int8 first
			l = clampInt(l, -32, 31) + 32
			if j < 8 {
				sc[j] = uint8(l & 0xF)
			} else {
				sc[j-8] |= uint8(l&0xF) << 4
			}
			sc[8+j%4] |= uint8(l>>4) << (2 * (j / 4))
		}
		putF16(b[q3KD:], 1/iscale)
	} else {
		putF16(b[q3KD:], 0)
	}
	var s6 [16]int8
	q3KUnpackScales(sc, &s6)
	d := f16(b[q3KD:])
	for j := 0; j < 16; j++ {
		dl := d * float32(int(s6[j])-32)
		if dl == 0 {
			continue
		}
		for i, v := range x[16*j : 16*j+16] {
			L[16*j+i] = int8(clampInt(nearestInt(v/dl), -4, 3) + 4)
		}
	}
	hm := b[q3KHmask : q3KHmask+32]
	clear(hm)
	var low [QKK]uint8
	for j, l := range L {
		if l > 3 {
			hm[j%32] |= 1 << (j / 32)
			l -= 4
		}
		low[j] = uint8(l)
	}
	packQ2Bits(low[:], b[q3KQS:q3KQS+64])
}

// kScalesMins fills the sub-block scales and mins of a Q4_K/Q5_K block: per
// sub-block of 32 an asymmetric fit with weights sqrt(mean x²) + |x|, then
// the 8 scales and 8 mins to 6 bits against d = max_scale/63 and dmin =
// max_min/63. It returns the quants of the fit in L (for sub-blocks whose
// stored scale is zero) and leaves re-quantization to the caller.
func kScalesMins(x []float32, b []byte, nmax int, L []uint8, rmin float32, nstep int, offD, offDmin, offScales int) {
	var (
		laux           [32]uint8
		w              [32]float32
		scales, mins   [8]float32
		maxScale, maxM float32
	)
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		av := sqrt32(sumX2 / 32)
		for l, v := range xs {
			w[l] = av + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, w[:], L[32*j:32*j+32], laux[:], rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxM = max(maxM, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxM > 0 {
		invMin = 63 / maxM
	}
	sc := b[offScales : offScales+12]
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xF | (lm&0xF)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(b[offD:], maxScale/63)
	putF16(b[offDmin:], maxM/63)
}

// requantK re-quantizes each sub-block of 32 with its stored 6-bit scale and
// min: q = clamp(nearestInt((x + dmin*m)/(d*sc)), 0, nmax).
func requantK(x []float32, b []byte, nmax int, L []uint8, offD, offDmin, offScales int) {
	d, dmin := f16(b[offD:]), f16(b[offDmin:])
	for j := 0; j < 8; j++ {
		sc, m := scaleMinK4(j, b[offScales:offScales+12])
		dl := d * float32(sc)
		if dl == 0 {
			continue
		}
		dm := float32(dmin * float32(m))
		for i, v := range x[32*j : 32*j+32] {
			L[32*j+i] = uint8(clampInt(nearestInt((v+dm)/dl), 0, nmax))
		}
	}
}

func quantQ4K(x []float32, b []byte) {
	var L [QKK]uint8
	clear(b[q4KScales : q4KScales+12])
	kScalesMins(x, b, 15, L[:], -1, 20, q4KD, q4KDmin, q4KScales)
	requantK(x, b, 15, L[:], q4KD, q4KDmin, q4KScales)
	qs := b[q4KQS : q4KQS+128]
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			qs[32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
		}
	}
}

func quantQ5K(x []float32, b []byte) {
	var L [QKK]uint8
	clear(b[q5KScales : q5KScales+12])
	kScalesMins(x, b, 31, L[:], -0.5, 15, q5KD, q5KDmin, q5KScales)
	requantK(x, b, 31, L[:], q5KD, q5KDmin, q5KScales)
	qh := b[q5KQH : q5KQH+32]
	qs := b[q5KQS : q5KQS+128]
	clear(qh)
	for c := 0; c < 4; c++ {
		m1, m2 := uint8(1)<<(2*c), uint8(2)<<(2*c)
		for l := 0; l < 32; l++ {
			l1, l2 := L[64*c+l], L[64*c+32+l]
			if l1 > 15 {
				l1 -= 16
				qh[l] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[l] |= m2
			}
			qs[32*c+l] = l1 | l2<<4
		}
	}
}

// quantQ6K: per sub-block of 16 a symmetric 6-bit fit (makeQXQuants), the
// 16 scales to signed 8 bits against d = max_scale/-128, then re-quantize.
func quantQ6K(x []float32, b []byte) {
	var L [QKK]int8
	scales, maxScale, maxAbsScale := fitSubBlocks16(x, L[:], 32, makeQXQuants)
	if maxAbsScale < groupMaxEps {
		clear(b[:q6KBytes])
		return
	}
	iscale := -128 / maxScale
	putF16(b[q6KD:], 1/iscale)
	sc := b[q6KScales : q6KScales+16]
	for j := range sc {
		sc[j] = byte(int8(min(127, nearestInt(iscale*scales[j]))))
	}
	d := f16(b[q6KD:])
	for j := 0; j < 16; j++ {
		dl := d * float32(int8(sc[j]))
		if dl == 0 {
			continue
		}
		for i, v := range x[16*j : 16*j+16] {
			L[16*j+i] = int8(clampInt(nearestInt(v/dl), -32, 31) + 32)
		}
	}
	ql := b[q6KQL : q6KQL+128]
	qh := b[q6KQH : q6KQH+64]
	for h := 0; h < 2; h++ {
		j := 128 * h
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[64*h+l] = q1&0xF | (q3&0xF)<<4
			ql[64*h+l+32] = q2&0xF | (q4&0xF)<<4
			qh[32*h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}
