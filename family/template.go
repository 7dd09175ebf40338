package family

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/internal/jinja"
)

// A file's own chat template is the default format of any file whose
// template the family's hand-written format does not know: TemplateSpec
// renders it with the Jinja engine (package internal/jinja, which renders
// as transformers' apply_chat_template does) and reads the end-of-turn,
// reasoning and tool-call markers out of the template by rendering probe
// conversations (markers.go). A family keeps its hand-written format, with
// its verified parser and grammar, for the templates it was checked
// against (KnownTemplate).

// TemplateSHA256 returns the SHA-256 of a template's text, in hex, the
// form a family lists the templates its format knows in.
func TemplateSHA256(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:])
}

// KnownTemplate reports whether the file's chat template is one of those
// a hand-written format renders (by SHA-256 of the text; white space at
// the end does not count), or the file has none.
func KnownTemplate(f *gguf.File, sha256s ...string) bool {
	src, _ := f.String("tokenizer.chat_template")
	if src == "" {
		return true
	}
	return knownSource(src, sha256s)
}

func knownSource(src string, sha256s []string) bool {
	for _, s := range []string{src, strings.TrimRight(src, " \t\r\n"), strings.TrimRight(src, " \t\r\n") + "\n"} {
		sum := TemplateSHA256(s)
		for _, k := range sha256s {
			if k == sum {
				return true
			}
		}
	}
	return false
}

// FileFormat returns the format of file f for a family: the hand-written
// one (known) when the file's template is one of sha256s or the file has
// none, otherwise the file's own template through the Jinja engine. When
// the engine cannot parse the file's template, the hand-written format is
// used and a warning logged.
func FileFormat(f *gguf.File, known FormatSpec, sha256s ...string) engine.Format {
	src, _ := f.String("tokenizer.chat_template")
	if src == "" || knownSource(src, sha256s) {
		return NewFormat(f, known)
	}
	spec, err := TemplateSpec(f, src)
	if err != nil {
		slog.Warn("family: the file's chat template does not parse; using the family's own format", "err", err)
		return NewFormat(f, known)
	}
	return NewFormat(f, spec)
}

// TemplateFormat returns a format whose prompts come from the Jinja
// template src (engine.WithChatTemplate, or a file's template).
func TemplateFormat(f *gguf.File, src string) (*Format, error) {
	spec, err := TemplateSpec(f, src)
	if err != nil {
		return nil, err
	}
	return NewFormat(f, spec), nil
}

// TemplateSpec returns the format spec of the Jinja chat template src
// over file f (whose vocabulary gives bos_token and eos_token): prompts
// rendered by the engine with messages, tools, add_generation_prompt, the
// thinking switch (enable_thinking) and PromptOptions.TemplateKwargs; the
// markers read from the template (see Markers).
func TemplateSpec(f *gguf.File, src string) (FormatSpec, error) {
	return TemplateSpecWith(f, src, TemplateOptions{})
}

// TemplateOptions are a family's adjustments to how a file's template is
// rendered, for what llama.cpp's handler of that family's templates does
// to the messages before rendering them.
type TemplateOptions struct {
	// ReasoningField names a message field that carries an earlier
	// answer's reasoning besides reasoning_content: LFM2.5's and gpt-oss's
	// templates read message.thinking, which llama.cpp copies from
	// reasoning_content (common/parsers/lfm2.cpp). "" for none.
	ReasoningField string
}

