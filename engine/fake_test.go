package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A fake model for testing the engine without a forward pass. Tokens
// 0..255 are bytes; a few special tokens follow. The "model" answers with
// a script chosen by its callback from the whole history, and its caches
// check that the engine never leaves a gap or lies about positions.

const (
	fakeImStart = 256 + iota
	fakeImEnd
	fakeThink
	fakeThinkEnd
	fakeCallOpen
	fakeCallClose
	fakeVocab
)

var fakeSpecial = map[string]int32{
	"<|im_start|>": fakeImStart, "<|im_end|>": fakeImEnd, "<think>": fakeThink, "</think>": fakeThinkEnd,
	"<call>": fakeCallOpen, "</call>": fakeCallClose,
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

func decodeFake(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id < 256 {
			b.WriteByte(byte(id))
			continue
		}
		for s, sid := range fakeSpecial {
			if sid == id {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// fakeBackend computes logits from the token history: the answer is a
// function of the history up to the last assistant header, so a cache that
// holds the wrong tokens changes it.
type fakeBackend struct {
	ctxLen int
	batch  int // BatchSize; default 512
	// answer returns the text the model writes after the prompt (special
	// tags allowed; <|im_end|> is appended).
	answer func(prompt []int32) string
	delay  time.Duration // per step
	nan    bool          // produce all-NaN logits
	// logits, when set, replaces the script: it writes the logits after
	// hist (a model with a distribution, for sampling tests).
	logits func(hist []int32, dst []float32)
	hidden int           // width of the hidden states written to Seq.Hidden (fakeHidden)
	layout string        // the caches' Persister layout ("fake/1" if empty)
	stall  chan struct{} // when set, LoadFrom waits for it to close (a stalled volume)

	mu    sync.Mutex
	calls int         // steps
	steps [][]stepSeq // what each step computed
	open  atomic32    // caches not closed
}

type stepSeq struct {
	pos, tokens, rows int
}

type atomic32 struct {
	mu sync.Mutex
	n  int
}

func (a *atomic32) add(d int) { a.mu.Lock(); a.n += d; a.mu.Unlock() }
func (a *atomic32) get() int  { a.mu.Lock(); defer a.mu.Unlock(); return a.n }

func (f *fakeBackend) Vocab() int { return fakeVocab }

func (f *fakeBackend) BatchSize() int {
	if f.batch == 0 {
		return 512
	}
	return f.batch
}

func (f *fakeBackend) NewCache() (Cache, error) {
	f.open.add(1)
	return &fakeCache{f: f}, nil
}

var errFakeGap = errors.New("fake cache: step past the cached tokens")

func (f *fakeBackend) Step(ctx context.Context, batch []Seq) error {
	f.mu.Lock()
	f.calls++
	var rec []stepSeq
	for _, q := range batch {
		rec = append(rec, stepSeq{pos: q.Cache.Len(), tokens: len(q.Tokens), rows: len(q.Logits) / fakeVocab})
	}
	f.steps = append(f.steps, rec)
	delay := f.delay
	f.mu.Unlock()
	total := 0
	for _, q := range batch {
		c := q.Cache.(*fakeCache)
		if c.closed {
			return errors.New("fake cache: used after Close")
		}
		if len(q.Tokens) == 0 || len(q.Logits)%fakeVocab != 0 || len(q.Logits)/fakeVocab > len(q.Tokens) {
			return fmt.Errorf("fake: bad seq: %d tokens, %d logits", len(q.Tokens), len(q.Logits))
		}
		if len(c.stored)+len(q.Tokens) > f.ctxLen {
			return fmt.Errorf("fake: %w", ErrContextFull)
		}
		total += len(q.Tokens)
	}
	if total > f.BatchSize() {
		return fmt.Errorf("fake: step of %d tokens exceeds the batch size %d", total, f.BatchSize())
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, q := range batch {
		c := q.Cache.(*fakeCache)
		rows := len(q.Logits) / fakeVocab
		c.stored = append(c.stored, q.Tokens...)
		if f.hidden > 0 {
			if len(q.Hidden)%f.hidden != 0 || len(q.Hidden)/f.hidden > len(q.Tokens) {
				return fmt.Errorf("fake: bad hidden of %d values for %d tokens", len(q.Hidden), len(q.Tokens))
			}
			hr := len(q.Hidden) / f.hidden
			for r := range hr {
				fakeHiddenState(c.stored[:len(c.stored)-hr+r+1], q.Hidden[r*f.hidden:(r+1)*f.hidden])
			}
		} else if q.Hidden != nil {
			return errors.New("fake: hidden states asked of a backend without them")
		}
		for r := range rows {
			end := len(c.stored) - rows + r + 1 // the row predicts after stored[:end]
			f.predict(c.stored[:end], q.Logits[r*fakeVocab:(r+1)*fakeVocab])
		}
	}
	return nil
}

// predict writes the logits after hist.
func (f *fakeBackend) predict(hist []int32, logits []float32) {
	clear(logits)
	if f.nan {
		for i := range logits {
			logits[i] = float32(nanF())
		}
		return
	}
	if f.logits != nil {
		f.logits(hist, logits)
		return
	}
	start := lastHeader(hist)
	script := append(fakeEncode(f.answer(hist[:start])), fakeImEnd)
	n := len(hist) - start
	next := int32(fakeImEnd)
	if n < len(script) {
		next = script[n]
	}
	logits[next] = 10
}

func nanF() float64 { z := 0.0; return z / z }

type fakeCache struct {
	f      *fakeBackend
	stored []int32
	closed bool
}

func (c *fakeCache) Len() int    { return len(c.stored) }
func (c *fakeCache) MaxLen() int { return c.f.ctxLen }
func (c *fakeCache) Bytes() int64 {
	return int64(cap(c.stored)) * 4
}

func (c *fakeCache) Truncate(n int) error {
	if n < 0 || n > len(c.stored) {
		return fmt.Errorf("fake: truncate %d of %d", n, len(c.stored))
	}
	c.stored = c.stored[:n]
	return nil
}

func (c *fakeCache) Close() error {
	if !c.closed {
		c.closed = true
		c.f.open.add(-1)
	}
	return nil
}

func (c *fakeCache) Clone(n int) (Cache, error) {
	if n > len(c.stored) {
		return nil, fmt.Errorf("fake: clone %d of %d", n, len(c.stored))
	}
	c.f.open.add(1)
	return &fakeCache{f: c.f, stored: append([]int32(nil), c.stored[:n]...)}, nil
}

func (c *fakeCache) CopyFrom(src Cache, from, to int) error {
	s := src.(*fakeCache)
	if s.closed {
		return errors.New("fake: copy from a closed cache")
	}
	if from > len(c.stored) || to > len(s.stored) || from > to {
		return fmt.Errorf("fake: copy [%d, %d) of %d into %d", from, to, len(s.stored), len(c.stored))
	}
	c.stored = append(c.stored[:from], s.stored[from:to]...)
	return nil
}

// Layout, SaveTo and LoadFrom implement Persister: the tokens are the
// cache's contents.
func (c *fakeCache) Layout() string {
	if c.f.layout != "" {
		return c.f.layout
	}
	return "fake/1"
}

func (c *fakeCache) SaveTo(w io.Writer) error {
	return binary.Write(w, binary.LittleEndian, c.stored)
}

func (c *fakeCache) LoadFrom(r io.Reader, n int) error {
	if c.f.stall != nil {
		<-c.f.stall
	}
	c.stored = c.stored[:0]
	if n < 0 || n > c.f.ctxLen {
		return fmt.Errorf("fake: %d positions", n)
	}
	got := make([]int32, n)
	if err := binary.Read(r, binary.LittleEndian, got); err != nil {
		return err
	}
	for _, t := range got {
		if t < 0 || t >= fakeVocab {
			return fmt.Errorf("fake: token %d", t)
		}
	}
	c.stored = got
	return nil
}

func (c *fakeCache) Shift(keep, drop int) error {
	if keep+drop > len(c.stored) {
		return fmt.Errorf("fake: shift %d+%d of %d", keep, drop, len(c.stored))
	}
	c.stored = append(c.stored[:keep], c.stored[keep+drop:]...)
	return nil
}

// lastHeader returns the index just after the last "<|im_start|>assistant\n"
// (and its empty think block, if any).
func lastHeader(hist []int32) int {
	hdr := fakeEncode("<|im_start|>assistant\n")
	empty := fakeEncode("<think>\n\n</think>\n")
	for i := len(hist) - len(hdr); i >= 0; i-- {
		if slices.Equal(hist[i:i+len(hdr)], hdr) {
			j := i + len(hdr)
			if len(hist) >= j+len(empty) && slices.Equal(hist[j:j+len(empty)], empty) {
				j += len(empty)
			}
			return j
		}
	}
	return len(hist)
}

// historyHash summarizes a prompt, for answers that depend on all of it.
func historyHash(ids []int32) uint32 {
	h := fnv.New32a()
	for _, id := range ids {
		fmt.Fprint(h, id, ",")
	}
	return h.Sum32()
}

// fakeFormat renders ChatML like SmolLM3's template does (without its system
// preamble) and parses <think> and <call>{json}</call>.
type fakeFormat struct{}

func (fakeFormat) Prompt(msgs []Message, opts PromptOptions) ([]int32, error) {
	var ids []int32
	text := func(s string) {
		if opts.ParseSpecial {
			ids = append(ids, fakeEncode(s)...)
			return
		}
		for i := 0; i < len(s); i++ {
			ids = append(ids, int32(s[i]))
		}
	}
	off := opts.Thinking != nil && !*opts.Thinking
	if len(opts.Tools) > 0 {
		ids = append(ids, fakeEncode("<|im_start|>system\ntools:")...)
		for _, t := range opts.Tools {
			text(string(t))
		}
		ids = append(ids, fakeEncode("<|im_end|>\n")...)
	}
	for _, m := range msgs {
		ids = append(ids, fakeEncode("<|im_start|>"+m.Role+"\n")...)
		if m.Role == "assistant" && off {
			ids = append(ids, fakeEncode("<think>\n\n</think>\n")...)
		}
		text(m.Content)
		ids = append(ids, fakeEncode("<|im_end|>\n")...)
	}
	ids = append(ids, fakeEncode("<|im_start|>assistant\n")...)
	if off {
		ids = append(ids, fakeEncode("<think>\n\n</think>\n")...)
	}
	return ids, nil
}

func (fakeFormat) NewDecoder() Decoder           { return &fakeDecoder{} }
func (fakeFormat) EndOfTurn(id int32) bool       { return id == fakeImEnd }
func (fakeFormat) Tokenizer() (Tokenizer, error) { return fakeTokenizer{}, nil }
func (fakeFormat) NewParser(o ParserOptions) Parser {
	return &fakeParser{tools: o.Tools}
}

type fakeTokenizer struct{}

func (fakeTokenizer) Encode(text string, parseSpecial bool) []int32 { return fakeEncode(text) }
func (fakeTokenizer) Decode(ids []int32, skip bool) (string, error) { return decodeFake(ids), nil }
func (fakeTokenizer) TokenBytes(id int32) []byte                    { return []byte(decodeFake([]int32{id})) }
func (fakeTokenizer) Normal(id int32) bool                          { return id >= 0 && id < 256 }
func (fakeTokenizer) Len() int                                      { return fakeVocab }
func (fakeTokenizer) EndOfGeneration() []int32                      { return []int32{fakeImEnd} }

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

// fakeParser splits reasoning (between the think tokens, white space after
// a tag and at the end of the reasoning trimmed) from content, and reads
// <call>{"name": …, "arguments": …}</call> as tool calls when asked.
type fakeParser struct {
	tools    bool
	think    bool
	afterTag bool
	held     string // trailing white space of the reasoning so far
	call     *strings.Builder
}

func (p *fakeParser) Push(id int32, text string) []Event {
	switch id {
	case fakeThink:
		p.think, p.afterTag = true, true
		return nil
	case fakeThinkEnd:
		p.think, p.afterTag, p.held = false, true, ""
		return nil
	case fakeCallOpen:
		if p.tools {
			p.call = new(strings.Builder)
			return nil
		}
	case fakeCallClose:
		if p.tools && p.call != nil {
			raw := p.call.String()
			p.call = nil
			var c struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(raw), &c); err != nil || c.Name == "" {
				return []Event{{Kind: EventToolError, Text: "<call>" + raw + "</call>", Err: fmt.Errorf("bad call %q: %v", raw, err)}}
			}
			return []Event{{Kind: EventToolCall, Text: "<call>" + raw + "</call>", ToolCall: &ToolCall{Name: c.Name, Arguments: c.Arguments}}}
		}
	}
	if p.call != nil {
		p.call.WriteString(text)
		return nil
	}
	if p.afterTag {
		if text = strings.TrimLeft(text, " \n"); text == "" {
			return nil
		}
		p.afterTag = false
	}
	if p.think {
		t := p.held + text
		trimmed := strings.TrimRight(t, " \n")
		p.held = t[len(trimmed):]
		if trimmed == "" {
			return nil
		}
		return []Event{{Kind: EventReasoning, Text: trimmed}}
	}
	if text == "" {
		return nil
	}
	return []Event{{Kind: EventContent, Text: text}}
}

func (p *fakeParser) Flush() []Event { return nil }

// newFakeModel makes a Model over a fake backend.
func newFakeModel(f *fakeBackend, opts ...Option) *Model {
	cfg, err := NewConfig(opts...)
	if err != nil {
		panic(err)
	}
	m, err := New(f, fakeFormat{}, cfg)
	if err != nil {
		panic(err)
	}
	return m
}

func newSession(f *fakeBackend, opts ...Option) *Session {
	return newFakeModel(f, opts...).NewSession()
}

// fakeHidden is a fakeBackend whose steps return hidden states
// (backend.HiddenStates): the state after a history is a function of the
// whole history, as a causal decoder's is.
type fakeHidden struct{ *fakeBackend }

func (f fakeHidden) HiddenDim() int { return f.hidden }

// fakeHiddenState writes the hidden state after hist.
func fakeHiddenState(hist []int32, dst []float32) {
	h := historyHash(hist)
	for j := range dst {
		dst[j] = float32((h>>uint(j%24))&0xff) - 100 + float32(len(hist))
	}
}
