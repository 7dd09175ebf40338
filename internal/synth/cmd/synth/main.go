// Command synth writes a deterministic random-weight model as a GGUF file.
//
//	go run ./internal/synth/cmd/synth -list
//	go run ./internal/synth/cmd/synth -preset tinyq -type Q4_K_M -o tiny.gguf
//	go run ./internal/synth/cmd/synth -preset qwen3-0.6b -type Q4_K_M -o /tmp/qwen3-0.6b-synth-Q4_K_M.gguf
//	go run ./internal/synth/cmd/synth -preset qwen2.5-0.5b -vocab <llama.cpp>/models/ggml-vocab-qwen2.gguf -o q.gguf
//	go run ./internal/synth/cmd/synth -preset gpt-oss-20b -type MXFP4 -blocks 4 -o /tmp/gpt-oss-20b-4blocks-MXFP4.gguf
//
// Presets (-list prints them with their shapes): the golden models' shapes
// and seeds (tinyq, llama-tiny, tinyyarn from ../shared/golden; qwen3-tiny,
// qwen2-tiny, llama32-tiny, gemma3-tiny, bert-tiny, bert-rank-tiny from
// ../shared/golden-families, which their F32, Q8_0 and Q4_K_M files
// reproduce byte for byte), smollm2-tiny (SmolLM2-Instruct's file format:
// pre-tokenizer smollm and its ChatML template, on the tiny shape), and the
// real shapes of small published models for benchmarks: 3b (SmolLM3-3B),
// qwen3-0.6b, qwen3-1.7b, qwen2.5-0.5b, qwen2.5-1.5b, llama3.2-1b,
// llama3.2-3b, gemma3-270m, gemma3-1b, smollm2-135m, smollm2-360m,
// smollm2-1.7b, bge-small, and the mixture-of-experts qwen3moe-tiny and
// gptoss-tiny (../shared/golden-next, reproduced byte for byte in every
// type there), qwen3-30b-a3b and gpt-oss-20b, each with its real
// vocabulary size (the
// built-in vocabulary padded with reserved tokens; -vocab copies a real
// tokenizer instead, such as ../shared/tokenizer/smollm3-vocab.gguf or
// llama.cpp's models/ggml-vocab-{qwen2,llama-bpe,starcoder,bert-bge}.gguf). Types: F32, F16, BF16,
// Q8_0, Q4_0, Q6_K, Q4_K_M and MXFP4 (llama.cpp's mixes; MXFP4 is its
// MXFP4_MOE: the experts mxfp4, the other matrices q8_0). -blocks N keeps
// the first N blocks of a shape, the same tensors as the whole model's (a
// real MoE shape is large: Qwen3-30B-A3B is 122 GB in F32 and 18.6 GB in
// Q4_K_M, gpt-oss-20b 12.1 GB in MXFP4). The file is written to OUT.tmp and renamed when complete; Ctrl-C
// stops cleanly and removes it.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "tinyq", "model shape (-list shows them): "+strings.Join(synth.PresetNames(), ", "))
	typ := fs.String("type", "F32", "tensor types: F32, F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M, MXFP4 (llama.cpp's MXFP4_MOE)")
	blocks := fs.Int("blocks", 0, "keep the first N blocks of the shape (0: all of them)")
	out := fs.String("o", "", "output file (required)")
	seed := fs.Uint64("seed", 0, "weight seed (0: the preset's)")
	name := fs.String("name", "", "general.name (default: the preset's)")
	vocab := fs.String("vocab", "", "copy the tokenizer.* keys from this GGUF (a real tokenizer, e.g. llama.cpp's models/ggml-vocab-qwen2.gguf) instead of the built-in vocabulary; the model takes its size")
	workers := fs.Int("workers", 0, "goroutines quantizing in parallel (0: GOMAXPROCS)")
	list := fs.Bool("list", false, "list the presets with their shapes and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: synth -preset NAME -type TYPE -o OUT.gguf")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\npresets:")
		listPresets(stderr)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		listPresets(stdout)
		return 0
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	m, mix, err := model(*preset, *typ, *seed, *name, *vocab, *blocks)
	if err == nil {
		err = writeFile(ctx, log, *out, m, synth.Options{Mix: mix, Workers: *workers})
	}
	if err != nil {
		log.Error("synth failed", "err", err)
		return 1
	}
	return 0
}

// listPresets writes one block per preset: its name and what it is, then
// its shape.
func listPresets(w io.Writer) {
	for _, name := range synth.PresetNames() {
		m, _ := synth.Preset(name)
		fmt.Fprintf(w, "%-15s %s\n%15s %s\n", name, synth.PresetAbout(name), "", m.Shape)
	}
}

// model builds the model the flags describe.
func model(preset, typ string, seed uint64, name, vocab string, blocks int) (synth.Model, synth.Mix, error) {
	m, err := synth.Preset(preset)
	if err != nil {
		return m, "", err
	}
	if blocks < 0 || blocks > m.Shape.Layers {
		return m, "", fmt.Errorf("-blocks %d: preset %s has %d blocks", blocks, preset, m.Shape.Layers)
	}
	if blocks > 0 {
		m.Shape.Layers = blocks
	}
	mix, err := synth.ParseMix(typ)
	if err != nil {
		return m, "", err
	}
	if seed != 0 {
		m.Seed = seed
	}
	if name != "" {
		m.Name = name
	}
	if vocab != "" {
		if m.Tokenizer, err = loadTokenizer(vocab); err != nil {
			return m, "", err
		}
		m.Shape.Vocab = 0 // the tokenizer's
	}
	return m, mix, nil
}

func loadTokenizer(path string) ([]gguf.KV, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return synth.TokenizerFrom(f) // metadata values are copies, not in the mapping
}

// writeFile writes the model to path through a temporary file, logging
// progress at most every five seconds.
func writeFile(ctx context.Context, log *slog.Logger, path string, m synth.Model, opts synth.Options) (err error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	var last time.Time
	opts.Progress = func(p synth.Progress) {
		if time.Since(last) < 5*time.Second && p.Tensors < p.NTensors {
			return
		}
		last = time.Now()
		log.Info("writing", "tensors", fmt.Sprintf("%d/%d", p.Tensors, p.NTensors),
			"MB", fmt.Sprintf("%d/%d", p.Bytes>>20, p.NBytes>>20), "tensor", p.Tensor,
			"elapsed", p.Elapsed.Round(100*time.Millisecond))
	}
	log.Info("synthesizing", "preset", m.Name, "type", opts.Mix, "layers", m.Shape.Layers, "hidden", m.Shape.Embd, "out", path)
	bw := bufio.NewWriterSize(f, 1<<20)
	start := time.Now()
	if err := synth.Write(ctx, bw, m, opts); err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("cancelled; removed %s", tmp)
		}
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	st, _ := os.Stat(path)
	log.Info("done", "out", path, "bytes", st.Size(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
