package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Template names one of the Granite chat templates Render reproduces.
type Template int

const (
	// Granite33 is the template of Granite 3.3 (granite-3.3-2b-instruct,
	// granite-3.3-8b-instruct): a default system prompt with today's
	// date, tools as an available_tools turn, documents as document
	// turns, the thinking switch and the controls. It is the zero value.
	Granite33 Template = iota
	// Granite40 is the template of Granite 4.0 (micro, and the hybrid
	// h-micro, h-tiny, h-small): tools and documents in the system turn,
	// calls in <tool_call> blocks, and a default system prompt.
	Granite40
	// Granite41 is Granite 4.1's: Granite40 without the default system
	// prompt.
	Granite41
)

func (t Template) String() string {
	switch t {
	case Granite33:
		return "Granite 3.3"
	case Granite40:
		return "Granite 4.0"
	case Granite41:
		return "Granite 4.1"
	}
	return fmt.Sprintf("Template(%d)", int(t))
}

// Detect tells which of the templates a chat template's source (a GGUF
// file's tokenizer.chat_template) is, by the texts that set each apart:
// Granite 3.3's one-sentence default system prompt, available_tools turn
// and thinking instruction; Granite 4's tools section, <tool_call> blocks
// and <tool_response> turns, with (4.0) or without (4.1) a default system
// prompt. Earlier Granite 3 templates (3.0 to 3.2, whose default system
// prompt runs over several lines, or which have none) are none of these.
func Detect(src string) (Template, bool) {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if !strings.Contains(src, s) {
				return false
			}
		}
		return true
	}
	switch {
	case has(`"`+default33Head+`"`, role("available_tools"),
		"Write your thoughts between <think></think> and write your response between <response></response>",
		`'<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + '<|end_of_text|>`):
		return Granite33, true
	case has("You are a helpful assistant with access to the following tools. You may call one or more tools to assist with the user query.",
		`'<tool_call>\n{"name": "'`, `\n<tool_response>\n`, StartOfRole):
		if has(DefaultSystem40) {
			return Granite40, true
		}
		return Granite41, true
	}
	return 0, false
}

// Options are the template's inputs besides the messages.
type Options struct {
	// Template is the template to render (Granite 3.3's by default);
	// Detect tells it from a file's tokenizer.chat_template.
	Template Template
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}).
	// Granite 3.3 lists them as one JSON array indented by 4 spaces in an
	// available_tools turn; Granite 4 one per line, as JSON, in the system
	// turn.
	Tools []json.RawMessage
	// Documents are JSON objects to ground the answer in (the template's
	// documents). Granite 3.3 writes each as a document turn from its
	// "doc_id" (a string or a number) and "text" (a string); Granite 4
	// lists each, as JSON, in the system turn.
	Documents []json.RawMessage
	// Thinking asks Granite 3.3 to reason before answering, between
	// <think> and </think>, and to answer between <response> and
	// </response> (the template's thinking). The template only says so
	// in its default system prompt: with a system message, tools or
	// documents it changes nothing. Granite 4 has no such switch.
	Thinking bool
	// Controls are Granite 3.3's controls, a JSON object such as
	// {"citations": true, "hallucinations": true, "length": "short"}:
	// written after the assistant's role in the generation prompt, and,
	// with documents and no system message, "citations" and
	// "hallucinations" add their instructions to the default system
	// prompt (whatever their value, as the template tests for the key).
	// Granite 4 has none.
	Controls json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// ready for generation. Granite 3.3's template writes it after the
	// last message only, so a conversation of a system message alone
	// gets none.
	AddGenerationPrompt bool
	// Now gives the date in Granite 3.3's default system prompt (the
	// template's strftime_now("%B %d, %Y"), "July 08, 2025"); nil means
	// time.Now.
	Now func() time.Time
}

