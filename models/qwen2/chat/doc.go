// Package chat turns a conversation into Qwen2.5's prompt text and reads
// its tool calls.
//
// # Rendering
//
// Render reproduces Qwen2.5's chat template (the one published with
// Qwen/Qwen2.5-7B-Instruct, shared by the whole Qwen2.5 Instruct family,
// as llama.cpp keeps it in models/templates) byte for byte as Hugging Face
// transformers renders it, checked against jinja2 on 19 reference
// conversations (testdata/render.py writes them). The template writes
// ChatML turns, <|im_start|>role\n…<|im_end|>\n, and:
//
//   - The system turn is always there: the first message when it is a
//     system message, else DefaultSystem ("You are Qwen, created by Alibaba
//     Cloud. …"). With tools, the system text is followed by a blank line,
//     "# Tools" and the tool list, one JSON object per line (tojson, keys in
//     the order given), and the instructions to call them in <tool_call>
//     tags. A system message anywhere else is rendered as a system turn of
//     its own, in place: several system messages are fine.
//   - Contents are written as they are, white space included.
//   - Tool results (role tool) become user turns; consecutive results share
//     one user turn, each in its own <tool_response> block.
//   - An assistant message with ToolCalls is written as its text (if any)
//     and one <tool_call> block per call, {"name": "…", "arguments": {…}},
//     the arguments printed by tojson.
//   - Qwen2.5 has no reasoning: ReasoningContent is not shown.
//
// Errors. Where the template would silently drop a message (a role other
// than system, user, assistant and tool) or its tool calls (on a message
// that is not the assistant's), Render returns an error naming the
// message's index instead.
//
// The template's markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller, for tokenizer.EncodeMarked.
//
// # Reading the answer
//
// Tool calls are the Hermes form package toolcall reads (NewToolParser);
// grammar.ToolCalls forces one.
package chat
