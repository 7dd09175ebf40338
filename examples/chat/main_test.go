package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

func tinyArgs(t *testing.T, extra ...string) []string {
	model := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	// /system_override keeps the prompt short on the tiny vocabulary.
	return append([]string{"-model", model, "-system", "Be brief. /system_override", "-ctx", "512"}, extra...)
}

var statsLine = regexp.MustCompile(`\[(\d+) prompt tokens \((\d+) cached\), [\d.]+ tokens/s prefill; (\d+) generated, [\d.]+ tokens/s; (\w+)\]`)

func TestPromptMode(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := tinyArgs(t, "-prompt", "Hi", "-n", "6", "-temp", "0", "-think=false")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr, nil, log); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() == 0 || !strings.HasSuffix(stdout.String(), "\n") {
		t.Fatalf("stdout %q", stdout.String())
	}
	m := statsLine.FindStringSubmatch(stderr.String())
	if m == nil || m[3] != "6" || m[4] != "length" {
		t.Fatalf("stderr %q has no stats line for 6 tokens", stderr.String())
	}
	// Greedy: the same answer again.
	var again bytes.Buffer
	if err := run(context.Background(), args, strings.NewReader(""), &again, io.Discard, nil, log); err != nil {
		t.Fatal(err)
	}
	if again.String() != stdout.String() {
		t.Fatalf("greedy answers differ: %q, %q", stdout.String(), again.String())
	}
	// Lookup speculation does not change a greedy answer.
	var spec bytes.Buffer
	if err := run(context.Background(), append(args, "-speculate"), strings.NewReader(""), &spec, io.Discard, nil, log); err != nil {
		t.Fatal(err)
	}
	if spec.String() != stdout.String() {
		t.Fatalf("greedy answer with -speculate %q, without %q", spec.String(), stdout.String())
	}
}

// TestContextCancelled: a cancelled context (SIGTERM in main) ends an
// answer as cancelled, and ends the interactive loop at the prompt.
func TestContextCancelled(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	if err := run(ctx, tinyArgs(t, "-prompt", "Hi", "-n", "6", "-temp", "0"), strings.NewReader(""), io.Discard, &stderr, nil, log); err != nil {
		t.Fatal(err)
	}
	if m := statsLine.FindStringSubmatch(stderr.String()); m == nil || m[4] != "cancelled" || m[3] != "0" {
		t.Errorf("-prompt with a cancelled context: stderr %q, want a cancelled answer of 0 tokens", stderr.String())
	}
	pr, pw := io.Pipe() // no input ever: only the context can end the loop
	defer pw.Close()
	if err := run(ctx, tinyArgs(t), pr, io.Discard, io.Discard, make(chan os.Signal), log); !errors.Is(err, context.Canceled) {
		t.Errorf("interactive with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestInteractive(t *testing.T) {
	var stdout bytes.Buffer
	in := "Hi\n/no_think\nHello\n/bogus\n/reset\nHi\n/quit\nnever read\n"
	args := tinyArgs(t, "-n", "4", "-temp", "0")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := run(context.Background(), args, strings.NewReader(in), &stdout, io.Discard, make(chan os.Signal), log); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	for _, want := range []string{"reasoning off", "unknown command /bogus", "new conversation"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	stats := statsLine.FindAllStringSubmatch(out, -1)
	if len(stats) != 3 {
		t.Fatalf("%d stats lines, want 3:\n%s", len(stats), out)
	}
	// The second turn resumes the first (cached tokens); after /reset none are.
	if stats[1][2] == "0" || stats[2][2] != "0" {
		t.Errorf("cached tokens %s then %s, want >0 then 0", stats[1][2], stats[2][2])
	}
}

func TestBadFlags(t *testing.T) {
	bad := [][]string{{}, {"-model", "x", "-temp", "-1"}, {"-model", "x", "-color", "pink"}, {"-model", "x", "stray"},
		tinyArgs(t, "-prompt", "Hi", "-device", "tpu:0"), tinyArgs(t, "-prompt", "Hi", "-threads", "-1")}
	for _, args := range bad {
		err := run(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// interruptingWriter sends Ctrl-C after the n-th write.
type interruptingWriter struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	n          int
	interrupts chan os.Signal
}

func (w *interruptingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n--; w.n == 0 {
		w.interrupts <- os.Interrupt
	}
	return w.buf.Write(p)
}

func (w *interruptingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestCtrlC(t *testing.T) {
	interrupts := make(chan os.Signal, 1)
	// Writes: the banner, "> ", then the answer's first piece.
	w := &interruptingWriter{n: 3, interrupts: interrupts}
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { io.WriteString(pw, "Hi\n") }() // then no more input: the prompt waits
	args := tinyArgs(t, "-n", "200", "-temp", "0", "-think=false")
	done := make(chan error)
	go func() {
		done <- run(context.Background(), args, pr, w, io.Discard, interrupts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	// The answer stops as cancelled; a second Ctrl-C at the prompt quits.
	for !statsLine.MatchString(w.String()) {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v\n%s", err, w.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	interrupts <- os.Interrupt
	if err := <-done; err != errQuit {
		t.Fatalf("second Ctrl-C: %v", err)
	}
	m := statsLine.FindStringSubmatch(w.String())
	if m == nil || m[4] != "cancelled" || m[3] == "200" {
		t.Fatalf("output %q", w.String())
	}
}
