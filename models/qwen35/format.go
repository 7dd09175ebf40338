package qwen35

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Format is a Qwen3.5 file's chat format: its own template through the
// Jinja engine (family.FileFormat), which renders Qwen3.5's published
// template byte for byte, tools included, with the Qwen3-Coder XML calls
// that template writes read by package qwen3moe's syntax. A file without a
// template gets the one published with Qwen/Qwen3.5-4B (Qwen3.5-4B.jinja,
// as llama.cpp keeps it in models/templates), so that it has tools too;
// FormatSpec, hand-written, is the fallback where a file's template does
// not parse.
func Format(f *gguf.File) (engine.Format, error) {
	if src, _ := f.String("tokenizer.chat_template"); src == "" {
		return family.TemplateFormat(f, publishedTemplate)
	}
	return family.FileFormat(f, FormatSpec), nil
}

// publishedTemplate is Qwen3.5's chat template as Qwen published it.
//
//go:embed Qwen3.5-4B.jinja
var publishedTemplate string

// FormatSpec is Qwen3.5's hand-written chat format: Render's ChatML, reasoning in
// <think>…</think> that the generation prompt has already opened when
// thinking is on, <|im_end|> ending a turn. Qwen3.5's tool calls are
// Qwen3-Coder's XML form (<tool_call><function=name><parameter=…>), which
// package toolcall does not read yet: tool definitions are refused (an
// error naming the architecture), while earlier calls and tool results in
// a conversation are rendered.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return Render(msgs, Options{AddGenerationPrompt: true, EnableThinking: opts.Thinking, NoQueryOK: true})
	},
	EndOfTurn:        []string{"<|im_end|>"},
	Reasoning:        true,
	ReasoningStarted: func(thinking *bool) bool { return thinking == nil || *thinking },
}

// Options are Render's options, the template's variables.
type Options struct {
	// AddGenerationPrompt ends the text with the assistant's header and
	// the opening of its reasoning.
	AddGenerationPrompt bool
	// EnableThinking false ends the generation prompt with an empty
	// reasoning block, which tells Qwen3.5 to answer without reasoning;
	// nil or true leaves <think> open.
	EnableThinking *bool
	// NoQueryOK renders a conversation without a user query (only a
	// system message, say) where the template raises an error. The
	// format sets it: the engine renders a conversation's system message
	// alone to find where a recurrent cache keeps its state for sessions
	// that share the system prompt.
	NoQueryOK bool
}

// Errors the template raises.
var (
	errNoQuery     = errors.New("qwen35: no user query found in messages")
	errLateSystem  = errors.New("qwen35: a system message must be at the beginning")
	errUnknownRole = errors.New("qwen35: unexpected message role")
)

