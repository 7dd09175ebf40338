package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Options are the template's inputs besides the messages.
type Options struct {
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}),
	// each printed as JSON indented by 4 spaces. With tools the system
	// turn starts with "Environment: ipython".
	Tools []json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// ready for generation.
	AddGenerationPrompt bool
	// ToolsInSystem lists the tools in the system turn, the template's
	// tools_in_user_message=false, which is what llama.cpp passes. The
	// default (false) is the template's own: the tools and their
	// instructions open the first user message.
	ToolsInSystem bool
	// Now gives the date on the "Today Date" line (the template's
	// strftime_now("%d %b %Y"), "08 Jul 2025"); nil means time.Now.
	Now func() time.Time
}

// The template's markers.
const (
	BOS          = "<|begin_of_text|>"
	EndOfTurn    = "<|eot_id|>"
	headerStart  = "<|start_header_id|>"
	headerEnd    = "<|end_header_id|>\n\n"
	format       = `Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n"
	userToolHead = "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" + format
	sysToolHead  = "You have access to the following functions. To call a function, please respond with JSON for a function call." + format
)

func header(role string) string { return headerStart + role + headerEnd }

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with Llama 3.2's chat template, byte for
// byte as Hugging Face transformers renders the published template (see
// the package documentation for its rules), <|begin_of_text|> included.
// The text is meant to be tokenized with special tokens parsed (and no
// second BOS added); RenderSpans also says which bytes came from the
// caller, to tokenize them as plain text.
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
	for i, m := range msgs {
		if len(m.ToolCalls) > 1 {
			return "", nil, fmt.Errorf("chat: message %d: %d tool calls in one message; Llama 3.2's template takes one per message (it raises \"This model only supports single tool-calls at once!\"): split them into assistant messages of one call each, the tool results between them", i, len(m.ToolCalls))
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	tools := make([]string, len(opts.Tools))
	for i, t := range opts.Tools {
		s, err := chatfmt.Dumps(t, chatfmt.Python, 4)
		if err != nil {
			return "", nil, fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
		tools[i] = s
	}
	writeTools := func(b *chatfmt.Builder) {
		for _, s := range tools {
			b.Literal(s)
			b.WriteString("\n\n")
		}
	}

	var b chatfmt.Builder
	rest, offset := msgs, 0
	system := ""
	if msgs[0].Role == "system" {
		system = chatfmt.Strip(msgs[0].Content)
		rest, offset = msgs[1:], 1
	}
	b.WriteString(BOS + header("system"))
	if len(tools) > 0 {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\n")
	b.WriteString("Today Date: " + now().Format("02 Jan 2006") + "\n\n")
	if len(tools) > 0 && opts.ToolsInSystem {
		b.WriteString(sysToolHead)
		writeTools(&b)
	}
	b.Literal(system)
	b.WriteString(EndOfTurn)

	if len(tools) > 0 && !opts.ToolsInSystem {
		if len(rest) == 0 {
			return "", nil, errors.New("chat: the tools go into the first user message, and there is none (the template raises \"Cannot put tools in the first user message when there's no first user message!\"); add one or set ToolsInSystem")
		}
		if rest[0].Role != "user" {
			return "", nil, fmt.Errorf("chat: message %d: the tools go into the first message after the system prompt, which must be a user message, not %s (the template would write its text as the user's); set ToolsInSystem to list them in the system turn", offset, rest[0].Role)
		}
		b.WriteString(header("user") + userToolHead)
		writeTools(&b)
		b.Literal(chatfmt.Strip(rest[0].Content))
		b.WriteString(EndOfTurn)
		rest, offset = rest[1:], offset+1
	}

	for i, m := range rest {
		switch {
		case m.Role == "tool":
			// A string is iterable to Jinja, so the template prints every
			// tool result through tojson: as a quoted JSON string.
			b.WriteString(header("ipython"))
			b.Literal(chatfmt.JSONString(m.Content))
			b.WriteString(EndOfTurn)
		case len(m.ToolCalls) > 0:
			s, err := FormatCall(m.ToolCalls[0].Name, m.ToolCalls[0].Arguments)
			if err != nil {
				return "", nil, fmt.Errorf("chat: message %d: tool call 0: %w", offset+i, err)
			}
			b.WriteString(header("assistant"))
			b.Literal(s)
			b.WriteString(EndOfTurn)
		default:
			b.WriteString(header(m.Role))
			b.Literal(chatfmt.Strip(m.Content))
			b.WriteString(EndOfTurn)
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(header("assistant"))
	}
	return b.String(), b.Spans(), nil
}

// FormatCall writes a call the way the template writes an assistant's
// tool call, which is also how Llama 3.2 answers with one:
//
//	{"name": "get_weather", "parameters": {"city": "Paris"}}
//
// The arguments (a JSON value, {} when empty) are printed as the
// template's tojson prints them.
func FormatCall(name string, args json.RawMessage) (string, error) {
	a := "{}"
	if len(strings.TrimSpace(string(args))) > 0 {
		var err error
		if a, err = chatfmt.Dumps(args, chatfmt.Python, -1); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
	}
	return `{"name": "` + name + `", "parameters": ` + a + "}", nil
}
