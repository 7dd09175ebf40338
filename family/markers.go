package family

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/internal/jinja"
	"github.com/smolgo/smolgo/tokenizer"
	"github.com/smolgo/smolgo/toolcall"
)

// Markers are what a chat template says about its model's output, read
// by rendering probe conversations (DetectMarkers).
type Markers struct {
	// EndOfTurn lists the texts the template writes right after an
	// assistant's answer (<|im_end|>, <|eot_id|>, <｜end▁of▁sentence｜>).
	EndOfTurn []string
	// ReasoningOpen and ReasoningClose are the reasoning block's tags; ""
	// when the template shows no reasoning.
	ReasoningOpen, ReasoningClose string
	// StartsInReasoning tells, for enable_thinking unset, true and false,
	// whether the generation prompt ends inside an open reasoning block.
	StartsInReasoning [3]bool
	// Syntax is the tool-call syntax the template writes calls in (nil:
	// the template shows no calls, so llama.cpp's generic JSON is used).
	Syntax *ToolSyntaxEntry
	// ToolsShown says the template describes the tools it is given; when
	// it does not, the generic format's system text describes them.
	ToolsShown bool
	// CallsShown says the template writes an assistant's tool_calls back
	// into the prompt (some keep only the content: Granite 3.3, LFM2).
	CallsShown bool
	// ReasoningField names the message field the template reads an
	// earlier answer's reasoning from when it is not reasoning_content
	// (Solar Open's reasoning); "" for reasoning_content.
	ReasoningField string
	// StringArguments says the template writes a call's arguments only
	// when they are a string of JSON, as OpenAI's API sends them
	// (functionary v3.2's concatenates them), so the prompt passes them
	// so; otherwise they are an object, as transformers' users pass them.
	StringArguments bool
}

func (m *Markers) reasoningStarted(thinking *bool) bool {
	switch {
	case thinking == nil:
		return m.StartsInReasoning[0]
	case *thinking:
		return m.StartsInReasoning[1]
	}
	return m.StartsInReasoning[2]
}

// ToolSyntaxEntry is a row of the table of tool-call syntaxes: its name,
// how to recognise it in a template's render of a probe call, and the
// syntax that parses it (nil where smolgo only recognises it).
type ToolSyntaxEntry struct {
	Name string
	// Match reports whether call, the text a template wrote for an
	// assistant turn calling probeFn, is in this syntax.
	Match  func(call string) bool
	Syntax ToolSyntax
}

// The probe conversation's texts: unlikely in any template.
const (
	probeUser      = "PROBE_USER_Zq7"
	probeAnswer    = "PROBE_ANSWER_Zq7"
	probeReasoning = "PROBE_REASONING_Zq7"
	probeFn        = "probe_fn_zq7"
	probeArg       = "probe_arg_zq7"
	probeResult    = "PROBE_RESULT_Zq7"
)

var (
	syntaxMu       sync.RWMutex
	providedSyntax = map[string]ToolSyntax{}
)

// ProvideToolSyntax gives the table of tool-call syntaxes the parser and
// grammar of the syntax named name ("llama3-json", "granite", "phi4",
// "lfm2", "harmony", "qwen3-coder-xml", "seed-oss-xml", "minimax-m2-xml"),
// for templates that write calls so; a family package calls it in its
// init, as it calls Register.
func ProvideToolSyntax(name string, s ToolSyntax) {
	syntaxMu.Lock()
	providedSyntax[name] = s
	syntaxMu.Unlock()
}

func provided(name string) ToolSyntax {
	syntaxMu.RLock()
	defer syntaxMu.RUnlock()
	return providedSyntax[name]
}

