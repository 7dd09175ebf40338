package sample

import "math"

// The samplers need e^x of every logit of a 128K vocabulary per token (top-p
// and plain temperature sampling normalize over all of them), and math.Exp
// costs about 10 ns. expNeg is a short polynomial with float32-level accuracy
// (relative error below 1e-8).
//
// Weights below e^-minExp are taken as 0: the sum always includes the top
// token's weight 1, so even 128K dropped weights change it by less than
// 128256·e^-40 ≈ 5e-13 relative, and such a token would be drawn with
// probability below 5e-18 anyway.
const minExp = -40

const (
	log2e = 1.4426950408889634
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	magic = 6755399441055744.0 // 1.5 * 2^52: adding it rounds to an integer
)

// expNeg returns e^x for minExp <= x <= 0, and 0 below (including -Inf).
func expNeg(x float64) float64 {
	if !(x >= minExp) {
		return 0
	}
	t := x*log2e + magic
	n := math.Float64bits(t) - math.Float64bits(magic) // round(x / ln2), two's complement
	k := t - magic
	r := (x - k*ln2Hi) - k*ln2Lo // |r| <= ln2/2
	// Taylor series of e^r to degree 7 in Estrin's form.
	r2 := r * r
	r4 := r2 * r2
	p := (1 + r) + r2*(1.0/2+r*(1.0/6)) + r4*((1.0/24+r*(1.0/120))+r2*(1.0/720+r*(1.0/5040)))
	return p * math.Float64frombits((n+1023)<<52)
}

// sumExp returns the sum of expNeg((l-maxv)*invT) over work. The cut-off
// test is done here so that the common case, a logit far below the top one,
// costs a comparison and no call.
func sumExp(work []float32, maxv float32, invT float64) float64 {
	cut := float32(minExp/invT) + maxv
	s := 0.0
	for _, l := range work {
		if l >= cut {
			s += expNeg(float64(l-maxv) * invT)
		}
	}
	return s
}
