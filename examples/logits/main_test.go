package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

func runJSON(t *testing.T, args ...string) Output {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), args, &buf, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	return out
}

func TestLogitsMatchesForward(t *testing.T) {
	model := sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf")
	tokens := []int32{331, 296, 308, 311}
	_, m := goldentest.Open(t, model, engine.WithThreads(1))
	c, _ := m.NewCache()
	want, err := m.Forward(context.Background(), c, tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	want = append([]float32(nil), want...)
	V := m.CPU().Config.Vocab

	out := runJSON(t, "-model", model, "-tokens", "331,296,308,311", "-all", "-decode", "3", "-threads", "1")
	if len(out.Positions) != 4 || len(out.Decode) != 3 {
		t.Fatalf("%d positions, %d decode rows", len(out.Positions), len(out.Decode))
	}
	for i, r := range out.Positions {
		if r.Pos == nil || *r.Pos != i || len(r.Logits) != V {
			t.Fatalf("row %d: pos %v, %d logits", i, r.Pos, len(r.Logits))
		}
		for j, v := range r.Logits {
			if v != want[i*V+j] {
				t.Fatalf("pos %d logit %d = %v, Forward says %v", i, j, v, want[i*V+j])
			}
		}
	}
	if got, want := *out.Decode[0].Token, int32(argmax(want[3*V:])); got != want {
		t.Errorf("first decoded token %d, argmax of the last row %d", got, want)
	}

	// -top and -tokens-file.
	file := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(file, []byte("331 296\n308, 311\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	top := runJSON(t, "-model", model, "-tokens-file", file, "-top", "5")
	if len(top.Positions) != 1 || *top.Positions[0].Pos != 3 || len(top.Positions[0].Top) != 5 {
		t.Fatalf("-top output: %+v", top.Positions)
	}
	best := top.Positions[0].Top[0]
	if int(best[0]) != argmax(want[3*V:]) || best[1] != want[3*V+int(best[0])] {
		t.Errorf("top pair %v, want id %d", best, argmax(want[3*V:]))
	}
	for i := 1; i < 5; i++ {
		if top.Positions[0].Top[i][1] > top.Positions[0].Top[i-1][1] {
			t.Errorf("top pairs not sorted: %v", top.Positions[0].Top)
		}
	}
}

func TestLogitsErrors(t *testing.T) {
	model := sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf")
	for _, c := range []struct {
		args   []string
		errHas string
	}{
		{[]string{"-tokens", "1"}, "-model"},
		{[]string{"-model", model}, "-tokens"},
		{[]string{"-model", model, "-tokens", "1,x"}, `"x"`},
		{[]string{"-model", model, "-tokens", "1,9999"}, "9999"},
		{[]string{"-model", model, "-tokens", "1", "-kv", "q8"}, "q8"},
		{[]string{"-model", "/nonexistent.gguf", "-tokens", "1"}, "nonexistent"},
	} {
		err := run(context.Background(), c.args, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.errHas)
		}
	}
}
