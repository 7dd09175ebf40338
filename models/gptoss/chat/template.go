package chat

import (
	"encoding/json"
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
	// declared in the developer message as the functions namespace.
	Tools []json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// <|start|>assistant, ready for generation.
	AddGenerationPrompt bool
	// ReasoningEffort is the template's reasoning_effort, written on the
	// system message's "Reasoning:" line as it is; "" is the template's
	// default, "medium". gpt-oss was trained on "low", "medium" and "high".
	ReasoningEffort string
	// ModelIdentity is the template's model_identity, the system message's
	// first line; "" is the template's default (DefaultIdentity).
	ModelIdentity string
	// Now gives the date on the "Current date:" line (the template's
	// strftime_now("%Y-%m-%d"), which reads the local clock, as
	// transformers' and llama.cpp's do); nil means time.Now.
	Now func() time.Time
}

// DefaultIdentity is the template's model_identity when none is given.
const DefaultIdentity = "You are ChatGPT, a large language model trained by OpenAI."

// The harmony format's markers.
const (
	Start     = "<|start|>"
	End       = "<|end|>"
	Message   = "<|message|>"
	Channel   = "<|channel|>"
	Constrain = "<|constrain|>"
	Return    = "<|return|>"
	Call      = "<|call|>"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

const channelTagsError = "You have passed a message containing <|channel|> tags in the %s field. Instead of doing this, you should pass analysis messages (the string between '<|message|>' and '<|end|>') in the 'thinking' field, and final messages (the string between '<|message|>' and '<|end|>') in the 'content' field."

// Render formats a conversation with gpt-oss's chat template, byte for byte
// as jinja2 renders the published template with the inputs llama.cpp gives
// it (see the package documentation for its rules). RenderSpans also says
// which bytes came from the caller.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, reasoning, the
// developer instructions, the tool declarations, the names and arguments of
// tool calls, tool results, and the identity and reasoning effort options.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	for i, m := range msgs[1:] {
		if m.Role == "system" {
			return "", nil, fmt.Errorf("chat: message %d: a system message after the first; gpt-oss's template renders only a leading one (as the developer message) and drops the others", i+1)
		}
	}
	tools, err := readTools(opts.Tools)
	if err != nil {
		return "", nil, err
	}
	var decls string
	if len(tools) > 0 {
		if decls, err = namespace(tools); err != nil {
			return "", nil, err
		}
	}

	var b chatfmt.Builder
	identity := opts.ModelIdentity
	if identity == "" {
		identity = DefaultIdentity
	}
	effort := opts.ReasoningEffort
	if effort == "" {
		effort = "medium"
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	b.WriteString(Start + "system" + Message)
	b.Literal(identity)
	b.WriteString("\nKnowledge cutoff: 2024-06\nCurrent date: " + now().Format(time.DateOnly) + "\n\nReasoning: ")
	b.Literal(effort)
	b.WriteString("\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.")
	if len(tools) > 0 {
		b.WriteString("\nCalls to these tools must go to the commentary channel: 'functions'.")
	}
	b.WriteString(End)

	loop := msgs
	developer := ""
	if msgs[0].Role == "system" {
		developer, loop = msgs[0].Content, msgs[1:]
	}
	if developer != "" || len(tools) > 0 {
		b.WriteString(Start + "developer" + Message)
		if developer != "" {
			b.WriteString("# Instructions\n\n")
			b.Literal(developer)
			b.WriteString("\n\n")
		}
		if len(tools) > 0 {
			b.WriteString("# Tools\n\n")
			b.Literal(decls)
		}
		b.WriteString(End)
	}

	offset := len(msgs) - len(loop) // index of loop[0] in msgs
	// The names of the last assistant turn's calls, and how many tool
	// results followed it: the k-th result is the k-th call's (the
	// template, which assumes one call per turn, names every result after
	// its turn's first call).
	var calls []string
	results := 0
	for i, m := range loop {
		switch m.Role {
		case "assistant":
			if err := checkChannels(m); err != nil {
				return "", nil, fmt.Errorf("chat: message %d: %w", i+offset, err)
			}
			if len(m.ToolCalls) > 0 {
				if err := writeCalls(&b, m, loop[i+1:]); err != nil {
					return "", nil, fmt.Errorf("chat: message %d: %w", i+offset, err)
				}
				calls, results = calls[:0], 0
				for _, c := range m.ToolCalls {
					calls = append(calls, c.Name)
				}
				continue
			}
			end := End
			if i == len(loop)-1 && !opts.AddGenerationPrompt {
				// The training form: the last answer with its reasoning,
				// ending with <|return|>.
				if m.ReasoningContent != "" {
					b.WriteString(Start + "assistant" + Channel + "analysis" + Message)
					b.Literal(m.ReasoningContent)
					b.WriteString(End)
				}
				end = Return
			} else {
				calls = nil
			}
			b.WriteString(Start + "assistant" + Channel + "final" + Message)
			b.Literal(m.Content)
			b.WriteString(end)
		case "tool":
			if len(calls) == 0 {
				return "", nil, fmt.Errorf("chat: message %d: Message has tool role, but there was no previous assistant message with a tool call!", i+offset)
			}
			name := calls[min(results, len(calls)-1)]
			results++
			b.WriteString(Start + "functions.")
			b.Literal(name)
			b.WriteString(" to=assistant" + Channel + "commentary" + Message)
			b.Literal(chatfmt.JSONString(m.Content))
			b.WriteString(End)
		case "user":
			b.WriteString(Start + "user" + Message)
			b.Literal(m.Content)
			b.WriteString(End)
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(Start + "assistant")
	}
	return b.String(), b.Spans(), nil
}

// checkChannels is the template's check that an assistant's content and
// reasoning do not hold a whole harmony message. As llama.cpp passes them,
// the content of a turn with reasoning and tool calls is not there.
func checkChannels(m engine.Message) error {
	bad := func(s string) bool {
		return strings.Contains(s, Channel+"analysis"+Message) || strings.Contains(s, Channel+"final"+Message)
	}
	if !(m.ReasoningContent != "" && len(m.ToolCalls) > 0) && bad(m.Content) {
		return fmt.Errorf(channelTagsError, "content")
	}
	if bad(m.ReasoningContent) {
		return fmt.Errorf(channelTagsError, "thinking")
	}
	return nil
}

// writeCalls writes an assistant turn with tool calls: its reasoning (or,
// without reasoning, its content) as an analysis message unless a later
// turn answers without calls (which makes it a finished tool loop whose
// reasoning is dropped), then each call as a commentary message to
// functions.NAME with the arguments as JSON. rest is the conversation after
// the turn. The template writes only the first call of a turn; the others
// follow the same way, as the turn split into one turn per call would be.
func writeCalls(b *chatfmt.Builder, m engine.Message, rest []engine.Message) error {
	answered := false
	for _, r := range rest {
		if r.Role == "assistant" && len(r.ToolCalls) == 0 {
			answered = true
		}
	}
	// llama.cpp drops the content of a turn with reasoning and calls.
	analysis := m.ReasoningContent
	if analysis == "" {
		analysis = m.Content
	}
	if analysis != "" && !answered {
		b.WriteString(Start + "assistant" + Channel + "analysis" + Message)
		b.Literal(analysis)
		b.WriteString(End)
	}
	for j, c := range m.ToolCalls {
		args, err := arguments(c.Arguments)
		if err != nil {
			return fmt.Errorf("tool call %d: %w", j, err)
		}
		b.WriteString(Start + "assistant to=functions.")
		b.Literal(c.Name)
		b.WriteString(Channel + "commentary json" + Message)
		b.Literal(args)
		b.WriteString(Call)
	}
	return nil
}

// arguments prints a call's arguments as the template's tojson does, after
// llama.cpp has parsed arguments given as a string of JSON ({} when empty).
func arguments(raw json.RawMessage) (string, error) {
	if strings.TrimSpace(string(raw)) == "" {
		return "{}", nil
	}
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if v.Kind == chatfmt.String {
		if v, err = chatfmt.Parse([]byte(v.Str)); err != nil {
			return "", fmt.Errorf("arguments: a string that is not JSON: %w", err)
		}
	}
	return tojson(v), nil
}
