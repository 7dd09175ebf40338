package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Template says which of the two published templates to render.
type Template int

const (
	// Phi4Mini is microsoft/Phi-4-mini-instruct's template: turns
	// <|role|>…<|end|> with nothing between them, tools in the system
	// turn between <|tool|> and <|/tool|>.
	Phi4Mini Template = iota
	// Phi35Mini is microsoft/Phi-3.5-mini-instruct's template: turns
	// <|role|>\n…<|end|>\n, no tools (llama.cpp's generic JSON format
	// stands in for them).
	Phi35Mini
)

func (t Template) String() string {
	switch t {
	case Phi4Mini:
		return "Phi-4-mini"
	case Phi35Mini:
		return "Phi-3.5-mini"
	}
	return fmt.Sprintf("Template(%d)", int(t))
}

// Options are the template's inputs besides the messages.
type Options struct {
	// Template picks the template; the zero value is Phi-4-mini's.
	Template Template
	// AddGenerationPrompt ends the render with <|assistant|>, ready for
	// generation. Without it the templates end with the end-of-sequence
	// token, <|endoftext|>.
	AddGenerationPrompt bool
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}) or
	// bare function objects. Phi-4-mini lists them in the system turn (see
	// the package documentation); Phi-3.5-mini gets llama.cpp's generic
	// JSON format.
	Tools []json.RawMessage
}

// The templates' markers, each one token in the models' vocabularies.
const (
	System      = "<|system|>"
	User        = "<|user|>"
	Assistant   = "<|assistant|>"
	End         = "<|end|>"
	EndOfText   = "<|endoftext|>" // the end-of-sequence token (eos_token)
	Tool        = "<|tool|>"      // Phi-4-mini: opens the tool list, and a tool result
	EndTool     = "<|/tool|>"     // Phi-4-mini: closes the tool list
	ToolCall    = "<|tool_call|>"
	EndToolCall = "<|/tool_call|>"
)

// DefaultToolSystem is the system text Phi-4-mini gets when tools are given
// without a system message: the template shows tools only in a system
// turn. It is the system text of the model card's tool-calling example.
const DefaultToolSystem = "You are a helpful assistant with some tools."

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with the chosen template (see the package
// documentation for what each writes), byte for byte as Hugging Face
// transformers renders the published template; tool use is written into
// the messages first as the package documentation says. The text is meant
// to be tokenized with special tokens parsed; RenderSpans also says which
// bytes came from the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, and the JSON of tool calls (and, for Phi-3.5-mini, of tool
// results). tokenizer.EncodeMarked keeps special tokens written there from
// becoming markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	switch opts.Template {
	case Phi4Mini:
		return renderPhi4(msgs, opts)
	case Phi35Mini:
		return renderPhi35(msgs, opts)
	}
	return "", nil, fmt.Errorf("chat: unknown template %v", opts.Template)
}

// renderPhi4 is Phi-4-mini's template:
//
//	{% for message in messages %}
//	  {% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}
//	    <|role|> content <|tool|> tools <|/tool|> <|end|>
//	  {% else %}
//	    <|role|> content <|end|>
//	{% endfor %}
//	<|assistant|> or eos_token
//
// with the tools as the first system message's "tools" and the calls
// written into the assistants' contents.
func renderPhi4(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	tools := ""
	if len(opts.Tools) > 0 {
		var err error
		if tools, err = toolList(opts.Tools); err != nil {
			return "", nil, err
		}
	}
	var b chatfmt.Builder
	if tools != "" && msgs[0].Role != "system" {
		b.WriteString(System + DefaultToolSystem + Tool)
		b.Literal(tools)
		b.WriteString(EndTool + End)
	}
	for i, m := range msgs {
		b.WriteString("<|" + m.Role + "|>")
		b.Literal(m.Content)
		if len(m.ToolCalls) > 0 {
			calls, err := callList(m.ToolCalls)
			if err != nil {
				return "", nil, fmt.Errorf("chat: message %d: %w", i, err)
			}
			b.WriteString(ToolCall)
			b.Literal(calls)
			b.WriteString(EndToolCall)
		}
		if i == 0 && m.Role == "system" && tools != "" {
			b.WriteString(Tool)
			b.Literal(tools)
			b.WriteString(EndTool)
		}
		b.WriteString(End)
	}
	if opts.AddGenerationPrompt {
		b.WriteString(Assistant)
	} else {
		b.WriteString(EndOfText)
	}
	return b.String(), b.Spans(), nil
}

