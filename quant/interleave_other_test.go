//go:build !gc || purego || !amd64

package quant

import "github.com/smolgo/smolgo/gguf"

// ilvBenchKernels: no assembly kernels over interleaved weights here.
func ilvBenchKernels(t gguf.Type) []ilvBench { return nil }