// Render writes msgs as Qwen3.5's chat template does (the one published
// with Qwen/Qwen3.5-4B, as llama.cpp keeps it in models/templates), byte for
// byte as Hugging Face transformers renders it for conversations without
// tool definitions (checked against jinja2: testdata/render.py), and
// returns the byte ranges that came from the caller. Where it differs from
// Qwen3's template:
//
//   - every content is trimmed of white space at both ends;
//   - a system message stands only first (elsewhere it is an error), and a
//     conversation needs a user message that is not a tool result (unless
//     NoQueryOK);
//   - the generation prompt opens the reasoning itself ("<think>\n"), or
//     with thinking off ends with an empty block, as Qwen3's does;
//   - each assistant turn after the last user query is written with its
//     reasoning block, even an empty one ("<think>\n\n</think>\n\n"), the
//     earlier ones with their answer only; the reasoning is
//     ReasoningContent, or what the content holds before its first
//     </think> (after the last <think> there), trimmed;
//   - tool calls are written as <tool_call><function=NAME> blocks with one
//     <parameter=KEY> block per argument (objects and arrays as JSON,
//     other values as Python prints them).
func Render(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n")
		b.Literal(chatfmt.Strip(msgs[0].Content))
		b.WriteString("<|im_end|>\n")
	}
	lastQuery := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if c := chatfmt.Strip(msgs[i].Content); msgs[i].Role == "user" &&
			!(strings.HasPrefix(c, "<tool_response>") && strings.HasSuffix(c, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	if lastQuery < 0 && !opts.NoQueryOK {
		return "", nil, errNoQuery
	}
	for i, m := range msgs {
		content := chatfmt.Strip(m.Content)
		switch m.Role {
		case "system":
			if i != 0 {
				return "", nil, fmt.Errorf("%w (message %d)", errLateSystem, i)
			}
		case "user":
			b.WriteString("<|im_start|>user\n")
			b.Literal(content)
			b.WriteString("<|im_end|>\n")
		case "assistant":
			reasoning := m.ReasoningContent
			if reasoning == "" {
				if before, _, ok := strings.Cut(content, "</think>"); ok {
					before = strings.TrimRight(before, "\n")
					if k := strings.LastIndex(before, "<think>"); k >= 0 {
						before = before[k+len("<think>"):]
					}
					reasoning = strings.TrimLeft(before, "\n")
					content = strings.TrimLeft(content[strings.LastIndex(content, "</think>")+len("</think>"):], "\n")
				}
			}
			reasoning = chatfmt.Strip(reasoning)
			if i > lastQuery {
				b.WriteString("<|im_start|>assistant\n<think>\n")
				b.Literal(reasoning)
				b.WriteString("\n</think>\n\n")
			} else {
				b.WriteString("<|im_start|>assistant\n")
			}
			b.Literal(content)
			for k, c := range m.ToolCalls {
				switch {
				case k > 0:
					b.WriteString("\n<tool_call>\n<function=")
				case chatfmt.Strip(content) != "":
					b.WriteString("\n\n<tool_call>\n<function=")
				default:
					b.WriteString("<tool_call>\n<function=")
				}
				b.Literal(c.Name)
				b.WriteString(">\n")
				if err := writeArguments(&b, c.Arguments); err != nil {
					return "", nil, fmt.Errorf("qwen35: message %d, tool call %d (%s): %w", i, k, c.Name, err)
				}
				b.WriteString("</function>\n</tool_call>")
			}
			b.WriteString("<|im_end|>\n")
		case "tool":
			if i > 0 && msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n")
			b.Literal(content)
			b.WriteString("\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		default:
			return "", nil, fmt.Errorf("%w %q (message %d)", errUnknownRole, m.Role, i)
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if opts.EnableThinking != nil && !*opts.EnableThinking {
			b.WriteString("<think>\n\n</think>\n\n")
		} else {
			b.WriteString("<think>\n")
		}
	}
	return b.String(), b.Spans(), nil
}

// writeArguments writes a call's arguments as the template does: for each
// key of the object, in order, <parameter=KEY>, the value (an object or
// array as tojson prints it, a string as it is, another value as Python's
// str), </parameter>.
func writeArguments(b *chatfmt.Builder, raw []byte) error {
	if len(raw) == 0 {
		return nil // no arguments: the template's "is defined" fails
	}
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	if v.Kind != chatfmt.Object {
		return fmt.Errorf("arguments are not a JSON object")
	}
	for i, key := range v.Keys {
		b.WriteString("<parameter=")
		b.Literal(key)
		b.WriteString(">\n")
		var s strings.Builder
		switch x := v.Items[i]; x.Kind {
		case chatfmt.String:
			s.WriteString(x.Str)
		case chatfmt.Bool:
			s.WriteString(map[bool]string{true: "True", false: "False"}[x.Bool])
		case chatfmt.Null:
			s.WriteString("None")
		default: // numbers, objects and arrays: as json.dumps prints them
			x.Dump(&s, chatfmt.Python, -1)
		}
		b.Literal(s.String())
		b.WriteString("\n</parameter>\n")
	}
	return nil
}