// ToolSyntaxes is the table, first match wins: each syntax by the
// markers it writes around a call of the probe function.
func ToolSyntaxes() []ToolSyntaxEntry {
	has := func(parts ...string) func(string) bool {
		return func(s string) bool {
			for _, p := range parts {
				if !strings.Contains(s, p) {
					return false
				}
			}
			return true
		}
	}
	fn := `"` + probeFn + `"`
	return []ToolSyntaxEntry{
		{Name: "harmony", Match: has("to=functions." + probeFn), Syntax: provided("harmony")},
		// Syntaxes smolgo recognises but does not parse yet (no Syntax):
		// named here so that a prompt with tools fails saying so, rather
		// than falling back to the generic JSON format, which these models
		// were not trained on. Each comes before the rows that share parts
		// of its markers (Seed-OSS wraps Qwen3-Coder's XML, MiniMax-M3 and
		// Hunyuan write <tool_call>-like tags).
		{Name: "DeepSeek DSML", Match: has("<｜DSML｜invoke name=\"" + probeFn + `"`)},
		{Name: "Seed-OSS", Match: has("<seed:tool_call>", "<function="+probeFn+">"), Syntax: provided("seed-oss-xml")},
		{Name: "MiniMax-M2 XML", Match: has("<minimax:tool_call>", `<invoke name="`+probeFn+`">`), Syntax: provided("minimax-m2-xml")},
		{Name: "MiniMax-M3", Match: has("]<]minimax[>[<tool_call>", `<invoke name="`+probeFn+`">`)},
		{Name: "Muse Glimmer", Match: has("<atem:function_calls>", `<atem:invoke name="`+probeFn+`">`)},
		{Name: "Hunyuan", Match: has("<tool_call:opensource>" + probeFn)},
		{Name: "Kimi K3", Match: has(`<|open|>call tool="` + probeFn + `"`)},
		{Name: "Gemma 4", Match: has("<|tool_call>call:" + probeFn + "{")},
		{Name: "Solar Open", Match: has("<|tool_call:name|>" + probeFn)},
		{Name: "MiniCPM5", Match: has(`<function name="`+probeFn+`">`, "<param name=")},
		{Name: "Apertus", Match: has("<|tools_prefix|>", `"`+probeFn+`": `)},
		{Name: "Apriel", Match: has("<tool_calls>[", `"name": `+fn, "</tool_calls>"), Syntax: AprielTools},
		{Name: "MiniMax-M1", Match: has("<tool_calls>\n{", `"name": `+fn, "</tool_calls>"), Syntax: MiniMaxM1Tools},
		{Name: "Nemotron v2", Match: has("<TOOLCALL>[", `"name": `+fn, "</TOOLCALL>"), Syntax: NemotronTools},
		{Name: "GigaChat", Match: has("function call<|role_sep|>", `"name": `+fn)},
		{Name: "GigaChat", Match: has("<|function_call|>", `"name": `+fn)},
		{Name: "Firefunction v2", Match: has("functools[", `"name": `+fn), Syntax: FirefunctionTools},
		{Name: "Qwen3-Coder XML", Match: has("<function="+probeFn+">", "<parameter="+probeArg+">"), Syntax: provided("qwen3-coder-xml")},
		{Name: "GLM", Match: has("<tool_call>"+probeFn, "<arg_key>"+probeArg+"</arg_key>"), Syntax: GLMTools},
		{Name: "Kimi K2", Match: has("<|tool_call_begin|>", probeFn), Syntax: KimiTools},
		{Name: "DeepSeek", Match: has("<｜tool▁call▁begin｜>", probeFn), Syntax: DeepSeekTools},
		// Hermes: a JSON object right inside <tool_call>, so that other
		// syntaxes writing <tool_call> around XML or plain names are not
		// taken for it.
		{Name: "Hermes", Match: func(s string) bool {
			i := strings.Index(s, "<tool_call>")
			if i < 0 {
				return false
			}
			body := strings.TrimLeftFunc(s[i+len("<tool_call>"):], isSpace)
			return strings.HasPrefix(body, "{") && strings.Contains(body, `"name": `+fn) && strings.Contains(body, "</tool_call>")
		}, Syntax: Hermes},
		{Name: "Mistral", Match: has("[TOOL_CALLS]", probeFn), Syntax: MistralTools},
		{Name: "Command R7B", Match: has("<|START_ACTION|>", probeFn), Syntax: CommandR7BTools},
		{Name: "Command R+", Match: has("Action:", `"tool_name": `+fn), Syntax: CommandRPlusTools},
		{Name: "functionary v3.2", Match: has(">>>" + probeFn), Syntax: FunctionaryV32Tools},
		{Name: "functionary v3.1", Match: has("<function=" + probeFn + ">"), Syntax: FunctionaryTools},
		{Name: "LFM2 Python calls", Match: has("<|tool_call_start|>[" + probeFn + "("), Syntax: provided("lfm2")},
		{Name: "Phi-4", Match: has("<|tool_call|>", "<|/tool_call|>", fn), Syntax: provided("phi4")},
		{Name: "Granite", Match: has("<|tool_call|>", fn), Syntax: provided("granite")},
		{Name: "Llama 3 JSON", Match: func(s string) bool {
			return strings.Contains(s, `{"name": `+fn+`, "parameters": `) || strings.Contains(s, `"name": `+fn+`, "parameters"`)
		}, Syntax: provided("llama3-json")},
		{Name: "generic JSON", Match: has(`"tool_calls"`, fn), Syntax: GenericJSON},
	}
}

