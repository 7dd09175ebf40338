package quant

// addBlock returns sum + d·s rounded twice, first the product and then the
// sum, as the amd64 kernels' VMULPS and VADDPS and the arm64 kernels' FMUL
// and FADD add a block of dotQ8_0, dotQ4_0 and dotMXFP4 (d the block's
// scale product, s its exact integer sum). The conversion of d*s keeps the
// Go compiler from fusing the multiply and add (the language allows a
// fused x*y + z, and arm64 and GOAMD64=v3 builds do fuse), so the twin and
// every architecture's kernels round alike: one set of results, which
// llama.cpp's x86 logits check.
func addBlock(sum, d, s float32) float32 { return sum + float32(d*s) }
