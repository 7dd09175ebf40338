package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// goldenDequant is golden/dequant.json: per model, the SHA-256 of every
// tensor as ggml's to_float dequantizes it (little-endian f32 bytes).
type goldenDequant struct {
	Schema string `json:"schema"`
	Models map[string][]struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Ne     []uint64 `json:"ne"`
		SHA256 string   `json:"f32_sha256"`
	} `json:"models"`
}

func readGoldenDequant(t *testing.T) goldenDequant {
	t.Helper()
	b, err := os.ReadFile(sharedtest.Path(t, "golden/dequant.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenDequant
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("dequant.json: %v", err)
	}
	if g.Schema != "smolgo-golden-dequant/1" || len(g.Models) == 0 {
		t.Fatalf("dequant.json: unexpected schema %q with %d models", g.Schema, len(g.Models))
	}
	return g
}

// openGolden opens golden/models/<name>, unpacking the gzipped F32 source.
func openGolden(t *testing.T, name string) *gguf.File {
	t.Helper()
	var path string
	if _, err := os.Stat(sharedtest.Dir(t) + "/golden/models/" + name); err == nil {
		path = sharedtest.Path(t, "golden/models/"+name)
	} else {
		path = sharedtest.Gunzip(t, "golden/models/"+name+".gz")
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// goldenF32Source returns every tensor of the tinyq family's F32 source, by name.
func goldenF32Source(t *testing.T) map[string][]float32 {
	t.Helper()
	src := openGolden(t, "smollm3-tinyq-F32.gguf")
	ref := map[string][]float32{}
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		ref[ti.Name] = dequantTensor(t, src, ti)
	}
	return ref
}

// quantizedGoldenModels lists the tinyq models made by llama-quantize from
// the F32 source, sorted.
func quantizedGoldenModels(g goldenDequant) []string {
	var models []string
	for model := range g.Models {
		if strings.HasPrefix(model, "smollm3-tinyq-") && !strings.HasSuffix(model, "-F32.gguf") {
			models = append(models, model)
		}
	}
	slices.Sort(models)
	return models
}

func dequantTensor(t *testing.T, f *gguf.File, ti *gguf.TensorInfo) []float32 {
	t.Helper()
	out := make([]float32, ti.NumElements())
	if err := Dequantize(ti.Type, f.TensorData(ti), out); err != nil {
		t.Fatalf("%s: %v", ti.Name, err)
	}
	return out
}

func f32SHA256(x []float32) string {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestDequantizeGolden dequantizes every tensor of every golden model and
// compares the SHA-256 of the f32 bytes with ggml's: bit-exact agreement.
func TestDequantizeGolden(t *testing.T) {
	g := readGoldenDequant(t)
	perType := map[string]int{}
	for model, tensors := range g.Models {
		t.Run(model, func(t *testing.T) {
			f := openGolden(t, model)
			if len(f.Tensors) != len(tensors) {
				t.Errorf("%d tensors in the file, %d in dequant.json", len(f.Tensors), len(tensors))
			}
			for _, want := range tensors {
				ti, ok := f.Tensor(want.Name)
				if !ok {
					t.Errorf("tensor %s missing", want.Name)
					continue
				}
				if ti.Type.String() != want.Type {
					t.Errorf("%s: type %v, dequant.json says %s", want.Name, ti.Type, want.Type)
					continue
				}
				if got := f32SHA256(dequantTensor(t, f, ti)); got != want.SHA256 {
					t.Errorf("%s (%v): dequantized SHA-256 %s, ggml's %s", want.Name, ti.Type, got, want.SHA256)
					continue
				}
				perType[want.Type]++
			}
		})
	}
	t.Logf("bit-exact tensors per type: %v", perType)
	for _, typ := range []string{"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"} {
		if perType[typ] == 0 && !t.Failed() {
			t.Errorf("no golden tensor of type %s was checked", typ)
		}
	}
}

// maxRelRMS is, per type, the largest relative RMS error (RMS of the error
// over RMS of the weights) a tensor of the golden family may have after
// quantization from the F32 source. The bounds sit about 20% above the worst
// tensor measured (in parentheses) so that a real regression fails.
var maxRelRMS = map[gguf.Type]float64{
	gguf.TypeF32:  0,
	gguf.TypeBF16: 0,      // (0) the source weights are BF16-exact
	gguf.TypeF16:  0.0003, // (0) BF16-exact weights of moderate size are F16-exact too
	gguf.TypeQ8_0: 0.006,  // (0.0051)
	gguf.TypeQ6_K: 0.02,   // (0.0173)
	gguf.TypeQ5_1: 0.045,  // (0.0370)
	gguf.TypeQ5_K: 0.042,  // (0.0351)
	gguf.TypeQ5_0: 0.05,   // (0.0408)
	gguf.TypeQ4_1: 0.09,   // (0.0762)
	gguf.TypeQ4_K: 0.083,  // (0.0693)
	gguf.TypeQ4_0: 0.10,   // (0.0824)
	gguf.TypeQ3_K: 0.18,   // (0.1470)
	gguf.TypeQ2_K: 0.35,   // (0.2917)
}

// TestGoldenQuantizationError compares every tensor of each quantized golden
// model with the same tensor of the F32 source and checks the relative RMS
// error against the per-type bound in maxRelRMS.
func TestGoldenQuantizationError(t *testing.T) {
	ref := goldenF32Source(t)
	worst := map[gguf.Type]float64{}
	for _, model := range quantizedGoldenModels(readGoldenDequant(t)) {
		f := openGolden(t, model)
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			bound, ok := maxRelRMS[ti.Type]
			if !ok {
				t.Errorf("%s %s: no error bound for type %v", model, ti.Name, ti.Type)
				continue
			}
			e := relRMS(dequantTensor(t, f, ti), ref[ti.Name])
			worst[ti.Type] = max(worst[ti.Type], e)
			if e > bound || math.IsNaN(e) {
				t.Errorf("%s %s (%v): relative RMS error %.5f > bound %.5f", model, ti.Name, ti.Type, e, bound)
			}
		}
	}
	for typ, e := range worst {
		t.Logf("%-5v worst relative RMS error %.5f (bound %.5f)", typ, e, maxRelRMS[typ])
	}
}

// relRMS is sqrt(sum((a-b)^2) / sum(b^2)), in float64.
func relRMS(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}
