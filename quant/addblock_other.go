//go:build !arm64

package quant

// addBlock returns sum + d·s rounded twice, first the product and then the
// sum, as the amd64 kernels' VMULPS and VADDPS add a block of dotQ8_0 and
// dotQ4_0 (d = d_w·d_a, exact; s the block's integer sum), whatever
// GOAMD64 lets the compiler fuse. arm64 rounds once (addblock_arm64.go).
func addBlock(sum, d, s float32) float32 { return sum + float32(d*s) }