// DetectMarkers renders probe conversations with the template and reads
// the markers out of the renders; renders the template refuses leave the
// markers they would show unset.
func DetectMarkers(tt *templateText) *Markers {
	m := &Markers{}
	render := func(msgs []jinja.Value, tools []json.RawMessage, addGen bool, thinking *bool) string {
		out, err := tt.renderValues(msgs, tools, addGen, thinking, nil)
		if err != nil {
			return ""
		}
		return out
	}
	msg := func(s string) jinja.Value { return jinja.MustJSON(s) }
	user := msg(`{"role": "user", "content": "` + probeUser + `"}`)

	// The end of an answer: what follows it.
	if out := render([]jinja.Value{user, msg(`{"role": "assistant", "content": "` + probeAnswer + `"}`)}, nil, false, nil); out != "" {
		if i := strings.LastIndex(out, probeAnswer); i >= 0 {
			if eot := leadingMarker(out[i+len(probeAnswer):]); eot != "" {
				m.EndOfTurn = []string{eot}
			}
		}
	}

	// Reasoning: the tags around an answer's reasoning, which templates
	// read from reasoning_content or another field (thinking: gpt-oss,
	// LFM2.5; reasoning: Solar Open), some only on a turn that calls a
	// tool (gpt-oss's); or else a known pair the template's text holds.
	tool := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "` + probeFn +
		`", "description": "A probe.", "parameters": {"type": "object", "properties": {"` + probeArg + `": {"type": "string", "description": "A probe argument."}}, "required": ["` + probeArg + `"]}}}`)}
	probeCall := `"tool_calls": [{"id": "a1B2c3D4e", "type": "function", "function": {"name": "` + probeFn + `", "arguments": {"` + probeArg + `": "v"}}}]`
	reasoningProbes := []struct {
		field string
		msg   jinja.Value
		tools []json.RawMessage
	}{
		{"reasoning_content", tt.messageValue(engine.Message{Role: "assistant", Content: probeAnswer, ReasoningContent: probeReasoning}), nil},
		{"thinking", msg(`{"role": "assistant", "content": "` + probeAnswer + `", "thinking": "` + probeReasoning + `"}`), nil},
		{"reasoning", msg(`{"role": "assistant", "content": "` + probeAnswer + `", "reasoning": "` + probeReasoning + `"}`), nil},
		{"thinking", msg(`{"role": "assistant", "content": "", "thinking": "` + probeReasoning + `", ` + probeCall + `}`), tool},
	}
	for _, pr := range reasoningProbes {
		out := render([]jinja.Value{user, pr.msg}, pr.tools, false, nil)
		i := strings.Index(out, probeReasoning)
		if i < 0 {
			continue
		}
		open := widenTrailing(out[:i], trailingMarker(out[:i]))
		close := widenLeading(out[i+len(probeReasoning):], leadingMarker(out[i+len(probeReasoning):]))
		if open != "" && close != "" && open != close {
			m.ReasoningOpen, m.ReasoningClose = open, close
		}
		if pr.field != "reasoning_content" {
			m.ReasoningField = pr.field
		}
		break
	}
	if m.ReasoningOpen == "" {
		for _, pair := range reasoningPairs {
			if tt.mentions(pair[0]) && tt.mentions(pair[1]) {
				m.ReasoningOpen, m.ReasoningClose = pair[0], pair[1]
				break
			}
		}
	}
	if m.ReasoningOpen != "" {
		yes, no := true, false
		base := render([]jinja.Value{user}, nil, false, nil)
		for i, th := range []*bool{nil, &yes, &no} {
			gen := render([]jinja.Value{user}, nil, true, th)
			gen = strings.TrimRightFunc(strings.TrimPrefix(gen, base), isSpace)
			m.StartsInReasoning[i] = strings.HasSuffix(gen, m.ReasoningOpen)
		}
	}

	// Tools: shown when a render with a tool differs from one without.
	without := render([]jinja.Value{user}, nil, true, nil)
	with := render([]jinja.Value{user}, tool, true, nil)
	m.ToolsShown = with != "" && with != without && strings.Contains(with, probeFn)

	// The call syntax: the template's render of an assistant turn calling
	// the probe function (ids of 9 letters and digits, as Mistral's
	// templates ask).
	call := msg(`{"role": "assistant", "content": "", "tool_calls": [{"id": "a1B2c3D4e", "type": "function", "function": {"name": "` +
		probeFn + `", "arguments": {"` + probeArg + `": "v"}}}]}`)
	result := msg(`{"role": "tool", "content": "` + probeResult + `", "tool_call_id": "a1B2c3D4e", "name": "` + probeFn + `"}`)
	out := render([]jinja.Value{user, call, result}, tool, true, nil)
	if out == "" {
		out = render([]jinja.Value{user, call}, tool, false, nil)
	}
	if out == "" { // templates that want the arguments as a JSON string (functionary v3.2)
		call = msg(`{"role": "assistant", "content": "", "tool_calls": [{"id": "a1B2c3D4e", "type": "function", "function": {"name": "` +
			probeFn + `", "arguments": "{\"` + probeArg + `\": \"v\"}"}}]}`)
		out = render([]jinja.Value{user, call, result}, tool, true, nil)
		m.StringArguments = out != ""
	}
	if i := strings.Index(out, probeUser); i >= 0 {
		out = out[i+len(probeUser):]
	}
	table := ToolSyntaxes()
	m.CallsShown = strings.Contains(out, probeFn)
	if m.CallsShown {
		for _, e := range table {
			if e.Match(out) {
				m.Syntax = &e
				break
			}
		}
	}
	if m.Syntax == nil {
		// Templates that never write an assistant's calls back (they keep
		// them in the content) but name the syntax's markers.
		for _, mk := range mentionedSyntaxes {
			if tt.mentions(mk[0]) && (mk[1] == "" || tt.mentions(mk[1])) {
				for _, e := range table {
					if e.Name == mk[2] {
						m.Syntax = &e
						return m
					}
				}
			}
		}
	}
	return m
}

