package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestModelsPreset serves a directory with -models-preset: a section that
// names a model of the directory gives it a context, a section of a new
// name is a model with a draft (model-draft, spec-draft-n-max) loaded at
// start (load-on-startup), or a model's folder with its projector, [*]
// applies to every model, and a flag given
// on the command line wins over the preset, as in llama-server.
func TestModelsPreset(t *testing.T) {
	dir := "realmodels/stories260K/"
	q8, q4 := sharedtest.Path(t, dir+"stories260K-Q8_0.gguf"), sharedtest.Path(t, dir+"stories260K-Q4_0.gguf")
	models := t.TempDir()
	link(t, q8, filepath.Join(models, "stories260K-Q8_0.gguf"))
	vision := filepath.Join(t.TempDir(), "gemma")
	link(t, sharedtest.Path(t, "golden-vision/models/gemma3-text-F32.gguf"), filepath.Join(vision, "gemma3-text-F32.gguf"))
	link(t, sharedtest.Path(t, "golden-vision/models/mmproj-gemma3-F32.gguf"), filepath.Join(vision, "mmproj-gemma3-F32.gguf"))
	ini := filepath.Join(t.TempDir(), "models.ini")
	if err := os.WriteFile(ini, []byte(`version = 1
; every model
[*]
c = 384

[stories260K-Q8_0]
ctx-size = 256   ; this one's own

[drafted]
model = `+q8+`
model-draft = `+q4+`
spec-draft-n-max = 3
load-on-startup = true

[vision]
model = `+vision+`
`), 0o644); err != nil {
		t.Fatal(err)
	}
	type model struct {
		ID              string
		InputModalities []string `json:"input_modalities"`
		Pinned          bool
		State           string
		ContextLength   int `json:"context_length"`
	}
	list := func(url string) map[string]model {
		var l struct{ Data []model }
		if err := json.Unmarshal([]byte(get(t, url+"/v1/models")), &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]model{}
		for _, m := range l.Data {
			out[m.ID] = m
		}
		return out
	}
	complete := func(url, name string) (text string, drafted int) {
		t.Helper()
		status, b, err := askModel(url, "/v1/completions", name, `{"prompt":"Once upon a time","max_tokens":32,"temperature":0}`)
		var c struct {
			Choices []struct{ Text string }
			Timings struct {
				DraftN int `json:"draft_n"`
			}
		}
		if err != nil || status != 200 || json.Unmarshal([]byte(b), &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("completion on %s: %d %v %s", name, status, err, b)
		}
		return c.Choices[0].Text, c.Timings.DraftN
	}
	for _, tc := range []struct {
		flags               []string
		ctxDrafted, ctxDirs int
	}{
		{nil, 384, 256},
		{[]string{"-ctx", "320"}, 320, 320}, // the flag wins
	} {
		url := serve(t, append([]string{"-models-dir", models, "-models-preset", ini, "-threads", "1"}, tc.flags...)...)
		alone, n := complete(url, "stories260K-Q8_0")
		withDraft, drafted := complete(url, "drafted")
		if withDraft != alone || n != 0 || drafted == 0 {
			t.Errorf("%v: with the preset's draft %q (%d drafted), alone %q (%d)", tc.flags, withDraft, drafted, alone, n)
		}
		ms := list(url)
		if v := ms["vision"]; len(v.InputModalities) != 2 {
			t.Errorf("%v: a preset's model folder with its projector: %+v", tc.flags, v)
		}
		if d, m := ms["drafted"], ms["stories260K-Q8_0"]; len(ms) != 3 || !d.Pinned || m.Pinned || d.ContextLength != tc.ctxDrafted || m.ContextLength != tc.ctxDirs {
			t.Errorf("%v: /v1/models %+v; want drafted pinned with context %d, stories260K-Q8_0 %d", tc.flags, ms, tc.ctxDrafted, tc.ctxDirs)
		}
	}
}

// TestModelsPresetErrors: a preset file webchat cannot read is refused at
// start, naming the line and what is wrong.
func TestModelsPresetErrors(t *testing.T) {
	smol := tinyQ4(t)
	tests := []struct{ ini, want string }{
		{"[a]\nn-gpu-layers = 99\n", `models.ini:2: "n-gpu-layers" is not an option webchat reads from a preset (it reads model, mmproj, spec-draft-model,`},
		{"c = 512\n", "models.ini:1: c is outside a section; put it under [*] or a model's [NAME]"},
		{"[*]\nmodel = x.gguf\n", "models.ini:2: model is a model's own (the model's file or folder); it goes in the model's [NAME] section, not [*]"},
		{"[*]\nc = lots\n", `models.ini:2: c: "lots" is not a whole number of at least 0`},
		{"[*]\nspec-draft-n-max = 0\n", `models.ini:2: spec-draft-n-max: "0" is not a whole number of at least 1`},
		{"[*]\ndraft-p-min = 2\n", `models.ini:2: draft-p-min: "2" is not a probability from 0 to 1`},
		{"[a]\nmodel = " + smol + "\nload-on-startup = maybe\n", `models.ini:3: load-on-startup: "maybe" is not true or false`},
		{"[a\n", `models.ini:1: a section is [NAME] (or [*] for every model): "[a"`},
		{"[a]\nmodel = " + smol + "\n[a]\n", "models.ini:3: a second [a] section"},
		{"just words\n", `models.ini:1: want key = value or [NAME]: "just words"`},
		{"[new]\nc = 512\n", "models.ini:1: [new] is not a model of -models-dir or -model, so it needs model = FILE"},
	}
	for _, tc := range tests {
		ini := filepath.Join(t.TempDir(), "models.ini")
		if err := os.WriteFile(ini, []byte(tc.ini), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut syncBuffer
		code := run(context.Background(), []string{"-model", "s=" + smol, "-models-preset", ini, "-addr", "127.0.0.1:0"}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.ini, code, errOut.String(), tc.want)
		}
	}
	if _, err := readPreset("/does/not/exist.ini"); err == nil || !strings.Contains(err.Error(), "-models-preset: open /does/not/exist.ini") {
		t.Errorf("a missing file: %v", err)
	}
	// Comments after values, and a value with a ; inside it.
	ini := filepath.Join(t.TempDir(), "models.ini")
	os.WriteFile(ini, []byte("[a]\nmodel = dir/x;y.gguf  ; the file\n"), 0o644)
	p, err := readPreset(ini)
	if err != nil || p.models[0].opts["model"] != "dir/x;y.gguf" {
		t.Errorf("%+v %v", p, err)
	}
}
