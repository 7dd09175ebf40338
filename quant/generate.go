package quant

// The assembly kernels of this package that a program writes, one
// generator per file family (each gen_*.go says what it writes and why);
// `go generate ./quant` runs them all, whatever the machine's
// architecture, and TestGeneratedUpToDate fails when a committed file
// differs from what its generator writes.
//
//go:generate go run gen_gemm.go
//go:generate go run gen_interleave.go
//go:generate go run gen_legacy.go
//go:generate go run gen_arm64.go