// toolList is the "tools" string of the system message: the function
// objects (the "function" of each OpenAI-form tool, or the tool itself),
// keys as given, in a JSON list printed as Python's json.dumps(…,
// ensure_ascii=False) prints it, the way the model card passes
// json.dumps(tools).
func toolList(tools []json.RawMessage) (string, error) {
	list := chatfmt.Value{Kind: chatfmt.Array}
	for i, raw := range tools {
		fn, err := chatfmt.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
		if f, ok := fn.Get("function"); ok {
			fn = f
		}
		if name, ok := fn.Get("name"); !ok || name.Kind != chatfmt.String || name.Str == "" {
			return "", fmt.Errorf("chat: Tools[%d]: the tool has no name", i)
		}
		list.Items = append(list.Items, fn)
	}
	var sb strings.Builder
	list.Dump(&sb, chatfmt.Python, -1)
	return sb.String(), nil
}

// callList writes an assistant's calls as Phi-4-mini writes them between
// <|tool_call|> and <|/tool_call|>: a JSON list of {"name", "arguments"}
// objects, printed as json.dumps prints it. Arguments given as a string of
// JSON (OpenAI's wire form) are read back into the object; none is {}.
func callList(calls []engine.ToolCall) (string, error) {
	list := chatfmt.Value{Kind: chatfmt.Array}
	for j, c := range calls {
		args := chatfmt.Value{Kind: chatfmt.Object}
		if len(strings.TrimSpace(string(c.Arguments))) > 0 {
			var err error
			if args, err = chatfmt.Parse(c.Arguments); err != nil {
				return "", fmt.Errorf("tool call %d: arguments: %w", j, err)
			}
			if args.Kind == chatfmt.String {
				if v, err := chatfmt.Parse([]byte(args.Str)); err == nil {
					args = v
				}
			}
		}
		list.Items = append(list.Items, chatfmt.Value{Kind: chatfmt.Object, Keys: []string{"name", "arguments"},
			Items: []chatfmt.Value{{Kind: chatfmt.String, Str: c.Name}, args}})
	}
	var sb strings.Builder
	list.Dump(&sb, chatfmt.Python, -1)
	return sb.String(), nil
}

// phi35ExampleEnd is what follows the example call minja's polyfill adds
// after the tool list, cut out of Phi-3.5-mini's render of an assistant
// turn, which ends with <|end|>, a newline and, the render being a whole
// conversation, the end-of-sequence token.
const phi35ExampleEnd = End + "\n" + EndOfText

// renderPhi35 is Phi-3.5-mini's template:
//
//	{% for message in messages %}
//	  system (when its content is not empty), user, assistant:
//	    <|role|>\n content <|end|>\n
//	  any other role: nothing
//	{% endfor %}
//	<|assistant|>\n or eos_token
//
// after llama.cpp's generic rewriting of tools, calls and results.
func renderPhi35(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	turns, err := chatfmt.GenericTurns(msgs, opts.Tools, phi35ExampleEnd)
	if err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	for _, t := range turns {
		empty := true
		for _, p := range t.Pieces {
			empty = empty && p.Text == ""
		}
		if t.Role == "system" && empty {
			continue // Jinja's truth test of an empty string
		}
		b.WriteString("<|" + t.Role + "|>\n")
		for _, p := range t.Pieces {
			if p.Literal {
				b.Literal(p.Text)
			} else {
				b.WriteString(p.Text)
			}
		}
		b.WriteString(End + "\n")
	}
	if opts.AddGenerationPrompt {
		b.WriteString(Assistant + "\n")
	} else {
		b.WriteString(EndOfText)
	}
	return b.String(), b.Spans(), nil
}

// The published templates, as Detect knows them.
const (
	phi4MiniSource = "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
	// phi4MiniNoEOS is the same without the end-of-sequence token after a
	// render that does not end with the generation prompt, as some GGUF
	// files of Phi-4-mini-instruct carry it.
	phi4MiniNoEOS   = "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
	phi35MiniSource = "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
)

// Detect says which template a file's tokenizer.chat_template is: the
// published text of Phi-4-mini-instruct (or its variant without the
// end-of-sequence token, which renders every prompt the same) or of
// Phi-3.5-mini-instruct, white space around it ignored. Any other text,
// however close, is not recognized: a template this package does not
// render byte for byte is better refused than approximated.
func Detect(src string) (Template, bool) {
	switch strings.TrimSpace(src) {
	case phi4MiniSource, phi4MiniNoEOS:
		return Phi4Mini, true
	case phi35MiniSource:
		return Phi35Mini, true
	}
	return 0, false
}