// mentionedSyntaxes names a syntax by the markers a template's text holds
// (first marker, second marker or "", syntax), for templates whose renders
// show no calls.
var mentionedSyntaxes = [][3]string{
	{"<｜tool▁call▁begin｜>", "", "DeepSeek"},
	// Kimi K2's templates build the calls with list.append, which the
	// sandbox refuses, so their renders of a call fail.
	{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "Kimi K2"},
	// Command R+'s template wants tools in Cohere's own shape (no
	// "function" object), so its render of the probe tool fails.
	{"Action:", `"tool_name": `, "Command R+"},
	// Firefunction v2's template reads a "functions" variable nobody sets.
	{"functools[", "", "Firefunction v2"},
	{"<|tool_call_start|>", "", "LFM2 Python calls"},
	// LFM2's and LFM2.5's templates list the tools so, as llama.cpp
	// recognises them (common/parsers/lfm2.cpp), and keep only an
	// answer's content.
	{"<|tool_list_start|>", "<|tool_list_end|>", "LFM2 Python calls"},
	{"List of tools: [", "", "LFM2 Python calls"},
	{"<|tool_call|>", "<|/tool_call|>", "Phi-4"},
	{"<|tool_call|>", "", "Granite"},
	{"[TOOL_CALLS]", "", "Mistral"},
	{"<|python_tag|>", "", "Llama 3 JSON"},
	{"<tool_call>", "</tool_call>", "Hermes"},
}