// The templates' markers.
const (
	StartOfRole = "<|start_of_role|>"
	EndOfRole   = "<|end_of_role|>"
	// EndOfText ends every turn (followed by a line break); it is also
	// the end-of-sequence token, which ends an answer.
	EndOfText = "<|end_of_text|>"
)

// Granite 3.3's default system prompt and its additions.
const (
	default33Head = "Knowledge Cutoff Date: April 2024. Today's Date: "
	default33Tail = ". You are Granite, developed by IBM."
	tools33       = " You are a helpful assistant with access to the following tools. When a tool is required to answer the user's query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request."
	documents33   = " Write the response to the user's input by strictly aligning with the facts in the provided documents. If the information needed to answer the question is not available in the documents, inform the user that the question cannot be answered based on the available data."
	thinking33    = " You are a helpful AI assistant.\nRespond to every user query in a comprehensive and detailed way. You can write down your thoughts and reasoning process before responding. In the thought process, engage in a comprehensive cycle of analysis, summarization, exploration, reassessment, reflection, backtracing, and iteration to develop well-considered thinking process. In the response section, based on various attempts, explorations, and reflections from the thoughts section, systematically present the final solution that you deem correct. The response should summarize the thought process. Write your thoughts between <think></think> and write your response between <response></response> for each user query."
	plain33       = " You are a helpful AI assistant."
	citations33   = "\nUse the symbols <|start_of_cite|> and <|end_of_cite|> to indicate when a fact comes from a document in the search result, e.g <|start_of_cite|> {document_id: 1}my fact <|end_of_cite|> for a fact from document 1. Afterwards, list all the citations with their corresponding documents in an ordered list."
	halluc33      = "\nFinally, after the response is written, include a numbered list of sentences from the response with a corresponding risk value that are hallucinated and not based in the documents."
)

// Granite 4's system texts.
const (
	tools4Head = "You are a helpful assistant with access to the following tools. You may call one or more tools to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	tools4Tail = "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request."
	docs4Head  = "You are a helpful assistant with access to the following documents. You may use one or more documents to assist with the user query.\n\nYou are given a list of documents within <documents></documents> XML tags:\n<documents>"
	docs4Tail  = "\n</documents>\n\nWrite the response to the user's input by strictly aligning with the facts in the provided documents. If the information needed to answer the question is not available in the documents, inform the user that the question cannot be answered based on the available data."
	// DefaultSystem40 is the system prompt Granite 4.0's template writes
	// when there is no other (Granite 4.1's writes none).
	DefaultSystem40 = "You are a helpful assistant. Please ensure responses are professional, accurate, and safe."
)

func role(r string) string { return StartOfRole + r + EndOfRole }

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with a Granite chat template, byte for
// byte as Hugging Face transformers renders the published template (see
// the package documentation for the rules). The text is meant to be
// tokenized with special tokens parsed; RenderSpans also says which bytes
// came from the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, documents, controls, and the names and arguments of tool
// calls. tokenizer.EncodeMarked keeps special tokens written there from
// becoming markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	var err error
	switch opts.Template {
	case Granite33:
		err = render33(&b, msgs, opts)
	case Granite40, Granite41:
		err = render4(&b, msgs, opts)
	default:
		err = fmt.Errorf("chat: unknown %v", opts.Template)
	}
	if err != nil {
		return "", nil, err
	}
	return b.String(), b.Spans(), nil
}

