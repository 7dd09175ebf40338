// Command synth writes a deterministic random-weight model as a GGUF file.
//
//	go run ./internal/synth/cmd/synth -preset tinyq -type Q4_K_M -o tiny.gguf
//	go run ./internal/synth/cmd/synth -preset 3b -type Q4_K_M -o /tmp/smollm3-3b-synth-Q4_K_M.gguf
//
// Presets: tinyq (the golden tinyq family's shape and seed: 8 layers, hidden
// 256), llama-tiny, tinyyarn, and 3b (SmolLM3-3B: 36 layers, hidden 2048,
// vocabulary 128,256; -vocab ../shared/tokenizer/smollm3-vocab.gguf gives it
// SmolLM3's real tokenizer). Types: F32, F16, BF16, Q8_0, Q4_0, Q6_K and Q4_K_M
// (llama.cpp's mix). The file is written to OUT.tmp and renamed when
// complete; Ctrl-C stops cleanly and removes it.
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
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "tinyq", "model shape: "+strings.Join(synth.PresetNames(), ", "))
	typ := fs.String("type", "F32", "tensor types: F32, F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M")
	out := fs.String("o", "", "output file (required)")
	seed := fs.Uint64("seed", 0, "weight seed (0: the preset's)")
	name := fs.String("name", "", "general.name (default: the preset's)")
	vocab := fs.String("vocab", "", "copy the tokenizer.* keys from this GGUF (e.g. SmolLM3's real tokenizer) instead of the built-in vocabulary")
	workers := fs.Int("workers", 0, "goroutines quantizing in parallel (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: synth -preset NAME -type TYPE -o OUT.gguf")
		fs.PrintDefaults()
		return 2
	}
	m, mix, err := model(*preset, *typ, *seed, *name, *vocab)
	if err == nil {
		err = writeFile(ctx, log, *out, m, synth.Options{Mix: mix, Workers: *workers})
	}
	if err != nil {
		log.Error("synth failed", "err", err)
		return 1
	}
	return 0
}

// model builds the model the flags describe.
func model(preset, typ string, seed uint64, name, vocab string) (synth.Model, synth.Mix, error) {
	m, err := synth.Preset(preset)
	if err != nil {
		return m, "", err
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
