package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// Options are the template's inputs besides the messages.
type Options struct {
	// EnableThinking selects the reasoning mode; nil means the template's
	// default, thinking on. A system message containing "/no_think" or
	// "/think" overrides it.
	EnableThinking *bool
	// AddGenerationPrompt ends the render with the assistant's header (and
	// an empty think block in no-think mode), ready for generation.
	AddGenerationPrompt bool
	// XMLTools are function definitions the model may call with
	// <tool_call> tags, each a JSON value (usually an object with name,
	// description and parameters). Tools is the same list in the OpenAI
	// form ({"type": "function", "function": {…}}), printed whole; it takes
	// the place of XMLTools when both are given.
	XMLTools, Tools []json.RawMessage
	// PythonTools are functions the model may call from <code> blocks.
	PythonTools []json.RawMessage
	// CustomInstructions replace the default persona when there is no
	// system message (the template's custom_instructions variable).
	CustomInstructions string
	// Now gives the date on the "Today Date" line; nil means time.Now.
	Now func() time.Time
}

// Think is a convenience for Options.EnableThinking.
func Think(on bool) *bool { return &on }

const (
	personaThink   = "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an assistant involves thoroughly exploring questions through a systematic thinking process before providing the final precise and accurate solutions. This requires engaging in a comprehensive cycle of analysis, summarizing, exploration, reassessment, reflection, backtracking, and iteration to develop well-considered thinking process. Please structure your response into two main sections: Thought and Solution using the specified format: <think> Thought section </think> Solution section. In the Thought section, detail your reasoning process in steps. Each step should include detailed considerations such as analysing questions, summarizing relevant findings, brainstorming new ideas, verifying the accuracy of the current steps, refining any errors, and revisiting previous steps. In the Solution section, based on various attempts, explorations, and reflections from the Thought section, systematically present the final solution that you deem correct. The Solution section should be logical, accurate, and concise and detail necessary steps needed to reach the conclusion."
	personaNoThink = "You are a helpful AI assistant named SmolLM, trained by Hugging Face."

	xmlToolsHead   = "You may call one or more functions to assist with the user query.\nYou are provided with function signatures within <tools></tools> XML tags:\n\n<tools>\n"
	xmlToolsTail   = "</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
	pyToolsHead    = "When you send a message containing Python code between '<code>' and '</code>' tags, it will be executed in a stateful Jupyter notebook environment, and you will then be given the output to continued reasoning in an agentic loop.\n\nYou can use the following tools in your python code like regular functions:\n<tools>\n"
	pyToolsTail    = "</tools>\n\nThe state persists between code executions: so variables that you define in one step are still available thereafter."
	emptyThink     = "<think>\n\n</think>\n"
	imStart, imEnd = "<|im_start|>", "<|im_end|>\n"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with SmolLM3's chat template, byte for byte
// as Hugging Face transformers renders the official template. The result is
// meant to be tokenized with special tokens parsed; RenderSpans also says
// which bytes came from the messages, to tokenize them as plain text.
//
// An assistant message's ToolCalls, which the official template ignores,
// are written after its Content the way SmolLM3 writes calls
// (toolcall.Text), so that the model sees the calls it made.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end)) of
// the text that came from the caller: message contents and tool
// definitions. Tokenizing those ranges without special-token parsing
// (tokenizer.EncodeMarked) keeps a user from forging the template's markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if len(msgs) == 0 {
		return "", nil, ErrNoMessages
	}
	for i, m := range msgs {
		switch m.Role {
		case "user", "assistant", "tool":
		case "system":
			if i != 0 {
				return "", nil, fmt.Errorf("chat: message %d: a system message is only allowed first (the template would drop it)", i)
			}
		default:
			return "", nil, fmt.Errorf("chat: message %d: role %q is not one of system, user, assistant, tool", i, m.Role)
		}
	}
	think := opts.EnableThinking == nil || *opts.EnableThinking
	custom := opts.CustomInstructions
	system, hasSystem := "", msgs[0].Role == "system"
	if hasSystem {
		system = msgs[0].Content
		if strings.Contains(system, "/no_think") {
			think = false
		} else if strings.Contains(system, "/think") {
			think = true
		}
		custom = rstrip(strings.ReplaceAll(strings.ReplaceAll(system, "/no_think", ""), "/think", ""))
	}

	var b spanBuilder
	b.WriteString(imStart + "system\n")
	if strings.Contains(system, "/system_override") {
		b.literal(rstrip(strings.ReplaceAll(custom, "/system_override", "")))
		b.WriteString(imEnd)
	} else {
		mode := "/no_think"
		if think {
			mode = "/think"
		}
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		b.WriteString("## Metadata\n\nKnowledge Cutoff Date: June 2025\n")
		b.WriteString("Today Date: " + now().Format("02 January 2006") + "\n")
		b.WriteString("Reasoning Mode: " + mode + "\n\n")
		b.WriteString("## Custom Instructions\n\n")
		switch {
		case custom != "":
			b.literal(custom)
		case think:
			b.WriteString(personaThink)
		default:
			b.WriteString(personaNoThink)
		}
		b.WriteString("\n\n")
		if err := writeTools(&b, opts); err != nil {
			return "", nil, err
		}
	}

	for _, m := range msgs {
		switch m.Role {
		case "user", "tool":
			b.WriteString(imStart + "user\n")
			b.literal(m.Content)
			b.WriteString(imEnd)
		case "assistant":
			b.WriteString(imStart + "assistant\n")
			if !think {
				b.WriteString(emptyThink)
			}
			b.literal(strings.TrimLeft(m.Content, "\n"))
			for i, c := range m.ToolCalls {
				if i > 0 || m.Content != "" {
					b.WriteString("\n")
				}
				b.literal(toolcall.Text(toolcall.Call{Name: c.Name, Arguments: c.Arguments}))
			}
			b.WriteString(imEnd)
		}
	}
	if opts.AddGenerationPrompt {
		b.WriteString(imStart + "assistant\n")
		if !think {
			b.WriteString(emptyThink)
		}
	}
	return b.String(), b.spans, nil
}