// reasoningPairs are the reasoning tags in use, for templates that show
// no reasoning_content but name their tags.
var reasoningPairs = [][2]string{
	{"<think>", "</think>"}, {"<seed:think>", "</seed:think>"}, {"[THINK]", "[/THINK]"},
	{"◁think▷", "◁/think▷"}, {"<|START_THINKING|>", "<|END_THINKING|>"}, {"<thinking>", "</thinking>"},
	// Apertus's inner monologue; Gemma 4's thought channel (its template
	// shows reasoning only on turns that call tools).
	{"<|inner_prefix|>", "<|inner_suffix|>"}, {"<|channel>thought", "<channel|>"},
	// Apriel 1.6's are phrases: the generation prompt writes the first,
	// the answer follows the second.
	{"Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"},
}

// mentions reports whether the template's text holds s.
func (tt *templateText) mentions(s string) bool { return strings.Contains(tt.src, s) }

func isSpace(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '\r' }

// markerRE-free helpers: a marker is a tag (<…>, [ABC], <｜…｜>, ◁…▷)
// at the start or end of a text, past white space.

// leadingMarker returns the tag s starts with, after white space.
func leadingMarker(s string) string {
	s = strings.TrimLeftFunc(s, isSpace)
	for _, p := range markerPairs {
		if strings.HasPrefix(s, p[0]) {
			if j := strings.Index(s[len(p[0]):], p[1]); j >= 0 && j < 64 {
				tag := s[:len(p[0])+j+len(p[1])]
				if !strings.ContainsAny(tag, " \n") || strings.HasPrefix(tag, "<|") {
					return tag
				}
			}
		}
	}
	return ""
}

// trailingMarker returns the tag s ends with, before white space.
func trailingMarker(s string) string {
	s = strings.TrimRightFunc(s, isSpace)
	for _, p := range markerPairs {
		if strings.HasSuffix(s, p[1]) {
			body := s[:len(s)-len(p[1])]
			if j := strings.LastIndex(body, p[0]); j >= 0 && len(body)-j < 64 {
				tag := s[j:]
				if !strings.ContainsAny(tag, " \n") {
					return tag
				}
			}
		}
	}
	return ""
}

// Reasoning tags of a tag, a word or two and a tag (Kimi K3's
// <|open|>think<|sep|>, gpt-oss's <|channel|>analysis<|message|>, Muse
// Glimmer's <|start|>assistant to=self<|message|>) are read whole: a
// <|…|> marker that a short line of text and another <|…|> tag come
// right before (widenTrailing) or after (widenLeading) is widened to
// them; not to a turn's header, whose words are only the role
// (Solar Open's <|begin|>assistant<|think|> opens with <|think|>).
const maxTagWords = 32

