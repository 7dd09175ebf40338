package gguf

import "fmt"

// Type is a ggml tensor element type, as stored in a GGUF tensor info.
// The numeric values are ggml's and are part of the file format.
//
// Every type stores its elements in blocks: BlockSize elements packed into
// BlockBytes bytes. Plain types (F32, F16, BF16, the integer types) have
// blocks of one element; quantized types pack 32 or 256 elements per block.
// A tensor row's length must be a multiple of its type's BlockSize.
type Type uint32

// The ggml tensor types. Gaps in the numbering are types ggml has removed.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
)

type typeTraits struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

var types = map[Type]typeTraits{
	TypeF32:     {"f32", 1, 4},
	TypeF16:     {"f16", 1, 2},
	TypeQ4_0:    {"q4_0", 32, 18},
	TypeQ4_1:    {"q4_1", 32, 20},
	TypeQ5_0:    {"q5_0", 32, 22},
	TypeQ5_1:    {"q5_1", 32, 24},
	TypeQ8_0:    {"q8_0", 32, 34},
	TypeQ8_1:    {"q8_1", 32, 36},
	TypeQ2_K:    {"q2_K", 256, 84},
	TypeQ3_K:    {"q3_K", 256, 110},
	TypeQ4_K:    {"q4_K", 256, 144},
	TypeQ5_K:    {"q5_K", 256, 176},
	TypeQ6_K:    {"q6_K", 256, 210},
	TypeQ8_K:    {"q8_K", 256, 292},
	TypeIQ2_XXS: {"iq2_xxs", 256, 66},
	TypeIQ2_XS:  {"iq2_xs", 256, 74},
	TypeIQ3_XXS: {"iq3_xxs", 256, 98},
	TypeIQ1_S:   {"iq1_s", 256, 50},
	TypeIQ4_NL:  {"iq4_nl", 32, 18},
	TypeIQ3_S:   {"iq3_s", 256, 110},
	TypeIQ2_S:   {"iq2_s", 256, 82},
	TypeIQ4_XS:  {"iq4_xs", 256, 136},
	TypeI8:      {"i8", 1, 1},
	TypeI16:     {"i16", 1, 2},
	TypeI32:     {"i32", 1, 4},
	TypeI64:     {"i64", 1, 8},
	TypeF64:     {"f64", 1, 8},
	TypeIQ1_M:   {"iq1_m", 256, 56},
	TypeBF16:    {"bf16", 1, 2},
	TypeTQ1_0:   {"tq1_0", 256, 54},
	TypeTQ2_0:   {"tq2_0", 256, 66},
	TypeMXFP4:   {"mxfp4", 32, 17},
}

// Known reports whether t is a type this package knows the block layout of.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String returns ggml's lower-case name for the type ("q4_K", "f16", ...),
// or "type(N)" for an unknown one.
func (t Type) String() string {
	if tr, ok := types[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block (1 for plain types).
// It is 0 for an unknown type.
func (t Type) BlockSize() int { return types[t].blockSize }

// BlockBytes is the number of bytes one block occupies (0 for an unknown type).
func (t Type) BlockBytes() int { return types[t].blockBytes }

// RowBytes returns the bytes needed for n elements of type t. It fails if the
// type is unknown or n is not a multiple of the block size.
func (t Type) RowBytes(n int) (int, error) {
	tr, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%tr.blockSize != 0 {
		return 0, fmt.Errorf("gguf: %d elements of %s: not a multiple of its block size %d", n, tr.name, tr.blockSize)
	}
	return n / tr.blockSize * tr.blockBytes, nil
}

// ParseType returns the type with ggml's name s ("q4_K", "Q4_K" and "f16" all work).
func ParseType(s string) (Type, error) {
	for t, tr := range types {
		if equalFold(tr.name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown tensor type name %q", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
