// Package think separates a model's reasoning from its answer while tokens
// stream in: the text between <think> and </think> (SmolLM3, Qwen3 and the
// many models that write their reasoning so) is reasoning, the rest content.
// The chat packages of those families name it under their own names.
package think

import (
	"strings"
	"unicode"
)

// Kind tells what a Segment of generated text is.
type Kind int

const (
	// Content is answer text, shown to the user.
	Content Kind = iota
	// Reasoning is text between <think> and </think>.
	Reasoning
)

func (k Kind) String() string {
	if k == Reasoning {
		return "reasoning"
	}
	return "content"
}

// Segment is a piece of generated text of one kind.
type Segment struct {
	Kind Kind
	Text string
}

// The tags around the reasoning.
const (
	OpenTag  = "<think>"
	CloseTag = "</think>"
)

// ParserOptions adjust a Parser.
type ParserOptions struct {
	// StartInReasoning is for prompts that already end with the open tag,
	// so that the model only writes the close tag (not SmolLM3's template).
	StartInReasoning bool
	// TrimSpace drops the white space right after each tag and at the end
	// of a reasoning block, so "<think>\nhmm\n</think>\n\nHi" gives the
	// reasoning "hmm" and the content "Hi".
	TrimSpace bool
	// Open and Close are the tags; empty means <think> and </think>
	// (others: <seed:think>, [THINK], ◁think▷, read from a chat template).
	Open, Close string
}

// Parser splits a stream of generated tokens into reasoning and content. It
// is a small state machine: outside a think block it looks for <think>,
// inside for </think>. A tag arrives either as its own token (matched by
// id) or as text, possibly split across tokens ("<th", "ink>"): text that
// could be the start of a tag is held back until the next piece decides.
// Tags themselves are never part of a segment; a </think> outside a think
// block is dropped, a <think> inside one is reasoning text.
//
// Reasoning comes first or not at all, as llama.cpp reads it: a <think>
// opens a block only before the answer has begun (only white space before
// it) and only once, so a model that writes the tag in the middle of its
// answer, or again after its reasoning, has written content. A Parser is
// for one generated turn; it is not safe for concurrent use.
type Parser struct {
	openID, closeID int32
	opts            ParserOptions
	inThink         bool
	late            bool   // the answer has begun or a block has ended: no block opens any more
	pending         string // text that may be the start of a tag
	trimLead        bool   // drop white space at the start of the current block
	space           string // trailing white space of reasoning, held back (TrimSpace)
	out             []Segment
}

// NewParser returns a parser that knows the ids of the open and close tags
// (SmolLM3: 128002 and 128003, or look them up with the tokenizer's ID);
// pass -1 for a tag that is not a single token in the vocabulary.
func NewParser(openID, closeID int32, opts ParserOptions) *Parser {
	if opts.Open == "" || opts.Close == "" {
		opts.Open, opts.Close = OpenTag, CloseTag
	}
	return &Parser{openID: openID, closeID: closeID, opts: opts, inThink: opts.StartInReasoning, trimLead: opts.StartInReasoning && opts.TrimSpace}
}

// InReasoning reports whether the parser is inside a think block; after
// the last token it tells that the close tag never came.
func (p *Parser) InReasoning() bool { return p.inThink }

// Push takes one generated token: its id and its decoded text (from a
// tokenizer.StreamDecoder, so possibly "" while a character is incomplete).
// It returns the segments that are now certain, merged by kind, in order.
func (p *Parser) Push(id int32, text string) []Segment {
	p.out = nil
	switch {
	case id >= 0 && id == p.openID && !p.inThink:
		p.emitPending()
		if p.late {
			p.emit(text)
			break
		}
		p.tag(true)
	case id >= 0 && id == p.closeID:
		p.emitPending()
		p.tag(false) // a stray close tag outside a block is dropped
	default:
		p.feed(text) // a <think> token inside a block is text, as in feed
	}
	return p.out
}

// Flush ends the stream: held-back text is emitted as what it is (a
// partial tag at the end is just text). Call InReasoning before Flush's
// result is used to tell an unfinished think block.
func (p *Parser) Flush() []Segment {
	p.out = nil
	p.emitPending()
	if !p.opts.TrimSpace || !p.inThink {
		p.emit(p.space)
	}
	p.space = ""
	return p.out
}

// feed scans text for the tag expected in the current state.
func (p *Parser) feed(text string) {
	s := p.pending + text
	p.pending = ""
	for s != "" {
		want := p.opts.Open
		if p.inThink {
			want = p.opts.Close
		}
		i := -1
		if p.inThink || !p.late {
			i = strings.Index(s, want)
		}
		stray := -1
		if !p.inThink {
			stray = strings.Index(s, p.opts.Close)
		}
		if stray >= 0 && (i < 0 || stray < i) {
			p.emit(s[:stray])
			s = s[stray+len(p.opts.Close):]
			continue
		}
		if i >= 0 {
			p.emit(s[:i])
			if p.late && !p.inThink {
				// The text before the open tag began the answer.
				p.emit(want)
				s = s[i+len(want):]
				continue
			}
			p.tag(!p.inThink)
			s = s[i+len(want):]
			continue
		}
		// No whole tag: hold back a suffix that could start one.
		k := partialTagAt(s, p.inThink || p.late, p.opts.Open, p.opts.Close)
		p.emit(s[:k])
		p.pending = s[k:]
		return
	}
}

// partialTagAt returns the index of the longest suffix of s that is a
// proper prefix of a tag the parser looks for: both, or with closeOnly
// (inside a block, or once no block can open) only the close tag.
func partialTagAt(s string, closeOnly bool, open, close string) int {
	tags := []string{open, close}
	if closeOnly {
		tags = tags[1:]
	}
	for i := max(0, len(s)-max(len(open), len(close))+1); i < len(s); i++ {
		if s[i] != open[0] && s[i] != close[0] {
			continue
		}
		for _, t := range tags {
			if strings.HasPrefix(t, s[i:]) {
				return i
			}
		}
	}
	return len(s)
}

// tag switches state at an open (true) or close tag.
func (p *Parser) tag(open bool) {
	if open == p.inThink {
		return
	}
	if !open && !p.opts.TrimSpace {
		p.emit(p.space)
	}
	p.space = ""
	p.inThink = open
	p.late = p.late || !open
	p.trimLead = p.opts.TrimSpace
}

func (p *Parser) emitPending() {
	s := p.pending
	p.pending = ""
	p.emit(s)
}

// emit appends text of the current kind, applying TrimSpace.
func (p *Parser) emit(s string) {
	if s == "" {
		return
	}
	if p.trimLead {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return
		}
		p.trimLead = false
	}
	kind := Content
	if !p.inThink && strings.TrimSpace(s) != "" {
		p.late = true
	}
	if p.inThink {
		kind = Reasoning
		if p.opts.TrimSpace {
			// Hold trailing white space back until more text shows it is
			// not the end of the block.
			t := strings.TrimRightFunc(s, unicode.IsSpace)
			if t == "" {
				p.space += s
				return
			}
			s, p.space = p.space+t, s[len(t):]
		}
	}
	if n := len(p.out); n > 0 && p.out[n-1].Kind == kind {
		p.out[n-1].Text += s
		return
	}
	p.out = append(p.out, Segment{Kind: kind, Text: s})
}
