// Command qwen3vl writes the tiny Qwen3-VL pair of smolgo's reference
// (synth.Qwen3VLTextTiny and synth.Qwen3VLMmprojTiny): a qwen3vl text model
// and its qwen3vl_merger projector, both F32, into a directory:
//
//	go run ./internal/synth/cmd/qwen3vl /tmp/qwen3vl
//
// writes /tmp/qwen3vl/qwen3vl-text-F32.gguf and
// /tmp/qwen3vl/mmproj-qwen3vl-F32.gguf (each to NAME.tmp, renamed when
// complete).
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/smolgo/smolgo/internal/synth"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: qwen3vl DIR")
		return 2
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "qwen3vl:", err)
		return 1
	}
	files := []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"qwen3vl-text-F32.gguf", func(w io.Writer) error {
			return synth.WriteQwen3VLText(context.Background(), w, synth.Qwen3VLTextTiny())
		}},
		{"mmproj-qwen3vl-F32.gguf", func(w io.Writer) error { return synth.WriteQwen3VLMmproj(w, synth.Qwen3VLMmprojTiny()) }},
	}
	for _, f := range files {
		if err := write(filepath.Join(dir, f.name), f.write); err != nil {
			fmt.Fprintln(stderr, "qwen3vl:", err)
			return 1
		}
	}
	return 0
}

func write(out string, fn func(w io.Writer) error) (err error) {
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
	if err := fn(bw); err != nil {
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