func render33(b *chatfmt.Builder, msgs []engine.Message, opts Options) error {
	tools, err := toolList33(opts.Tools)
	if err != nil {
		return err
	}
	docs, err := readDocuments33(opts.Documents)
	if err != nil {
		return err
	}
	var controls chatfmt.Value
	if len(opts.Controls) > 0 {
		if controls, err = chatfmt.Parse(opts.Controls); err != nil || controls.Kind != chatfmt.Object {
			return fmt.Errorf("chat: Controls must be a JSON object (%v)", err)
		}
	}

	b.WriteString(role("system"))
	rest := msgs
	if msgs[0].Role == "system" {
		b.Literal(msgs[0].Content)
		rest = msgs[1:]
	} else {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		b.WriteString(default33Head + now().Format("January 02, 2006") + default33Tail)
		switch {
		case tools != "" && len(docs) > 0:
			b.WriteString(tools33 + documents33)
		case tools != "":
			b.WriteString(tools33)
		case len(docs) > 0:
			b.WriteString(documents33)
		case opts.Thinking:
			b.WriteString(thinking33)
		default:
			b.WriteString(plain33)
		}
		if _, ok := controls.Get("citations"); ok && len(docs) > 0 {
			b.WriteString(citations33)
		}
		if _, ok := controls.Get("hallucinations"); ok && len(docs) > 0 {
			b.WriteString(halluc33)
		}
	}
	b.WriteString(EndOfText + "\n")
	if tools != "" {
		b.WriteString(role("available_tools"))
		b.Literal(tools)
		b.WriteString(EndOfText + "\n")
	}
	for _, d := range docs {
		b.WriteString(StartOfRole + `document {"document_id": "`)
		b.Literal(d.id)
		b.WriteString(`"}` + EndOfRole + "\n")
		b.Literal(d.text)
		b.WriteString(EndOfText + "\n")
	}
	for i, m := range rest {
		b.WriteString(role(m.Role))
		b.Literal(m.Content)
		if len(m.ToolCalls) > 0 {
			calls, err := FormatCalls(m.ToolCalls)
			if err != nil {
				return fmt.Errorf("chat: message %d: %w", len(msgs)-len(rest)+i, err)
			}
			b.WriteString(ToolCallTag)
			b.Literal(calls)
		}
		b.WriteString(EndOfText + "\n")
		if i == len(rest)-1 && opts.AddGenerationPrompt {
			b.WriteString(StartOfRole + "assistant")
			if len(controls.Items) > 0 {
				b.WriteString(" ")
				var sb strings.Builder
				controls.Dump(&sb, chatfmt.Python, -1)
				b.Literal(sb.String())
			}
			b.WriteString(EndOfRole)
		}
	}
	return nil
}

// toolList33 prints the tools as the template's tojson(indent=4) prints
// the list ("" for none).
func toolList33(tools []json.RawMessage) (string, error) {
	if len(tools) == 0 {
		return "", nil
	}
	for i, t := range tools {
		if _, err := chatfmt.Parse(t); err != nil {
			return "", fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
	}
	var list []byte
	list = append(list, '[')
	for i, t := range tools {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, t...)
	}
	list = append(list, ']')
	return chatfmt.Dumps(list, chatfmt.Python, 4)
}

type document33 struct{ id, text string }

// readDocuments33 reads each document's doc_id (printed as Jinja's string
// filter prints it) and text.
func readDocuments33(docs []json.RawMessage) ([]document33, error) {
	var out []document33
	for i, raw := range docs {
		v, err := chatfmt.Parse(raw)
		if err != nil || v.Kind != chatfmt.Object {
			return nil, fmt.Errorf("chat: Documents[%d]: not a JSON object (%v)", i, err)
		}
		var d document33
		if id, ok := v.Get("doc_id"); ok {
			switch id.Kind {
			case chatfmt.String:
				d.id = id.Str
			case chatfmt.Number:
				var sb strings.Builder
				id.Dump(&sb, chatfmt.Python, -1)
				d.id = sb.String()
			default:
				return nil, fmt.Errorf("chat: Documents[%d]: doc_id is not a string or a number", i)
			}
		}
		if text, ok := v.Get("text"); ok {
			if text.Kind != chatfmt.String {
				return nil, fmt.Errorf("chat: Documents[%d]: text is not a string", i)
			}
			d.text = text.Str
		}
		out = append(out, d)
	}
	return out, nil
}

