// Package chat turns a conversation into Qwen3's prompt text and reads
// Qwen3's answers: its reasoning block and its tool calls.
//
// # Rendering
//
// Render reproduces Qwen3's chat template (the one published with
// Qwen/Qwen3-0.6B, as llama.cpp keeps it in models/templates) byte for byte
// as Hugging Face transformers renders it, checked against jinja2 on 27
// reference conversations (testdata/render.py writes them). The template
// writes ChatML turns, <|im_start|>role\n…<|im_end|>\n, and:
//
//   - A system message first becomes the system turn. With tools, the
//     system turn is always there: the system text, a blank line, then
//     "# Tools" and the tool list, one JSON object per line (tojson, keys in
//     the order given), with the instructions to call them in <tool_call>
//     tags. A system message anywhere else is rendered as a system turn of
//     its own, in place: several system messages are fine.
//   - Contents are written as they are, white space included.
//   - Tool results (role tool) become user turns; consecutive results share
//     one user turn, each in its own <tool_response> block.
//   - An assistant's ToolCalls follow its text, one <tool_call> block each,
//     {"name": "…", "arguments": {…}} with the arguments printed as tojson
//     prints an object (a JSON string is printed as its text).
//
// Reasoning. Qwen3 writes <think>…</think> before its answer. The template
// keeps earlier reasoning only where it still matters: for the assistant
// turns after the last user message (a tool loop in progress), each turn
// with reasoning is written as "<think>\nreasoning\n</think>\n\nanswer",
// and so is the last message of the conversation when it is the
// assistant's (with an empty block if it has no reasoning). Earlier
// assistant turns show their answer only. The reasoning is ReasoningContent
// when it is set, otherwise whatever the content holds before its last
// </think> (SplitReasoning); an empty ReasoningContent counts as absent.
// EnableThinking false (the template's enable_thinking=false) ends the
// generation prompt with an empty think block, which is how Qwen3 is told
// to answer without reasoning; it changes nothing else.
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
// Qwen3's <think> block is SmolLM3's, and so is its parser: NewParser is
// package smollm3/chat's, under the same names here. Tool calls are the
// Hermes form package toolcall reads (NewToolParser); grammar.ToolCalls
// forces one.
package chat
