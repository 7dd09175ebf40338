package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
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
}

// DefaultSystem is the system prompt the template writes when the
// conversation has none.
const DefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

const (
	imStart, imEnd = "<|im_start|>", "<|im_end|>\n"
	toolsHead      = "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsTail      = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" + imEnd
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with Qwen2.5's chat template, byte for byte
// as Hugging Face transformers renders the published template (see the
// package documentation for its rules). The text is meant to be tokenized
// with special tokens parsed; RenderSpans also says which bytes came from
// the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, and the names and arguments of tool calls.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	b.WriteString(imStart + "system\n")
	if msgs[0].Role == "system" {
		b.Literal(msgs[0].Content)
	} else {
		b.WriteString(DefaultSystem)
	}
	if len(opts.Tools) > 0 {
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
	} else {
		b.WriteString(imEnd)
	}

	for i, m := range msgs {
		switch {
		case m.Role == "system" && i == 0:
		case m.Role == "user" || m.Role == "system" || m.Role == "assistant" && len(m.ToolCalls) == 0:
			b.WriteString(imStart + m.Role + "\n")
			b.Literal(m.Content)
			b.WriteString(imEnd)
		case m.Role == "assistant":
			b.WriteString(imStart + "assistant")
			if m.Content != "" {
				b.WriteString("\n")
				b.Literal(m.Content)
			}
			for j, c := range m.ToolCalls {
				args, err := argumentsJSON(c.Arguments)
				if err != nil {
					return "", nil, fmt.Errorf("chat: message %d: tool call %d: %w", i, j, err)
				}
				b.WriteString("\n<tool_call>\n{\"name\": \"")
				b.Literal(c.Name)
				b.WriteString("\", \"arguments\": ")
				b.Literal(args)
				b.WriteString("}\n</tool_call>")
			}
			b.WriteString(imEnd)
		case m.Role == "tool":
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
	}
	return b.String(), b.Spans(), nil
}

// argumentsJSON prints a call's arguments as the template's tojson does
// ({} when empty).
func argumentsJSON(raw json.RawMessage) (string, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return "{}", nil
	}
	s, err := chatfmt.Dumps(raw, chatfmt.Python, -1)
	if err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	return s, nil
}

// NewToolParser returns the parser of Qwen2.5's tool calls, which are the
// Hermes form package toolcall reads:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// openID and closeID are the ids of <tool_call> and </tool_call> (151657
// and 151658 in Qwen's vocabulary; -1 to match the tags as text only). To
// force a call, constrain the answer with grammar.ToolCalls, which writes
// exactly this form.
func NewToolParser(openID, closeID int32) *toolcall.Parser {
	return toolcall.NewParser(openID, closeID)
}