// widenTrailing widens tag, the marker s ends with (past white space).
func widenTrailing(s, tag string) string {
	if !strings.HasPrefix(tag, "<|") {
		return tag
	}
	before := strings.TrimRightFunc(s, isSpace)
	before = before[:len(before)-len(tag)]
	k := strings.LastIndex(before, "|>")
	if k < 0 {
		return tag
	}
	words := before[k+2:]
	start := strings.LastIndex(before[:k], "<|")
	if words == "" || words == "assistant" || words == "model" || len(words) > maxTagWords || strings.ContainsAny(words, "\n<>|") || start < 0 || strings.ContainsAny(before[start:k+2], " \n") {
		return tag
	}
	return before[start:] + tag
}

// widenLeading widens tag, the marker s starts with (past white space).
func widenLeading(s, tag string) string {
	if !strings.HasPrefix(tag, "<|") {
		return tag
	}
	after := strings.TrimLeftFunc(s, isSpace)[len(tag):]
	k := strings.Index(after, "<|")
	if k <= 0 || k > maxTagWords || strings.ContainsAny(after[:k], "\n<>|") {
		return tag
	}
	end := strings.Index(after[k:], "|>")
	if end < 0 || strings.ContainsAny(after[k:k+end], " \n") {
		return tag
	}
	return tag + after[:k+end+2]
}

var markerPairs = [][2]string{{"<", ">"}, {"[", "]"}, {"◁", "▷"}}

// MarkedSyntax is a tool-call syntax whose calls sit between markers
// (chatfmt.MarkedCalls: DeepSeek's, Kimi K2's, Mistral's, functionary
// v3.1's, GLM's). Its markers are special tokens of the models'
// vocabularies, which a grammar (spelled with ordinary tokens) cannot
// write, so a forced call is an error saying so.
type MarkedSyntax struct {
	Name  string
	Calls chatfmt.MarkedCalls
}

// NewParser implements ToolSyntax.
func (m MarkedSyntax) NewParser(*tokenizer.Tokenizer) ToolParser {
	return chatfmt.NewMarkedParser(m.Calls)
}

// Grammar implements ToolSyntax: an error.
func (m MarkedSyntax) Grammar(context.Context, []grammar.Function, grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return nil, errors.New("family: " + m.Name + "'s tool calls are written with special tokens, which a grammar cannot force (tool_choice required or a named function); use tool_choice auto")
}

// The marker syntaxes of the table.
var (
	DeepSeekTools    ToolSyntax = MarkedSyntax{"DeepSeek", chatfmt.DeepSeekCalls}
	KimiTools        ToolSyntax = MarkedSyntax{"Kimi K2", chatfmt.KimiCalls}
	MistralTools     ToolSyntax = MarkedSyntax{"Mistral", chatfmt.MistralCalls}
	FunctionaryTools ToolSyntax = MarkedSyntax{"functionary v3.1", chatfmt.FunctionaryCalls}
	GLMTools         ToolSyntax = MarkedSyntax{"GLM", chatfmt.GLMCalls}
)

// unparsedSyntax is a syntax the table recognises but smolgo does not
// parse yet: a prompt with tools fails (render says so), and an answer is
// all text.
type unparsedSyntax struct{ name string }

func (u unparsedSyntax) NewParser(*tokenizer.Tokenizer) ToolParser { return textParser{} }

func (u unparsedSyntax) Grammar(context.Context, []grammar.Function, grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return nil, errors.New("family: the chat template writes tool calls as " + u.name + ", which smolgo does not parse yet")
}

type textParser struct{}

func (textParser) Push(_ int32, text string) []toolcall.Event {
	if text == "" {
		return nil
	}
	return []toolcall.Event{{Kind: toolcall.KindText, Text: text}}
}
func (textParser) Flush() []toolcall.Event { return nil }
