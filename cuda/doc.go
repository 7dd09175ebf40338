// Package cuda runs a llama-family model on an NVIDIA GPU: it implements
// engine.Backend with the weights uploaded once, one KV cache per sequence in
// device memory, and only token ids in and logits out crossing the bus.
//
// # Building
//
// The GPU code is behind the build tag cuda. Without it, NewBackend exists
// and returns an error saying the binary was built without CUDA support, so
// callers need no build tags of their own. With it the package is still pure
// Go (CGO_ENABLED=0 works): the driver is not linked but opened at run time
// with github.com/ebitengine/purego, so one binary runs on machines without a
// GPU (on the CPU) and reports "cuda: no CUDA driver: libcuda.so.1: ..." only
// when asked for a GPU.
//
// # Kernels
//
// The kernels are CUDA C in kernels/*.cu, compiled ahead of time to PTX for
// sm_80 (go generate, with Debian's nvcc 11.8; the PTX is committed and
// embedded with go:embed). The driver compiles the PTX for the GPU at hand on
// first load, so Ampere, Hopper and later run the same file. budget.txt holds
// what ptxas reports per kernel (registers, shared memory, no spills) for
// sm_80 and sm_90; TestPTXBudget fails when a change to a kernel breaks it.
//
// Numerics follow package llama's CPU path where the CPU path is defined by
// llama.cpp, with two deliberate differences: activations for the quantized
// matrix products are rounded to int8 in blocks of 32 with one float32 scale
// (llama.cpp's CUDA q8_1, not the CPU's Q8_K for K-quants), and attention
// accumulates in float32. Both are inside the golden tolerances of the
// reference data's selfcheck.md by construction of those tolerances (they
// come from llama.cpp disagreeing with itself across such paths); the
// cuda-tagged tests compare against the CPU on a GPU.
package cuda

//go:generate sh kernels/build.sh