// TemplateSpecWith is TemplateSpec with a family's adjustments.
func TemplateSpecWith(f *gguf.File, src string, o TemplateOptions) (FormatSpec, error) {
	t, err := jinja.Parse(src)
	if err != nil {
		return FormatSpec{}, fmt.Errorf("family: the chat template: %w", err)
	}
	tt := &templateText{t: t, src: src, special: specialTokens(f), now: time.Now, reasoningField: o.ReasoningField}
	m := DetectMarkers(tt)
	tt.stringArgs = m.StringArguments
	if tt.reasoningField == "" {
		tt.reasoningField = m.ReasoningField
	}
	if f != nil {
		// A file may carry a variant for requests with tools
		// (tokenizer.chat_template.tool_use: Hermes 2 Pro and 3, Command-R),
		// which transformers and llama.cpp render those with.
		if tsrc, err := f.String("tokenizer.chat_template.tool_use"); err == nil && tsrc != "" && tsrc != src {
			tu, err := jinja.Parse(tsrc)
			if err != nil {
				return FormatSpec{}, fmt.Errorf("family: the tool_use chat template: %w", err)
			}
			tt.tools = &templateText{t: tu, src: tsrc, special: tt.special, now: tt.now, reasoningField: tt.reasoningField}
			tm := DetectMarkers(tt.tools)
			tt.tools.stringArgs = tm.StringArguments
			m.Syntax, m.ToolsShown, m.CallsShown = tm.Syntax, tm.ToolsShown, tm.CallsShown
		}
	}
	spec := FormatSpec{
		Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
			return tt.render(msgs, opts, m)
		},
		EndOfTurn: m.EndOfTurn,
		Template:  m,
	}
	if m.ReasoningOpen != "" {
		spec.Reasoning = true
		spec.ReasoningTags = [2]string{m.ReasoningOpen, m.ReasoningClose}
		spec.ReasoningStarted = m.reasoningStarted
	}
	switch {
	case m.Syntax == nil:
		spec.Tools = GenericJSON
	case m.Syntax.Syntax != nil:
		spec.Tools = m.Syntax.Syntax
	default:
		spec.Tools = unparsedSyntax{m.Syntax.Name}
	}
	return spec, nil
}

// templateText renders a parsed template with the variables
// apply_chat_template passes.
type templateText struct {
	t       *jinja.Template
	src     string
	tools   *templateText     // the variant for requests with tools, if the file has one
	special map[string]string // bos_token, eos_token
	now     func() time.Time
	// reasoningField is TemplateOptions.ReasoningField.
	reasoningField string
	// stringArgs is Markers.StringArguments: calls' arguments are passed
	// as a string of JSON.
	stringArgs bool
}

// vars builds the template's variables for msgs.
func (tt *templateText) vars(msgs []jinja.Value, tools []json.RawMessage, addGen bool, thinking *bool, kwargs map[string]json.RawMessage) (*jinja.Dict, error) {
	v := jinja.NewDict()
	v.Set("messages", jinja.ListOf(msgs...))
	if len(tools) > 0 {
		ts := make([]jinja.Value, len(tools))
		for i, raw := range tools {
			x, err := jinja.FromJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("family: tool %d: %w", i, err)
			}
			ts[i] = x
		}
		v.Set("tools", jinja.ListOf(ts...))
	} // without tools, tools is undefined (as llama.cpp leaves it): templates loop over it unguarded
	v.Set("add_generation_prompt", jinja.Bool(addGen))
	for k, s := range tt.special {
		v.Set(k, jinja.String(s))
	}
	if thinking != nil {
		v.Set("enable_thinking", jinja.Bool(*thinking))
	}
	for k, raw := range kwargs {
		if k == "enable_thinking" && thinking != nil {
			continue
		}
		x, err := jinja.FromJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("family: chat_template_kwargs.%s: %w", k, err)
		}
		v.Set(k, x)
	}
	return v, nil
}

func (tt *templateText) renderValues(msgs []jinja.Value, tools []json.RawMessage, addGen bool, thinking *bool, kwargs map[string]json.RawMessage) (string, error) {
	vars, err := tt.vars(msgs, tools, addGen, thinking, kwargs)
	if err != nil {
		return "", err
	}
	out, err := tt.t.Render(context.Background(), vars, jinja.Options{Now: tt.now})
	if err != nil {
		return "", fmt.Errorf("family: %w: %w", engine.ErrTemplate, err)
	}
	return out, nil
}

// render renders a conversation for generation and marks the callers'
// texts in it (see literalSpans).
func (tt *templateText) render(msgs []engine.Message, opts engine.PromptOptions, m *Markers) (string, [][2]int, error) {
	if len(msgs) == 0 {
		return "", nil, fmt.Errorf("family: no messages to render")
	}
	if len(opts.Tools) > 0 && m.Syntax != nil && m.Syntax.Syntax == nil {
		return "", nil, fmt.Errorf("family: the chat template writes tool calls as %s, which smolgo does not parse yet", m.Syntax.Name)
	}
	values := make([]jinja.Value, len(msgs))
	for i, msg := range msgs {
		values[i] = tt.messageValue(msg)
	}
	tools := opts.Tools
	if len(tools) > 0 && !m.ToolsShown {
		// The template shows no tools: describe them in a system turn, as
		// llama.cpp's generic format does.
		turns, err := genericValues(msgs, tools)
		if err != nil {
			return "", nil, err
		}
		values, tools = turns, nil
	}
	with := tt
	if tt.tools != nil && len(opts.Tools) > 0 {
		with = tt.tools
	}
	text, err := with.renderValues(values, tools, true, opts.Thinking, opts.TemplateKwargs)
	if err != nil {
		return "", nil, err
	}
	return text, literalSpans(text, msgs), nil
}

