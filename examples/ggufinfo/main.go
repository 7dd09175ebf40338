// Command ggufinfo describes a GGUF model file: its metadata (long arrays
// summarized), its tensors (name, type, shape, bytes, offset), how many
// bytes each tensor type takes, and a summary of the architecture (layers,
// heads, head size, context, NoPE layers, tied embeddings), and whether
// smolgo loads it: the family of its architecture, what its block uses, every
// tensor the block needs, the tokenizer, and what the CUDA backend lacks.
//
// Usage:
//
//	go run ./examples/ggufinfo [-json] [-tensors=false] FILE
//
// With -json it prints the same report as one JSON object; a NaN or
// infinite float in the file is written as the string "NaN", "+Inf" or
// "-Inf", since JSON has no such numbers. In the text report, a key, string
// or tensor name holding control or other non-printing characters is shown
// quoted with Go escapes (\x1b, \t, \u202e), never written raw to the
// terminal. A file that is not valid GGUF makes it exit with status 1 and an
// error naming the problem and its byte offset; -h prints the usage and
// exits 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/smolgo/smolgo/gguf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fs := flag.NewFlagSet("ggufinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	showTensors := fs.Bool("tensors", true, "list every tensor")
	verbose := fs.Bool("v", false, "log progress")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ggufinfo [-json] [-tensors=false] [-v] FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	path := fs.Arg(0)

	start := time.Now()
	f, err := gguf.Open(path)
	if err != nil {
		log.Error("cannot read GGUF file", "file", path, "err", err)
		return 1
	}
	defer f.Close()
	log.Debug("opened", "file", path, "tensors", len(f.Tensors), "keys", len(f.KV), "took", time.Since(start))
	if err := ctx.Err(); err != nil {
		log.Error("cancelled", "err", err)
		return 1
	}

	r := newReport(path, f)
	if !*showTensors {
		r.Tensors = nil
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = r.writeText(stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("cannot write the report", "err", err)
		return 1
	}
	return 0
}
