// Package chat turns a conversation into Llama 3.2's prompt text and reads
// the tool calls Llama 3.2 answers with.
//
// # Rendering
//
// Render reproduces Llama 3.2's chat template (the one published with
// meta-llama/Llama-3.2-3B-Instruct, shared by the 1B, as llama.cpp keeps it
// in models/templates) byte for byte as Hugging Face transformers renders
// it, checked against jinja2 on 22 reference conversations
// (testdata/render.py writes them). The text starts with <|begin_of_text|>,
// as the template writes it; each turn is <|start_header_id|>role
// <|end_header_id|>\n\n…<|eot_id|>. The template:
//
//   - Always writes a system turn: "Cutting Knowledge Date: December 2023",
//     "Today Date: 08 Jul 2025" (Options.Now), then the first message's
//     text when it is a system message. With tools it starts with
//     "Environment: ipython".
//   - Lists the tools, each as JSON indented by 4 spaces, with instructions
//     to answer {"name": function name, "parameters": …}: by default in the
//     first user message, before its text (which must then exist and be a
//     user message, or Render fails); with Options.ToolsInSystem, in the
//     system turn, as llama.cpp renders it.
//   - Trims the white space around every content (Jinja's trim).
//   - Writes a system message anywhere else as a system turn of its own,
//     in place: several system messages are fine.
//   - Writes an assistant's tool call as the JSON it stands for,
//     {"name": "…", "parameters": {…}} (FormatCall), and nothing else:
//     the message's text is dropped. One call per message: the template
//     raises on more, and so does Render (split them into several
//     assistant messages, the results between them).
//   - Writes a tool result as an ipython turn whose content is a JSON
//     string: Jinja counts a string as iterable, so the template passes it
//     through tojson ("21 °C" is written "\"21 °C\"").
//   - Shows no reasoning (ReasoningContent).
//
// Roles other than system, user, assistant and tool are an error (the
// template would write any role name into a header).
//
// The template's markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller, for tokenizer.EncodeMarked. Tokenize without adding a
// second BOS.
//
// # Tool calls
//
// Llama 3.2 has no tool-call tags: it calls a tool by answering with the
// JSON object alone, sometimes after <|python_tag|>. ToolParser reads that
// while tokens stream in, as llama.cpp's Llama 3.x format does, and emits
// package toolcall's events. CallSchema returns the JSON schema of such an
// answer; compiled with grammar.FromJSONSchema it forces a call. Llama 3.1
// ends a tool call with <|eom_id|> rather than <|eot_id|>; llama.cpp stops
// on both.
package chat
