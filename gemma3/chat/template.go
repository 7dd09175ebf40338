package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Options are the template's inputs besides the messages.
type Options struct {
	// AddGenerationPrompt ends the render with the model's header, ready
	// for generation.
	AddGenerationPrompt bool
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}).
	// Gemma 3's template has no place for them: they are described in the
	// system text the way llama.cpp's generic tool format does (see the
	// package documentation), and the model is asked to answer in JSON.
	Tools []json.RawMessage
}

// The template's markers.
const (
	BOS         = "<bos>"
	StartOfTurn = "<start_of_turn>"
	EndOfTurn   = "<end_of_turn>"
)

// The texts llama.cpp's generic tool format adds to the system prompt:
// common_chat_params_init_generic's instruction, then minja's tool
// polyfill, whose example is the polyfilled call of a dummy tool as Gemma
// 3's template renders it.
const (
	respondInJSON = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"
	toolsIntro    = "You can call any of the following tools to satisfy the user's requests: "
	toolsExample  = "\n\nExample tool call syntax:\n\n{\n  \"tool_calls\": [\n    {\n      \"name\": \"tool_name\",\n      \"arguments\": {\n        \"arg1\": \"some_value\"\n      },\n      \"id\": \"call_1___\"\n    }\n  ]\n}" + EndOfTurn + "\n\n\n"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = errors.New("chat: no messages to render")

// Render formats a conversation with Gemma 3's chat template, byte for byte
// as Hugging Face transformers renders the published template (see the
// package documentation for its rules), <bos> included; tool use is
// rewritten first as llama.cpp did. The text is meant to be tokenized with
// special tokens parsed (and no second BOS added); RenderSpans also says
// which bytes came from the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// piece is text of a turn, the caller's or the template's.
type piece struct {
	text    string
	literal bool
}

// turn is a message after llama.cpp's polyfills: a role and its text.
type turn struct {
	role   string
	pieces []piece
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, and the JSON that carries tool calls and results.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if len(msgs) == 0 {
		return "", nil, ErrNoMessages
	}
	turns := make([]turn, len(msgs))
	orig := make([]int, len(msgs)) // the message index of each turn
	if err := chatfmt.CheckRoles(msgs); err != nil {
		return "", nil, err
	}
	for i, m := range msgs {
		t, err := polyfill(m)
		if err != nil {
			return "", nil, fmt.Errorf("chat: message %d: %w", i, err)
		}
		turns[i], orig[i] = t, i
	}
	if len(opts.Tools) > 0 {
		text, err := toolsSystem(opts.Tools)
		if err != nil {
			return "", nil, err
		}
		if turns[0].role == "system" {
			turns[0].pieces = append(turns[0].pieces, piece{"\n\n" + respondInJSON + "\n\n", false})
			turns[0].pieces = append(turns[0].pieces, text...)
		} else {
			sys := turn{"system", append([]piece{{respondInJSON + "\n\n", false}}, text...)}
			turns = append([]turn{sys}, turns...)
			orig = append([]int{-1}, orig...)
		}
	}

	var b chatfmt.Builder
	b.WriteString(BOS)
	var prefix []piece
	if turns[0].role == "system" {
		if len(turns) == 1 {
			return "", nil, errors.New("chat: message 0: a system message alone is dropped by Gemma 3's template, which writes it into the first user turn")
		}
		prefix = append(turns[0].pieces, piece{"\n\n", false})
		turns, orig = turns[1:], orig[1:]
	}
	for i, t := range turns {
		if (t.role == "user") != (i%2 == 0) {
			what := msgs[orig[i]].Role
			hint := ""
			if what == "tool" {
				hint = "; each tool result is a user turn here, so two in a row cannot be rendered"
			}
			return "", nil, fmt.Errorf("chat: message %d: Gemma 3's template needs user and assistant turns to alternate, starting with user, and raises (\"Conversation roles must alternate user/assistant/user/assistant/...\") at this %s message%s", orig[i], what, hint)
		}
		role := t.role
		if role == "assistant" {
			role = "model"
		}
		b.WriteString(StartOfTurn + role + "\n")
		if i == 0 {
			for _, p := range prefix {
				if p.literal {
					b.Literal(p.text)
				} else {
					b.WriteString(p.text)
				}
			}
		}
		// Jinja's trim strips the content (polyfilled JSON has no white
		// space to strip).
		b.Literal(chatfmt.Strip(t.pieces[0].text))
		b.WriteString(EndOfTurn + "\n")
	}
	if opts.AddGenerationPrompt {
		b.WriteString(StartOfTurn + "model\n")
	}
	return b.String(), b.Spans(), nil
}

// polyfill turns a message into what llama.cpp renders: an assistant's
// tool calls become the JSON object {"tool_calls": [...], "content": …},
// a tool result the user turn {"tool_response": {"tool", "content",
// "tool_call_id"}}, both printed as nlohmann::json's dump(2).
func polyfill(m engine.Message) (turn, error) {
	switch {
	case len(m.ToolCalls) > 0: // an assistant's (CheckRoles)
		calls := chatfmt.Value{Kind: chatfmt.Array}
		for j, c := range m.ToolCalls {
			args := chatfmt.Value{Kind: chatfmt.Object}
			if len(strings.TrimSpace(string(c.Arguments))) > 0 {
				var err error
				if args, err = chatfmt.Parse(c.Arguments); err != nil {
					return turn{}, fmt.Errorf("tool call %d: arguments: %w", j, err)
				}
				if args.Kind == chatfmt.String { // minja parses string arguments back
					if v, err := chatfmt.Parse([]byte(args.Str)); err == nil {
						args = v
					}
				}
			}
			call := object("name", str(c.Name), "arguments", args)
			if c.ID != "" {
				call = object("name", str(c.Name), "arguments", args, "id", str(c.ID))
			}
			calls.Items = append(calls.Items, call)
		}
		obj := object("tool_calls", calls)
		if m.Content != "" {
			obj = object("tool_calls", calls, "content", str(m.Content))
		}
		return turn{"assistant", []piece{{dump(obj), true}}}, nil
	case m.Role == "tool":
		var kv []any
		if m.Name != "" {
			kv = append(kv, "tool", str(m.Name))
		}
		kv = append(kv, "content", str(m.Content))
		if m.ToolCallID != "" {
			kv = append(kv, "tool_call_id", str(m.ToolCallID))
		}
		return turn{"user", []piece{{dump(object("tool_response", object(kv...))), true}}}, nil
	}
	return turn{m.Role, []piece{{m.Content, true}}}, nil
}

// toolsSystem is the tool description minja's polyfill adds to the system
// text: the tools, rebuilt from their name, description and parameters as
// llama.cpp does, printed as minja's dump(2), then the example call.
func toolsSystem(tools []json.RawMessage) ([]piece, error) {
	list := chatfmt.Value{Kind: chatfmt.Array}
	for i, raw := range tools {
		fn, err := chatfmt.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
		if f, ok := fn.Get("function"); ok {
			fn = f
		}
		name, ok := fn.Get("name")
		if !ok || name.Kind != chatfmt.String || name.Str == "" {
			return nil, fmt.Errorf("chat: Tools[%d]: the tool has no name", i)
		}
		desc, ok := fn.Get("description")
		if !ok {
			desc = str("")
		}
		params, ok := fn.Get("parameters")
		if !ok {
			params = chatfmt.Value{Kind: chatfmt.Object}
		}
		list.Items = append(list.Items, object("type", str("function"), "function", object("name", name, "description", desc, "parameters", params)))
	}
	var sb strings.Builder
	list.Dump(&sb, chatfmt.Minja, 2)
	return []piece{{toolsIntro, false}, {sb.String(), true}, {toolsExample, false}}, nil
}

func str(s string) chatfmt.Value { return chatfmt.Value{Kind: chatfmt.String, Str: s} }

// object builds an object from key, value pairs.
func object(kv ...any) chatfmt.Value {
	v := chatfmt.Value{Kind: chatfmt.Object}
	for i := 0; i < len(kv); i += 2 {
		v.Keys = append(v.Keys, kv[i].(string))
		v.Items = append(v.Items, kv[i+1].(chatfmt.Value))
	}
	return v
}

func dump(v chatfmt.Value) string {
	var sb strings.Builder
	v.Dump(&sb, chatfmt.Nlohmann, 2)
	return sb.String()
}
