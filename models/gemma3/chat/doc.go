// Package chat turns a conversation into Gemma 3's prompt text and, since
// Gemma 3 has no tool-call format of its own, gives it the JSON one
// llama.cpp used for such models.
//
// # Rendering
//
// Render reproduces Gemma 3's chat template (the chat_template of
// google/gemma-3-1b-it, which every Gemma 3 instruction-tuned checkpoint
// shares; testdata/README.md says where the copy comes from) byte for byte
// as Hugging Face transformers renders it, checked against jinja2 on 21
// reference conversations (testdata/render.py writes them). The text
// starts with <bos>; turns are <start_of_turn>role\n…<end_of_turn>\n, with
// the assistant's role called model. The template:
//
//   - Has no system turn: a first system message is written, untrimmed,
//     followed by a blank line, at the start of the first turn, which must
//     be the user's. A system message alone is an error (the template would
//     drop it).
//   - Requires the turns after it to alternate user, assistant, user, …,
//     and raises otherwise; Render returns an error naming the message.
//     A later system message can only stand where an assistant turn would,
//     and is then written as a system turn; elsewhere it is an error.
//   - Trims the white space around every content (Jinja's trim).
//   - Shows no reasoning (ReasoningContent).
//
// # Tools
//
// Gemma 3 has no tool tokens and its template shows neither tools, nor
// calls, nor results. llama.cpp handled such templates with its generic
// JSON format in the releases that rendered templates with minja; the
// current one (the source tools/llamaref builds) renders the template as
// it is, so the tools never reach the model. This package does what the
// generic format did:
//
//   - With Options.Tools, the system text gets an instruction to respond in
//     JSON (`tool_call` or `response`), then "You can call any of the
//     following tools to satisfy the user's requests: " with the tools
//     (type, function name, description, parameters) as indented JSON, and
//     an example call, which ends with the template's own <end_of_turn>.
//   - An assistant's tool calls are written as its content, the JSON
//     {"tool_calls": [{"name", "arguments", "id"}], "content": …}.
//   - A tool result becomes a user turn holding {"tool_response": {"tool",
//     "content", "tool_call_id"}}. So each result is a user turn, and two
//     results in a row break the alternation: Render returns an error, as
//     llama.cpp's render failed. Answer several calls with one result each,
//     in separate rounds.
//
// The model is to answer with one JSON object. ToolParser reads it
// (a call, or the "response" as text) and emits package toolcall's events;
// ResponseSchema is the schema llama.cpp imposed on every answer when tools
// were given (grammar.FromJSONSchema compiles it); with required it forces
// a call. Without the schema a 1B model will often answer in plain text,
// which the parser passes through as text.
//
// The template's markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller, for tokenizer.EncodeMarked. Tokenize without adding a
// second BOS.
package chat
