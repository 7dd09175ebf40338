package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

func runText(t *testing.T, args ...string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), args, &buf, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// -text -tokenize on the real SmolLM3 tokenizer gives Hugging Face's ids for
// every rendered chat of the reference cases.
func TestTokenizeRealVocab(t *testing.T) {
	model := sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf")
	f, err := os.Open(sharedtest.Path(t, "tokenizer/chat_template_cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() && n < 5 { // each run loads the 128K-token tokenizer: a few cases suffice
		var c struct {
			Name     string  `json:"name"`
			Rendered string  `json:"rendered"`
			IDs      []int32 `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		var got []int32
		if err := json.Unmarshal([]byte(runText(t, "-model", model, "-text", c.Rendered, "-tokenize")), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%s: -tokenize gives %d ids, Hugging Face %d", c.Name, len(got), len(c.IDs))
		}
	}
}

// -text runs the model on the same ids that -tokenize prints.
func TestTextMatchesTokens(t *testing.T) {
	model := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	var ids []int32
	if err := json.Unmarshal([]byte(runText(t, "-model", model, "-text", "<|im_start|>user\nHello", "-tokenize")), &ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 {
		t.Fatalf("ids %v", ids)
	}
	list := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids)), ","), "[]")
	byText := runJSON(t, "-model", model, "-text", "<|im_start|>user\nHello", "-top", "3", "-decode", "2")
	byIDs := runJSON(t, "-model", model, "-tokens", list, "-top", "3", "-decode", "2")
	if !reflect.DeepEqual(byText, byIDs) {
		t.Fatalf("-text and -tokens %s disagree", list)
	}
}

func TestTextFlagErrors(t *testing.T) {
	model := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	for _, c := range []struct {
		args   []string
		errHas string
	}{
		{[]string{"-model", model, "-tokenize", "-tokens", "1"}, "-tokenize needs -text"},
		{[]string{"-model", model, "-text", "hi", "-tokens", "1"}, "exactly one"},
		{[]string{"-model", "/nonexistent.gguf", "-text", "hi"}, "nonexistent"},
	} {
		err := run(context.Background(), c.args, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.errHas)
		}
	}
}

// -text -tokenize reads only the vocabulary: on llama.cpp's vocabulary-only
// GGUFs (no tensors) it prints the ids llama.cpp's llama_tokenize gives with
// add_special and parse_special (from llamaref tokenize --special
// --add-special), BOS, [CLS] and [SEP] included.
func TestTokenizeVocabOnly(t *testing.T) {
	models := llamaCppModels(t)
	const text = "<s>Hello, world! <|im_start|>user [CLS] 123"
	for _, c := range []struct {
		vocab string
		want  []int32
	}{
		{"qwen2", []int32{44047, 79497, 11, 1879, 0, 220, 151644, 872, 508, 87716, 60, 220, 16, 17, 18}},
		{"llama-spm", []int32{1, 1, 15043, 29892, 3186, 29991, 529, 29989, 326, 29918, 2962, 29989, 29958, 1792, 518, 6154, 29903, 29962, 29871, 29896, 29906, 29941}},
		{"gemma-4", []int32{2, 236820, 236751, 236813, 9259, 236764, 1902, 236888, 655, 236909, 548, 236779, 3041, 111038, 2364, 870, 171051, 236842, 236743, 236770, 236778, 236800}},
		{"bert-bge", []int32{101, 1026, 1055, 1028, 7592, 1010, 2088, 999, 1026, 1064, 10047, 1035, 2707, 1064, 1028, 5310, 101, 13138, 102}},
	} {
		t.Run(c.vocab, func(t *testing.T) {
			var got []int32
			out := runText(t, "-model", filepath.Join(models, "ggml-vocab-"+c.vocab+".gguf"), "-text", text, "-tokenize")
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("-tokenize gives %v\nllama.cpp gives %v", got, c.want)
			}
		})
	}
}

// llamaCppModels returns the models folder of the llama.cpp clone that
// ../shared/tools/llamaref/build.sh makes, or skips (fails under CI=true).
func llamaCppModels(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("SMOLGO_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "smolgo")
	}
	dir := filepath.Join(cache, "llamaref", "nlc-3.22.1", "llama.cpp", "models")
	if _, err := os.Stat(filepath.Join(dir, "ggml-vocab-qwen2.gguf")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llama.cpp's source is missing under CI (%v): .ci/run must run ../shared/tools/llamaref/build.sh first", err)
		}
		t.Skipf("llama.cpp's source not found (%v); run bash ../shared/tools/llamaref/build.sh", err)
	}
	return dir
}
