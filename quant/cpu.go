package quant

import (
	"fmt"
	"runtime"

	"github.com/smolgo/smolgo/gguf"
)

// isaLevel is a kernel family. Higher levels of one architecture need more
// CPU features; each level falls back to the one below for the weight types
// it has no kernel for.
type isaLevel int

const (
	levelGeneric isaLevel = iota // pure Go, the reference
	levelAVX2                    // amd64: AVX2 + FMA + F16C
	levelAVX512                  // amd64: AVX-512 F/BW/VL + VNNI (+ BF16 for bf16 weights)
	levelNEON                    // arm64: Advanced SIMD of ARMv8.0 (SMULL, SADALP)
	levelDotProd                 // arm64: NEON + SDOT (FEAT_DotProd)
	levelI8MM                    // arm64: dotprod + SMMLA (FEAT_I8MM)
)

func (l isaLevel) String() string {
	switch l {
	case levelAVX2:
		return "avx2"
	case levelAVX512:
		return "avx512"
	case levelNEON:
		return "neon"
	case levelDotProd:
		return "dotprod"
	case levelI8MM:
		return "i8mm"
	}
	return "generic"
}

// arch is the GOARCH whose assembly level l runs ("" for the pure Go level).
func (l isaLevel) arch() string {
	switch l {
	case levelAVX2, levelAVX512:
		return "amd64"
	case levelNEON, levelDotProd, levelI8MM:
		return "arm64"
	}
	return ""
}

// kernelSet is the dispatch table of one isaLevel. It is filled once by
// newKernelSet and only read afterwards; best, the set for this CPU, is built
// at package initialisation from the CPU features (read once), so there is no
// mutable global state. Tests build the other sets to run every variant.
type kernelSet struct {
	name    string
	level   isaLevel
	dots    map[gguf.Type]DotFunc
	matVecs map[gguf.Type]MatVecFunc
	matMuls map[gguf.Type]MatMulFunc
	// interleaved are the products over interleaved weights (see
	// Interleave), for the types whose kernels want them, and ilvRows the
	// rows of a group of that layout (8 for AVX2, 16 for AVX-512).
	interleaved map[gguf.Type]MatMulFunc
	ilvRows     int
}

var best = newKernelSet(detectLevel())

// newKernelSet returns the kernels of level: the pure Go ones, replaced by
// assembly ones where the level has them (addArchKernels).
func newKernelSet(level isaLevel) *kernelSet {
	k := &kernelSet{
		name:    level.String(),
		level:   level,
		dots:    make(map[gguf.Type]DotFunc),
		matVecs: make(map[gguf.Type]MatVecFunc),
		matMuls: make(map[gguf.Type]MatMulFunc),

		interleaved: make(map[gguf.Type]MatMulFunc),
	}
	for t, f := range genericDots {
		k.dots[t] = f
	}
	addArchKernels(k, level)
	for t, f := range k.dots {
		if _, ok := k.matVecs[t]; !ok {
			k.matVecs[t] = matVecByRows(t, f)
		}
		if _, ok := k.matMuls[t]; !ok {
			k.matMuls[t] = matMulByRows(t, k.matVecs[t])
		}
	}
	return k
}

// supportedLevels lists the levels this CPU (and build) can run, lowest first.
func supportedLevels() []isaLevel {
	var ls []isaLevel
	for l := levelGeneric; l <= detectLevel(); l++ {
		if a := l.arch(); a == "" || a == runtime.GOARCH {
			ls = append(ls, l)
		}
	}
	return ls
}

func (k *kernelSet) dot(w gguf.Type) (DotFunc, error) {
	if f, ok := k.dots[w]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("quant: no dot product for weights of type %v", w)
}

func (k *kernelSet) matVec(w gguf.Type) (MatVecFunc, error) {
	if f, ok := k.matVecs[w]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("quant: no matrix-vector kernel for weights of type %v", w)
}

func (k *kernelSet) matMul(w gguf.Type) (MatMulFunc, error) {
	if f, ok := k.matMuls[w]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("quant: no matrix-matrix kernel for weights of type %v", w)
}

// matVecByRows builds a MatVecFunc from a DotFunc, one row at a time.
func matVecByRows(t gguf.Type, dot DotFunc) MatVecFunc {
	return func(n int, w, a []byte, out []float32) {
		rb := n / t.BlockSize() * t.BlockBytes()
		for r := range out {
			out[r] = dot(n, w[r*rb:(r+1)*rb], a)
		}
	}
}

// matMulByRows builds a MatMulFunc from a MatVecFunc. It walks the weights in
// panels of rows small enough to stay in the L1/L2 cache while every token
// passes over them, so each weight byte comes from memory once per call.
func matMulByRows(t gguf.Type, mv MatVecFunc) MatMulFunc {
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		vt, _ := VecDotType(t)
		rb := n / t.BlockSize() * t.BlockBytes()
		ab := n / vt.BlockSize() * vt.BlockBytes()
		panel := 1
		if rb > 0 && rb < 64<<10 {
			panel = (64 << 10) / rb
		}
		for r0 := 0; r0 < nrows; r0 += panel {
			r1 := min(r0+panel, nrows)
			for tok := 0; tok < ntok; tok++ {
				mv(n, w[r0*rb:r1*rb], a[tok*ab:(tok+1)*ab], out[tok*ldo+r0:tok*ldo+r1])
			}
		}
	}
}