// messageValue is msg as Hugging Face users pass it: tool calls as
// {"id", "type": "function", "function": {"name", "arguments": object}},
// optional fields only when set; the reasoning also under the template's
// reasoningField, if it has one.
func (tt *templateText) messageValue(msg engine.Message) jinja.Value {
	d := jinja.NewDict()
	d.Set("role", jinja.String(msg.Role))
	d.Set("content", jinja.String(msg.Content))
	if msg.ReasoningContent != "" {
		d.Set("reasoning_content", jinja.String(msg.ReasoningContent))
		if tt.reasoningField != "" {
			d.Set(tt.reasoningField, jinja.String(msg.ReasoningContent))
		}
	}
	if len(msg.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(msg.ToolCalls))
		for i, c := range msg.ToolCalls {
			fn := jinja.NewDict()
			fn.Set("name", jinja.String(c.Name))
			args := jinja.DictValue(jinja.NewDict())
			switch {
			case tt.stringArgs && len(c.Arguments) > 0:
				args = jinja.String(string(c.Arguments))
			case tt.stringArgs:
				args = jinja.String("{}")
			case len(c.Arguments) > 0:
				if v, err := jinja.FromJSON(c.Arguments); err == nil {
					args = v
				} else {
					args = jinja.String(string(c.Arguments))
				}
			}
			fn.Set("arguments", args)
			call := jinja.NewDict()
			if c.ID != "" {
				call.Set("id", jinja.String(c.ID))
			}
			call.Set("type", jinja.String("function"))
			call.Set("function", jinja.DictValue(fn))
			calls[i] = jinja.DictValue(call)
		}
		d.Set("tool_calls", jinja.ListOf(calls...))
	}
	if msg.ToolCallID != "" {
		d.Set("tool_call_id", jinja.String(msg.ToolCallID))
	}
	if msg.Name != "" {
		d.Set("name", jinja.String(msg.Name))
	}
	return jinja.DictValue(d)
}

// literalSpans finds the callers' texts (message contents and reasoning)
// in the render, in order, so that they are tokenized as plain text and
// cannot forge the template's markers. A text the template changed (cut,
// trimmed away) is found by its trimmed form or not at all; one not found
// is tokenized with the template's text.
func literalSpans(text string, msgs []engine.Message) [][2]int {
	var spans [][2]int
	at := 0
	mark := func(s string) {
		for _, c := range []string{s, strings.TrimSpace(s)} {
			if c == "" {
				return
			}
			if i := strings.Index(text[at:], c); i >= 0 {
				spans = append(spans, [2]int{at + i, at + i + len(c)})
				at += i + len(c)
				return
			}
		}
	}
	for _, m := range msgs {
		mark(m.ReasoningContent)
		mark(m.Content)
	}
	return spans
}

// specialTokens reads the bos_token and eos_token texts from the file's
// vocabulary, as transformers passes them to the template.
func specialTokens(f *gguf.File) map[string]string {
	out := map[string]string{"bos_token": "", "eos_token": ""}
	if f == nil {
		return out
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return out
	}
	for key, name := range map[string]string{"tokenizer.ggml.bos_token_id": "bos_token", "tokenizer.ggml.eos_token_id": "eos_token"} {
		if id, err := f.Uint32(key); err == nil && int(id) < len(tokens) {
			out[name] = tokens[id]
		}
	}
	return out
}

// genericValues is msgs after llama.cpp's generic tool polyfill (tools
// described in the system turn, calls and results as JSON), as template
// messages.
func genericValues(msgs []engine.Message, tools []json.RawMessage) ([]jinja.Value, error) {
	turns, err := chatfmt.GenericTurns(msgs, tools, "")
	if err != nil {
		return nil, err
	}
	out := make([]jinja.Value, len(turns))
	for i, t := range turns {
		var b strings.Builder
		for _, p := range t.Pieces {
			b.WriteString(p.Text)
		}
		d := jinja.NewDict()
		d.Set("role", jinja.String(t.Role))
		d.Set("content", jinja.String(b.String()))
		out[i] = jinja.DictValue(d)
	}
	return out, nil
}
