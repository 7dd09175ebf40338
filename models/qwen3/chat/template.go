package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Options are the template's inputs besides the messages.
type Options struct {
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}),
	// listed in the system turn one per line, each printed as JSON.
	Tools []json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// ready for generation.
	AddGenerationPrompt bool
	// EnableThinking is the template's enable_thinking. nil or true: the
	// model decides and starts its answer with <think>…</think>. false:
	// the generation prompt ends with an empty think block, which tells the
	// model to answer directly (Qwen3's non-thinking mode).
	EnableThinking *bool
}

// Think is a convenience for Options.EnableThinking.
func Think(on bool) *bool { return &on }

const (
	imStart, imEnd = "<|im_start|>", "<|im_end|>\n"
	toolsHead      = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsTail      = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" + imEnd
	emptyThink     = "<think>\n\n</think>\n\n"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with Qwen3's chat template, byte for byte as
// Hugging Face transformers renders the published template (see the
// package documentation for its rules). The text is meant to be tokenized
// with special tokens parsed; RenderSpans also says which bytes came from
// the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, reasoning, tool
// definitions, and the names and arguments of tool calls.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	first := msgs[0]
	if len(opts.Tools) > 0 {
		b.WriteString(imStart + "system\n")
		if first.Role == "system" {
			b.Literal(first.Content)
			b.WriteString("\n\n")
		}
		b.WriteString(toolsHead)
		for i, t := range opts.Tools {
			s, err := chatfmt.Dumps(t, chatfmt.Python, -1)
			if err != nil {
				return "", nil, fmt.Errorf("chat: Tools[%d]: %w", i, err)
			}
			b.WriteString("\n")
			b.Literal(s)
		}
		b.WriteString(toolsTail)
	} else if first.Role == "system" {
		b.WriteString(imStart + "system\n")
		b.Literal(first.Content)
		b.WriteString(imEnd)
	}

	// The last user turn that is not a wrapped tool result: reasoning is
	// shown only for the assistant turns after it.
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		c := msgs[i].Content
		if msgs[i].Role == "user" && !(strings.HasPrefix(c, "<tool_response>") && strings.HasSuffix(c, "</tool_response>")) {
			lastQuery = i
			break
		}
	}

	for i, m := range msgs {
		switch m.Role {
		case "user", "system":
			if m.Role == "system" && i == 0 {
				continue
			}
			b.WriteString(imStart + m.Role + "\n")
			b.Literal(m.Content)
			b.WriteString(imEnd)
		case "assistant":
			content, reasoning := SplitReasoning(m)
			b.WriteString(imStart + "assistant\n")
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<think>\n")
				b.Literal(strings.Trim(reasoning, "\n"))
				b.WriteString("\n</think>\n\n")
				b.Literal(strings.TrimLeft(content, "\n"))
			} else {
				b.Literal(content)
			}
			for j, c := range m.ToolCalls {
				if j > 0 || content != "" {
					b.WriteString("\n")
				}
				args, err := argumentsText(c.Arguments)
				if err != nil {
					return "", nil, fmt.Errorf("chat: message %d: tool call %d: %w", i, j, err)
				}
				b.WriteString("<tool_call>\n{\"name\": \"")
				b.Literal(c.Name)
				b.WriteString("\", \"arguments\": ")
				b.Literal(args)
				b.WriteString("}\n</tool_call>")
			}
			b.WriteString(imEnd)
		case "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString(imStart + "user")
			}
			b.WriteString("\n<tool_response>\n")
			b.Literal(m.Content)
			b.WriteString("\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString(imEnd)
			}
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(imStart + "assistant\n")
		if opts.EnableThinking != nil && !*opts.EnableThinking {
			b.WriteString(emptyThink)
		}
	}
	return b.String(), b.Spans(), nil
}

// SplitReasoning returns an assistant message's answer and reasoning as the
// template sees them: ReasoningContent when it is set (the content as is),
// else the text before the last </think> of the content (after its last
// <think>, newlines trimmed at the joins) and the content after it.
func SplitReasoning(m engine.Message) (content, reasoning string) {
	content = m.Content
	if m.ReasoningContent != "" {
		return content, m.ReasoningContent
	}
	if !strings.Contains(content, CloseTag) {
		return content, ""
	}
	parts := strings.Split(content, CloseTag)
	before := strings.Split(strings.TrimRight(parts[0], "\n"), OpenTag)
	return strings.TrimLeft(parts[len(parts)-1], "\n"), strings.TrimLeft(before[len(before)-1], "\n")
}

// argumentsText prints a call's arguments as the template does: a JSON
// string as its text, anything else as tojson prints the value ({} when
// empty).
func argumentsText(raw json.RawMessage) (string, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return "{}", nil
	}
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if v.Kind == chatfmt.String {
		return v.Str, nil
	}
	var sb strings.Builder
	v.Dump(&sb, chatfmt.Python, -1)
	return sb.String(), nil
}
