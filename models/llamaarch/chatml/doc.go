// Package chatml turns a conversation into the prompt text of SmolLM2's
// chat template (HuggingFaceTB/SmolLM2-135M/360M/1.7B-Instruct), a ChatML
// template, and tells that template apart from others (Recognize).
//
// # Rendering
//
// Render reproduces the template byte for byte as Hugging Face
// transformers renders it, checked against jinja2 on 23 reference
// conversations (testdata/render.py writes them; testdata/README.md says
// where the template comes from). Every message is a ChatML turn,
// <|im_start|>role\n…<|im_end|>\n, and:
//
//   - When the conversation does not open with a system message, a system
//     turn with the template's default text comes first: SmolLM2's
//     DefaultSystem ("You are a helpful AI assistant named SmolLM, trained
//     by Hugging Face"), or the one a fine-tune's template has
//     (Options.DefaultSystem).
//   - A system message anywhere else is a system turn of its own, in
//     place; an assistant message may come first.
//   - Contents are written as they are, white space included.
//   - SmolLM2 has no reasoning: ReasoningContent is not shown.
//
// The template would write any role it is given; Render accepts system,
// user, assistant and tool (chatfmt's check, as the other chat packages),
// so that a role cannot smuggle a marker into a header.
//
// The template's markers must become their token ids, but what users wrote
// must not: RenderSpans returns, beside the text, the byte ranges that came
// from the caller, for tokenizer.EncodeMarked.
//
// # Tools
//
// SmolLM2's template shows neither tools, nor calls, nor results. As for
// Gemma 3 (package models/gemma3/chat), this package does what llama.cpp's generic
// JSON tool format did for such templates in the releases that rendered
// them with minja:
//
//   - With Options.Tools, the system text gets an instruction to respond in
//     JSON (`tool_call` or `response`), then "You can call any of the
//     following tools to satisfy the user's requests: " with the tools as
//     indented JSON, and an example call. The system turn holding them
//     replaces the default one when the conversation has no system
//     message.
//   - An assistant's tool calls are written as its content, the JSON
//     {"tool_calls": [{"name", "arguments", "id"}], "content": …}.
//   - A tool result becomes a user turn holding {"tool_response": {"tool",
//     "content", "tool_call_id"}} (minja finds that the template shows the
//     tool role only when it shows calls, which it does not).
//
// The model is to answer with one JSON object; family.GenericJSON reads it
// and forces it with a grammar, as for Gemma 3. The example call assumes
// the file's EOS token is <|im_end|>, as in SmolLM2-Instruct's files
// (llama.cpp's minja cut the example out of a render and dropped the EOS
// after it).
//
// SmolLM2-1.7B-Instruct's model card shows another way to call tools, a
// system prompt of its own and calls as <tool_call>[…]</tool_call>; this
// package does not write that prompt.
package chatml
