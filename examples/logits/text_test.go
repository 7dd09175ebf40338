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
