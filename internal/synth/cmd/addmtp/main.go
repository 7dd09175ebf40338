// Command addmtp writes a copy of an F32 Qwen3.5 GGUF file (qwen35 or
// qwen35moe) with one random multi-token-prediction block added after the
// model's own blocks (synth.WriteMTP):
//
//	go run ./internal/synth/cmd/addmtp -seed 1 ../shared/golden-next/models/qwen35-tiny-F32.gguf /tmp/qwen35-mtp-F32.gguf
//
// The file is written to OUT.tmp and renamed when complete.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("addmtp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed of the block's weights")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: addmtp [-seed N] IN-F32.gguf OUT.gguf")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	if err := write(fs.Arg(0), fs.Arg(1), *seed); err != nil {
		fmt.Fprintln(stderr, "addmtp:", err)
		return 1
	}
	return 0
}

func write(in, out string, seed uint64) (err error) {
	src, err := gguf.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := out + ".tmp"
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
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := synth.WriteMTP(bw, src, seed); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
