// Package cuda runs a llama-family model on an NVIDIA GPU: it implements
// backend.Backend with the weights uploaded once, one f16 KV cache per
// sequence in device memory, and only the new tokens' embeddings (looked up
// on the host) and RoPE angles in, and the logits asked for out, crossing
// the bus.
//
// Status: built and checked without a GPU; the kernels have never run on
// one. cuda/gputest.sh is the one command that verifies them (README).
//
// The seam is backend.Backend: NewBackend returns one, whose Close (it is an
// io.Closer) frees the device memory. A CUDA context is current per OS
// thread, so every driver call runs on a locked thread with the backend's
// context made current; Step, NewCache and the caches' methods may be
// called from any goroutine (Step from one at a time, as the engine does).
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
// Numerics follow package llama's CPU path (RMSNorm with a float64 sum,
// RoPE angles from rope.Config.Angles, float16 KV cache, f16/bf16 weights
// meeting activations rounded to their type) with two deliberate
// differences: activations for the quantized matrix products are rounded to
// int8 in blocks of 32 with one float32 scale (llama.cpp's CUDA q8_1, not
// the CPU's Q8_K for the K-quants), and attention runs in float32 (llama.cpp's
// CPU rounds decode queries and value sums to f16). Both are the kind of
// difference the golden tolerances of selfcheck.md were made from (llama.cpp
// disagreeing with itself across its own paths); whether the logits land
// inside them is what TestGPUGoldenLogits checks on a GPU.
//
// # Tests without a GPU
//
// Untagged: device names, the upload plan (types, shapes, device memory),
// the PTX matching its sources. Tagged: the ptxas budgets (ptxas needed:
// cuda/ci.sh fetches it), the no-driver error, and TestFakeDriver, which builds testdata/fakecuda.c (a stand-in
// libcuda with host memory and empty kernels) and runs the whole host side
// against it: device-number and memory refusals before any allocation,
// upload, Steps over batches, cache growth and snapshots, every launch's
// shape and pointer arguments. The GPU tests (gpu_test.go) skip without a
// GPU, and fail under SMOLGO_GPU=1.
package cuda

//go:generate sh kernels/build.sh
