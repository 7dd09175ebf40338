package quant

// addBlock returns sum + d·s rounded once, as the arm64 kernels' FMLA adds
// a block of dotQ8_0 and dotQ4_0 (d = d_w·d_a, exact; s the block's integer
// sum): the Go compiler fuses this multiply and add into one FMADDS on
// arm64 (the language allows it; an explicit conversion of d*s would
// forbid it). Other architectures round twice (addblock_other.go).
func addBlock(sum, d, s float32) float32 { return sum + d*s }
