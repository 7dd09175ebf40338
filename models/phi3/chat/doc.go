// Package chat turns a conversation into the prompt text of Microsoft's Phi
// models of architecture "phi3" and reads their tool calls: Phi-4-mini
// (microsoft/Phi-4-mini-instruct) and Phi-3.5-mini
// (microsoft/Phi-3.5-mini-instruct), which share the block but not the
// template.
//
// # Rendering
//
// Render reproduces the chat_template each model publishes (testdata/README.md
// says where the copies come from) byte for byte as Hugging Face
// transformers renders it, checked against jinja2 on 40 reference
// conversations, 19 per template and 2 more for Phi-4-mini
// (testdata/render.py writes them). Options.Template picks the template;
// Detect names the one a GGUF file carries.
//
// Phi-4-mini writes every message as <|role|>content<|end|>, with nothing
// between turns, and ends with <|assistant|> (AddGenerationPrompt) or the
// end-of-sequence token <|endoftext|>:
//
//	<|system|>Be brief.<|end|><|user|>Hi!<|end|><|assistant|>
//
// Contents are written as they are, white space included; a system
// message may stand anywhere; there is no reasoning (ReasoningContent is
// not shown) and the template raises no errors.
//
// Its template reads no tools argument and no tool calls: what it shows is
// what the messages hold, and the model card says how tools go in. So
// before rendering:
//
//   - Options.Tools become the "tools" of the system message, which the
//     template writes after its content between <|tool|> and <|/tool|>:
//     the function objects (the "function" of each OpenAI-form tool, keys
//     as given) in a JSON list, printed the way Python's json.dumps prints
//     it (", " and ": ", non-ASCII kept), as the model card passes
//     json.dumps(tools). Only the first message can carry them: without a
//     system message first, one with DefaultToolSystem (the model card
//     example's system text) is added.
//   - An assistant message's ToolCalls are appended to its content the way
//     the model writes calls: <|tool_call|>[{"name": …, "arguments": {…}},
//     …]<|/tool_call|>, the list printed by json.dumps. Call ids are not
//     shown.
//   - A tool result (role tool) is rendered as the template renders any
//     role: <|tool|>result<|end|>. The template has nothing else for it,
//     and Microsoft's own function-calling example appends results that
//     way; the tool's name and call id are not shown.
//
// Phi-3.5-mini writes <|role|>\ncontent<|end|>\n for system (when its
// content is not empty), user and assistant messages, ends with
// <|assistant|>\n or <|endoftext|>, and silently drops any other role. It
// knows nothing of tools, so it gets llama.cpp's generic JSON format, as
// Gemma 3 does (package models/gemma3/chat has the details): with tools, the
// system text asks for JSON answers and lists the tools with an example
// call; an assistant's calls become the JSON object {"tool_calls": […]} as
// its content; a tool result becomes a user turn holding {"tool_response":
// {…}}, so no result is dropped. minja cut its example out of a render of
// a whole conversation, so with this template it ends with
// <|end|>\n<|endoftext|>: the end-of-sequence token stands in the system
// text, as it did in llama.cpp.
//
// Where a template would silently drop a message (a role other than
// system, user, assistant and tool) or its tool calls (on a message that
// is not the assistant's), Render returns an error naming the message's
// index instead.
//
// The templates' markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller (contents, the tool list, the JSON of calls and results),
// for tokenizer.EncodeMarked.
//
// # Tool calls
//
// Phi-4-mini calls tools by writing a JSON list of calls between its
// <|tool_call|> and <|/tool_call|> tokens (200025 and 200026):
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>
//
// Microsoft documents the pieces: the model card puts tools in the system
// turn between <|tool|> and <|/tool|>; onnxruntime-genai's examples say
// Phi-4-mini "uses the <|tool_call|> and <|/tool_call|> tokens" around a
// call; the PhiCookBook's function-calling notebooks show the answer
// between them as [{"name": …, "arguments": {…}}, …] and read it with
// json.loads. llama.cpp has no format of its own for Phi-4-mini (its
// common/chat*.cpp names none; the releases with minja gave it the generic
// JSON format, since the template reads no tools). vLLM's "functools[…]"
// is the syntax of vLLM's own replacement template, not of this one, and
// is not read here.
//
// NewToolParser reads the calls while the answer streams, tags as tokens
// or as text; CallGrammar forces an answer to be calls of given functions
// (tool_choice "required" or a named function). Phi-3.5-mini's format uses
// llama.cpp's generic JSON format (family.GenericJSON).
package chat
