package smollm3

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"
)

// A fake model for testing the generation loop without a forward pass.
// Tokens 0..255 are bytes; four special tokens follow. The "model" answers
// with a script chosen by its callback from the whole history, and its
// cache checks that the session never leaves a gap or lies about positions.

const (
	fakeImStart = 256 + iota
	fakeImEnd
	fakeThink
	fakeThinkEnd
	fakeVocab
)

var fakeSpecial = map[string]int32{
	"<|im_start|>": fakeImStart, "<|im_end|>": fakeImEnd, "<think>": fakeThink, "</think>": fakeThinkEnd,
}

type fakeBackend struct {
	ctxLen int
	// answer returns the text the model writes after the prompt (special
	// tags allowed; <|im_end|> is appended).
	answer func(prompt []int32) string
	delay  time.Duration // per forward call
	nan    bool          // produce all-NaN logits
	calls  int           // forward calls
}

func fakeEncode(text string) []int32 {
	var ids []int32
	for len(text) > 0 {
		matched := false
		for s, id := range fakeSpecial {
			if strings.HasPrefix(text, s) {
				ids, text, matched = append(ids, id), text[len(s):], true
				break
			}
		}
		if !matched {
			ids, text = append(ids, int32(text[0])), text[1:]
		}
	}
	return ids
}

func (f *fakeBackend) newCache() (kvCache, error) { return &fakeCache{f: f}, nil }
func (f *fakeBackend) encode(text string) ([]int32, error) {
	return fakeEncode(text), nil
}
func (f *fakeBackend) newDecoder() tokenDecoder        { return &fakeDecoder{} }
func (f *fakeBackend) endOfTurn(id int32) bool         { return id == fakeImEnd }
func (f *fakeBackend) thinkTags() (int32, int32, bool) { return fakeThink, fakeThinkEnd, true }

func (f *fakeBackend) render(msgs []Message, opts *GenerateOptions) (string, error) {
	thinking := opts.Thinking
	var b strings.Builder
	for _, m := range msgs {
		think := ""
		if m.Role == "assistant" && thinking != nil && !*thinking {
			think = "<think>\n\n</think>\n" // as SmolLM3's template does
		}
		b.WriteString("<|im_start|>" + m.Role + "\n" + think + m.Content + "<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n")
	if thinking != nil && !*thinking {
		b.WriteString("<think>\n\n</think>\n")
	}
	return b.String(), nil
}

type fakeCache struct {
	f      *fakeBackend
	stored []int32
	prompt int // length of the history when the current answer began
}

func (c *fakeCache) maxLen() int { return c.f.ctxLen }

var errFakeGap = errors.New("fake cache: forward past the cached tokens")

func (c *fakeCache) forward(ctx context.Context, tokens []int32, pos int) ([]float32, error) {
	c.f.calls++
	if pos > len(c.stored) || pos < 0 {
		return nil, fmt.Errorf("%w: pos %d, %d cached", errFakeGap, pos, len(c.stored))
	}
	if pos+len(tokens) > c.f.ctxLen {
		return nil, fmt.Errorf("fake cache: position %d beyond the context %d", pos+len(tokens)-1, c.f.ctxLen)
	}
	if c.f.delay > 0 {
		select {
		case <-time.After(c.f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.stored = append(c.stored[:pos], tokens...)
	logits := make([]float32, fakeVocab)
	if c.f.nan {
		for i := range logits {
			logits[i] = float32(nanF())
		}
		return logits, nil
	}
	// The answer is a function of the history up to the last assistant
	// header, so a wrong cache changes it.
	hist := c.stored
	start := lastHeader(hist)
	script := append(fakeEncode(c.f.answer(hist[:start])), fakeImEnd)
	n := len(hist) - start
	next := int32(fakeImEnd)
	if n < len(script) {
		next = script[n]
	}
	logits[next] = 10
	return logits, nil
}

func nanF() float64 { z := 0.0; return z / z }

// lastHeader returns the index just after the last "<|im_start|>assistant\n"
// (and its empty think block, if any).
func lastHeader(hist []int32) int {
	hdr := fakeEncode("<|im_start|>assistant\n")
	empty := fakeEncode("<think>\n\n</think>\n")
	for i := len(hist) - len(hdr); i >= 0; i-- {
		if equal(hist[i:i+len(hdr)], hdr) {
			j := i + len(hdr)
			if len(hist) >= j+len(empty) && equal(hist[j:j+len(empty)], empty) {
				j += len(empty)
			}
			return j
		}
	}
	return len(hist)
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// historyHash summarizes a prompt, for answers that depend on all of it.
func historyHash(ids []int32) uint32 {
	h := fnv.New32a()
	for _, id := range ids {
		fmt.Fprint(h, id, ",")
	}
	return h.Sum32()
}

type fakeDecoder struct{ buf []byte }

func (d *fakeDecoder) Push(id int32) (string, error) {
	if id >= 256 {
		return "", nil // special tokens are skipped
	}
	if id < 0 {
		return "", fmt.Errorf("fake decoder: id %d out of range", id)
	}
	d.buf = append(d.buf, byte(id))
	n := 0
	for n < len(d.buf) && utf8.FullRune(d.buf[n:]) {
		_, size := utf8.DecodeRune(d.buf[n:])
		n += size
	}
	out := string(d.buf[:n])
	d.buf = d.buf[n:]
	return out, nil
}

func (d *fakeDecoder) Flush() string {
	out := strings.ToValidUTF8(string(d.buf), "\uFFFD")
	d.buf = nil
	return out
}