// lines4 prints each value as JSON on one line, for Granite 4's lists.
func lines4(what string, vals []json.RawMessage) ([]string, error) {
	out := make([]string, len(vals))
	for i, v := range vals {
		s, err := chatfmt.Dumps(v, chatfmt.Python, -1)
		if err != nil {
			return nil, fmt.Errorf("chat: %s[%d]: %w", what, i, err)
		}
		out[i] = s
	}
	return out, nil
}

func render4(b *chatfmt.Builder, msgs []engine.Message, opts Options) error {
	tools, err := lines4("Tools", opts.Tools)
	if err != nil {
		return err
	}
	docs, err := lines4("Documents", opts.Documents)
	if err != nil {
		return err
	}
	// The system turn is the first system message's text, then the tool
	// section, then the document section, blank lines between; the
	// template writes it when that is not empty.
	var parts []func()
	if msgs[0].Role == "system" && msgs[0].Content != "" {
		parts = append(parts, func() { b.Literal(msgs[0].Content) })
	}
	list := func(head, tail string, items []string) func() {
		return func() {
			b.WriteString(head)
			for _, s := range items {
				b.WriteString("\n")
				b.Literal(s)
			}
			b.WriteString(tail)
		}
	}
	if len(tools) > 0 {
		parts = append(parts, list(tools4Head, tools4Tail, tools))
	}
	if len(docs) > 0 {
		parts = append(parts, list(docs4Head, docs4Tail, docs))
	}
	switch {
	case len(parts) > 0:
		b.WriteString(role("system"))
		if msgs[0].Role == "system" && msgs[0].Content == "" && len(parts) > 0 {
			b.WriteString("\n\n") // the empty system text, then its separator
		}
		for i, p := range parts {
			if i > 0 {
				b.WriteString("\n\n")
			}
			p()
		}
		b.WriteString(EndOfText + "\n")
	case opts.Template == Granite40:
		b.WriteString(role("system") + DefaultSystem40 + EndOfText + "\n")
	}

	for i, m := range msgs {
		switch {
		case m.Role == "system" && i == 0:
		case m.Role == "user" || m.Role == "system":
			b.WriteString(role(m.Role))
			b.Literal(m.Content)
			b.WriteString(EndOfText + "\n")
		case m.Role == "assistant":
			b.WriteString(role("assistant"))
			b.Literal(m.Content)
			for j, c := range m.ToolCalls {
				args, err := rawArguments(c.Arguments)
				if err != nil {
					return fmt.Errorf("chat: message %d: tool call %d: %w", i, j, err)
				}
				if j > 0 || m.Content != "" {
					b.WriteString("\n")
				}
				b.WriteString("<tool_call>\n{\"name\": \"")
				b.Literal(c.Name)
				b.WriteString("\", \"arguments\": ")
				b.Literal(args)
				b.WriteString("}\n</tool_call>")
			}
			b.WriteString(EndOfText + "\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString(role("user"))
			}
			b.WriteString("\n<tool_response>\n")
			b.Literal(m.Content)
			b.WriteString("\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString(EndOfText + "\n")
			}
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(role("assistant"))
	}
	return nil
}

// rawArguments prints a call's arguments as Granite 4's template does: a
// string as it is (OpenAI's wire form, JSON text in a string), anything
// else through tojson; {} when empty.
func rawArguments(raw json.RawMessage) (string, error) {
	v, err := arguments(raw)
	if err != nil {
		return "", err
	}
	if v.Kind == chatfmt.String {
		return v.Str, nil
	}
	var sb strings.Builder
	v.Dump(&sb, chatfmt.Python, -1)
	return sb.String(), nil
}

// arguments reads a call's arguments ({} when empty).
func arguments(raw json.RawMessage) (chatfmt.Value, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return chatfmt.Value{Kind: chatfmt.Object}, nil
	}
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return chatfmt.Value{}, fmt.Errorf("arguments: %w", err)
	}
	return v, nil
}
