// Package chat turns a conversation into IBM Granite's prompt text and
// reads the tool calls Granite answers with.
//
// # Rendering
//
// Render reproduces three Granite chat templates (Options.Template; Detect
// tells which one a GGUF file carries), byte for byte as Hugging Face
// transformers renders them, checked against jinja2 on 59 reference
// conversations (testdata/render.py writes them from the copies llama.cpp
// keeps in models/templates). Every turn is
// <|start_of_role|>role<|end_of_role|>…<|end_of_text|>\n and the generation
// prompt is <|start_of_role|>assistant<|end_of_role|>; no content is
// trimmed. Roles other than system, user, assistant and tool are an error.
//
// Granite 3.3 (granite-3.3-2b-instruct, granite-3.3-8b-instruct):
//
//   - A first system message is the system turn, as written. Without one
//     the template writes its own: "Knowledge Cutoff Date: April 2024.
//     Today's Date: July 08, 2025. You are Granite, developed by IBM."
//     (Options.Now gives the date) and one addition: instructions for
//     tools (answer "<|tool_call|> followed by a JSON list of tools
//     used"), for documents, for both, or, with none of them,
//     Options.Thinking's request to reason in <think></think> and answer in
//     <response></response>, or else " You are a helpful AI assistant.".
//     The thinking switch does nothing else.
//   - Tools follow as an available_tools turn holding them as one JSON
//     array indented by 4 spaces; then each document as a turn of its
//     own, <|start_of_role|>document {"document_id": "…"}<|end_of_role|>
//     and its text.
//   - Every other message is a turn of its role, a tool result included
//     (<|start_of_role|>tool<|end_of_role|>). The template shows no tool
//     calls, so Render writes an assistant's calls after its content as
//     Granite 3 writes them, <|tool_call|> and the JSON list
//     (FormatCalls); the reference renders pass the messages so rewritten.
//   - Options.Controls (citations, hallucinations, length, originality)
//     are written, as JSON, after "assistant" in the generation prompt;
//     with documents, "citations" and "hallucinations" also add their
//     instructions to the default system prompt.
//   - The generation prompt follows the last message after the system
//     turn: a conversation of a system message alone has none.
//
// Granite 4.0 (granite-4.0-micro and the hybrid 4.0-h models) and 4.1:
//
//   - The system turn is the first system message's text, then, each
//     after a blank line, a tools section (the tools as JSON, one per
//     line, inside <tools></tools>, and how to answer with <tool_call>
//     blocks) and a documents section (likewise, inside
//     <documents></documents>). When all of that is empty, Granite 4.0
//     writes its default system prompt (DefaultSystem40) and Granite 4.1
//     none.
//   - An assistant's tool calls follow its content, each a
//     <tool_call>\n{"name": "…", "arguments": …}\n</tool_call> block, a
//     line break between them; tool results in a row become one user turn,
//     each result inside <tool_response></tool_response> lines.
//   - A later system message is a system turn in place.
//
// Neither shows reasoning (ReasoningContent).
//
// The template's markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller, for tokenizer.EncodeMarked.
//
// # Tool calls
//
// Granite 4 writes Hermes <tool_call> blocks, which package toolcall
// reads and grammar.ToolCalls forces. Granite 3 writes the special token
// <|tool_call|> and then its calls as a JSON list,
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// which ToolParser reads while tokens stream in, as llama.cpp's Granite
// format did, and emits package toolcall's events. CallSchema returns the
// JSON schema of the list; compiled with grammar.FromJSONSchema it forces
// a call.
//
// In thinking mode Granite 3.3 answers <think>…</think><response>…
// </response>: a reasoning parser (package internal/chatfmt/think, as package
// family runs it) takes out the first, ResponseFilter the tags of the
// second.
package chat