// spanBuilder is a strings.Builder that records the ranges written with
// literal.
type spanBuilder struct {
	strings.Builder
	spans [][2]int
}

// literal writes text that came from the caller.
func (b *spanBuilder) literal(s string) {
	if s == "" {
		return
	}
	start := b.Len()
	b.WriteString(s)
	b.spans = append(b.spans, [2]int{start, b.Len()})
}

// writeTools writes the "### Tools" section and closes the system turn,
// when there are tools.
func writeTools(b *spanBuilder, opts Options) error {
	xml := opts.XMLTools
	if len(opts.Tools) > 0 {
		xml = opts.Tools
	}
	if len(xml) == 0 && len(opts.PythonTools) == 0 {
		return nil
	}
	b.WriteString("### Tools\n\n")
	list := func(name, head, tail string, tools []json.RawMessage) error {
		if len(tools) == 0 {
			return nil
		}
		b.WriteString(head)
		for i, t := range tools {
			s, err := pyString(t)
			if err != nil {
				return fmt.Errorf("chat: %s[%d]: %w", name, i, err)
			}
			b.literal(s)
			b.WriteString("\n")
		}
		b.WriteString(tail)
		return nil
	}
	name := "XMLTools"
	if len(opts.Tools) > 0 {
		name = "Tools"
	}
	if err := list(name, xmlToolsHead, xmlToolsTail, xml); err != nil {
		return err
	}
	if err := list("PythonTools", pyToolsHead, pyToolsTail, opts.PythonTools); err != nil {
		return err
	}
	b.WriteString("\n\n" + imEnd)
	return nil
}

// rstrip is Python's str.rstrip(): it removes trailing characters for which
// str.isspace() is true, which are Unicode White_Space plus U+001C–U+001F.
func rstrip(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r >= 0x1C && r <= 0x1F
	})
}
