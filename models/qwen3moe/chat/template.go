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
	// listed in the system turn as XML.
	Tools []json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// ready for generation.
	AddGenerationPrompt bool
}

// The template's markers.
const (
	imStart, imEnd = "<|im_start|>", "<|im_end|>"
	// DefaultSystem is the system text the template writes when there are
	// tools and no system message.
	DefaultSystem = "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."
	toolsHead     = "\n\n# Tools\n\nYou have access to the following tools:\n\n<tools>"
	toolsTail     = "\n</tools>\n\nIf you choose to call a tool ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nvalue_2\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: the tool calling block MUST begin with an opening <tool_call> tag and end with a closing </tool_call> tag.\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with Qwen3-Coder's chat template, byte for
// byte as jinja2 renders the published template with the inputs llama.cpp
// gives it (see the package documentation for its rules). RenderSpans also
// says which bytes came from the caller.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, the parts of
// the tool definitions, and the names and arguments of tool calls.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	loop := msgs
	system, hasSystem := "", msgs[0].Role == "system"
	if hasSystem {
		system, loop = msgs[0].Content, msgs[1:]
	}
	if hasSystem {
		b.WriteString(imStart + "system\n")
		b.Literal(system)
	} else if len(opts.Tools) > 0 {
		b.WriteString(imStart + "system\n" + DefaultSystem)
	}
	if len(opts.Tools) > 0 {
		b.WriteString(toolsHead)
		for i, raw := range opts.Tools {
			if err := writeTool(&b, raw); err != nil {
				return "", nil, fmt.Errorf("chat: Tools[%d]: %w", i, err)
			}
		}
		b.WriteString(toolsTail)
	}
	if hasSystem || len(opts.Tools) > 0 {
		b.WriteString(imEnd + "\n")
	}
	offset := len(msgs) - len(loop)
	for i, m := range loop {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			b.WriteString(imStart + "assistant")
			if c := chatfmt.Strip(m.Content); c != "" {
				b.WriteString("\n")
				b.Literal(c)
				b.WriteString("\n")
			}
			for j, c := range m.ToolCalls {
				if err := writeCall(&b, c); err != nil {
					return "", nil, fmt.Errorf("chat: message %d: tool call %d: %w", i+offset, j, err)
				}
			}
			b.WriteString(imEnd + "\n")
		case m.Role == "tool":
			// loop.previtem is undefined for the first message of the loop:
			// a tool result there gets no user header.
			if i > 0 && loop[i-1].Role != "tool" {
				b.WriteString(imStart + "user\n")
			}
			b.WriteString("<tool_response>\n")
			b.Literal(m.Content)
			b.WriteString("\n</tool_response>\n")
			if i == len(loop)-1 || loop[i+1].Role != "tool" {
				b.WriteString(imEnd + "\n")
			}
		default: // user, system, assistant
			b.WriteString(imStart + m.Role + "\n")
			b.Literal(m.Content)
			b.WriteString(imEnd + "\n")
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(imStart + "assistant\n")
	}
	return b.String(), b.Spans(), nil
}

// writeTool writes one tool as the template lists it, after llama.cpp has
// rebuilt it from its name, description ("" when absent) and parameters
// ({} when absent): the description and the parameters' descriptions
// trimmed, each parameter's name, type and other keys, then the keys of
// the parameters schema besides its type and properties.
func writeTool(b *chatfmt.Builder, raw json.RawMessage) error {
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return err
	}
	f := v
	if fn, ok := v.Get("function"); ok {
		f = fn
	}
	name, ok := f.Get("name")
	if !ok || name.Kind != chatfmt.String || name.Str == "" {
		return fmt.Errorf("the function has no name")
	}
	desc, ok := f.Get("description")
	switch {
	case !ok:
		desc = chatfmt.Value{Kind: chatfmt.String}
	case desc.Kind != chatfmt.String:
		return fmt.Errorf("%s: the description is not a string", name.Str)
	}
	params, ok := f.Get("parameters")
	if !ok {
		params = chatfmt.Value{Kind: chatfmt.Object}
	}
	b.WriteString("\n<function>\n<name>")
	b.Literal(name.Str)
	b.WriteString("</name>\n<description>")
	b.Literal(chatfmt.Strip(desc.Str))
	b.WriteString("</description>\n<parameters>")
	if props, ok := params.Get("properties"); ok && props.Kind == chatfmt.Object {
		for i, pname := range props.Keys {
			field := props.Items[i]
			b.WriteString("\n<parameter>\n<name>")
			b.Literal(pname)
			b.WriteString("</name>")
			if t, ok := field.Get("type"); ok {
				b.WriteString("\n<type>")
				b.Literal(chatfmt.PyStr(t))
				b.WriteString("</type>")
			}
			if d, ok := field.Get("description"); ok {
				b.WriteString("\n<description>")
				b.Literal(chatfmt.Strip(chatfmt.PyStr(d)))
				b.WriteString("</description>")
			}
			extraKeys(b, field, "name", "type", "description")
			b.WriteString("\n</parameter>")
		}
	}
	extraKeys(b, params, "type", "properties")
	b.WriteString("\n</parameters>\n</function>")
	return nil
}

// extraKeys is the template's render_extra_keys: each key of an object
// but the handled ones as <key>value</key>, a container as JSON, anything
// else as Python prints it.
func extraKeys(b *chatfmt.Builder, v chatfmt.Value, handled ...string) {
	if v.Kind != chatfmt.Object {
		return
	}
	for i, k := range v.Keys {
		if contains(handled, k) {
			continue
		}
		x := v.Items[i]
		text := chatfmt.PyStr(x)
		if x.Kind == chatfmt.Object || x.Kind == chatfmt.Array {
			var sb strings.Builder
			x.Dump(&sb, chatfmt.Python, -1)
			text = sb.String()
		}
		b.WriteString("\n<")
		b.Literal(k)
		b.WriteString(">")
		b.Literal(text)
		b.WriteString("</")
		b.Literal(k)
		b.WriteString(">")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeCall writes a tool call as Qwen3-Coder writes one: each argument a
// <parameter=NAME> block, a string as it is, an object or a list as JSON,
// anything else as Python prints it (True, None). Arguments given as a
// string of JSON are parsed first, as llama.cpp does.
func writeCall(b *chatfmt.Builder, c engine.ToolCall) error {
	args := chatfmt.Value{Kind: chatfmt.Object}
	if strings.TrimSpace(string(c.Arguments)) != "" {
		v, err := chatfmt.Parse(c.Arguments)
		if err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		if v.Kind == chatfmt.String {
			if v, err = chatfmt.Parse([]byte(v.Str)); err != nil {
				return fmt.Errorf("arguments: a string that is not JSON: %w", err)
			}
		}
		if v.Kind != chatfmt.Object {
			return fmt.Errorf("arguments: not a JSON object")
		}
		args = v
	}
	b.WriteString("\n<tool_call>\n<function=")
	b.Literal(c.Name)
	b.WriteString(">\n")
	for i, k := range args.Keys {
		x := args.Items[i]
		b.WriteString("<parameter=")
		b.Literal(k)
		b.WriteString(">\n")
		if x.Kind == chatfmt.Object || x.Kind == chatfmt.Array {
			var sb strings.Builder
			x.Dump(&sb, chatfmt.Python, -1)
			b.Literal(sb.String())
		} else {
			b.Literal(chatfmt.PyStr(x))
		}
		b.WriteString("\n</parameter>\n")
	}
	b.WriteString("</function>\n</tool_call>")
	return nil
}
