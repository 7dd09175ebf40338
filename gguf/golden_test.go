package gguf_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// manifestModel is the part of golden/manifest.json these tests check.
type manifestModel struct {
	Model       string         `json:"model"`
	StoredAs    string         `json:"stored_as"`
	Bytes       int64          `json:"gguf_bytes"`
	Arch        string         `json:"arch"`
	Hparams     map[string]any `json:"hparams"`
	FileType    int            `json:"file_type"`
	NTensors    int            `json:"n_tensors"`
	TensorTypes map[string]int `json:"tensor_types"`
	NVocab      int            `json:"n_vocab"`
	Tied        bool           `json:"tied_embeddings"`
}

func loadManifest(t *testing.T) []manifestModel {
	t.Helper()
	b, err := os.ReadFile(sharedtest.Path(t, "golden/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Models []manifestModel `json:"models"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Models) == 0 {
		t.Fatal("manifest lists no models")
	}
	return m.Models
}

// modelPath returns a golden model's path, unpacking it if it is stored gzipped.
func modelPath(t *testing.T, m manifestModel) string {
	t.Helper()
	rel := "golden/" + m.StoredAs
	if strings.HasSuffix(rel, ".gz") {
		return sharedtest.Gunzip(t, rel)
	}
	return sharedtest.Path(t, rel)
}

func TestGoldenModelsMatchManifest(t *testing.T) {
	for _, m := range loadManifest(t) {
		t.Run(m.Model, func(t *testing.T) {
			path := modelPath(t, m)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			checkAgainstManifest(t, f, m)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != m.Bytes {
				t.Errorf("size %d, manifest %d", st.Size(), m.Bytes)
			}
		})
	}
}

func checkAgainstManifest(t *testing.T, f *gguf.File, m manifestModel) {
	t.Helper()
	arch, err := f.Architecture()
	if err != nil || arch != m.Arch {
		t.Fatalf("architecture %q, %v; manifest %q", arch, err, m.Arch)
	}
	if len(f.Tensors) != m.NTensors {
		t.Errorf("%d tensors, manifest %d", len(f.Tensors), m.NTensors)
	}
	counts := map[string]int{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		counts[ti.Type.String()]++
		if got := uint64(len(f.TensorData(ti))); got != ti.Size() {
			t.Errorf("%s: TensorData has %d bytes, Size %d", ti.Name, got, ti.Size())
		}
	}
	if len(counts) != len(m.TensorTypes) {
		t.Errorf("tensor types %v, manifest %v", counts, m.TensorTypes)
	}
	for typ, n := range m.TensorTypes {
		if counts[typ] != n {
			t.Errorf("%d tensors of type %s, manifest %d", counts[typ], typ, n)
		}
	}
	for k, want := range m.Hparams {
		key := arch + "." + k
		switch want := want.(type) {
		case string:
			if got, err := f.String(key); err != nil || got != want {
				t.Errorf("%s = %q, %v; manifest %q", key, got, err, want)
			}
		case float64:
			if v, _ := f.Get(key); isFloat(v) {
				got, err := f.Float32(key)
				if err != nil || got != float32(want) {
					t.Errorf("%s = %v, %v; manifest %v", key, got, err, want)
				}
				continue
			}
			got, err := f.Int64(key)
			if err != nil || got != int64(want) {
				t.Errorf("%s = %v, %v; manifest %v", key, got, err, want)
			}
		}
	}
	if ft, err := f.Uint32("general.file_type"); err == nil && int(ft) != m.FileType {
		t.Errorf("general.file_type %d, manifest %d", ft, m.FileType)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != m.NVocab {
		t.Errorf("tokenizer.ggml.tokens: %d tokens, %v; manifest %d", len(toks), err, m.NVocab)
	}
	_, hasOutput := f.Tensor("output.weight")
	if hasOutput == m.Tied {
		t.Errorf("output.weight present = %v, manifest tied = %v", hasOutput, m.Tied)
	}
}

func TestOpenQ4KM(t *testing.T) {
	f, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if emb.Type != gguf.TypeQ6_K || len(emb.Dims) != 2 || emb.Dims[0] != 256 || emb.Dims[1] != 337 {
		t.Errorf("token_embd.weight: %s %v", emb.Type, emb.Dims)
	}
	if got, want := emb.Size(), uint64(337*210); got != want {
		t.Errorf("token_embd.weight size %d, want %d", got, want)
	}
	n, err := f.Uint32("smollm3.block_count")
	if err != nil || n != 8 {
		t.Errorf("block_count %d, %v", n, err)
	}
	if _, err := f.Uint32("smollm3.no_such_key"); err == nil || !strings.Contains(err.Error(), "smollm3.no_such_key") {
		t.Errorf("missing key error %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.TensorData(emb) != nil {
		t.Error("TensorData after Close is not nil")
	}
}

func TestOpenRealVocab(t *testing.T) {
	for _, rel := range []string{"golden/realvocab/smollm3-realvocab-F16.gguf", "tokenizer/smollm3-vocab.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			f, err := gguf.Open(sharedtest.Path(t, rel))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != 128256 {
				t.Fatalf("tokens: %d, %v", len(toks), err)
			}
			merges, err := f.Strings("tokenizer.ggml.merges")
			if err != nil || len(merges) == 0 {
				t.Fatalf("merges: %d, %v", len(merges), err)
			}
			if _, err := f.Int32s("tokenizer.ggml.token_type"); err != nil {
				t.Error(err)
			}
		})
	}
}

func isFloat(v any) bool {
	switch v.(type) {
	case float32, float64:
		return true
	}
	return false
}

// TestTruncatedGolden cuts a real file at many lengths: every cut must give a
// *FormatError, never a panic or a File.
func TestTruncatedGolden(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []int{0, 3, 4, 7, 8, 23, 24, 25, 100, 1000, int(full.DataOffset) - 1, int(full.DataOffset), len(data) - 1}
	for n := 26; n < int(full.DataOffset); n += 997 {
		cuts = append(cuts, n)
	}
	for _, n := range cuts {
		_, err := gguf.Parse(data[:n])
		var fe *gguf.FormatError
		if !errors.As(err, &fe) {
			t.Errorf("cut at %d: error %v, want a *FormatError", n, err)
		}
	}
}
