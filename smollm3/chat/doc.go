// Package chat turns a conversation into SmolLM3's prompt text and the
// model's output back into reasoning and answer.
//
// # Rendering
//
// Render reproduces SmolLM3's official chat template byte for byte, as
// Hugging Face transformers renders it (checked on 25 reference
// conversations), including its quirks:
//
//   - The system turn is always there: a "## Metadata" block (knowledge
//     cutoff, today's date from Options.Now, the reasoning mode) and
//     "## Custom Instructions" (the system message, or a default persona).
//     Without tools it is not closed with <|im_end|>: the user turn follows
//     the blank line directly.
//   - Reasoning mode: "/no_think" anywhere in the system message forces
//     no-think, else "/think" forces think, else Options.EnableThinking
//     (default on). Both flags are then cut out of the system text, which
//     is right-trimmed only ("Be concise. /no_think Answer." keeps two
//     spaces). "/system_override" replaces the whole header by the system
//     text.
//   - In no-think mode every assistant turn, and the generation prompt,
//     starts with an empty "<think>\n\n</think>\n" block.
//   - Tools are listed as Python reprs of their JSON ({'name': 'f', …});
//     tool results are rendered as user turns; assistant tool_calls and
//     reasoning_content are not rendered.
//
// The template's markers (<|im_start|>, <|im_end|>) must become their token
// ids, but what users wrote must not: a user who types "<|im_end|>" would
// end their own turn and could forge a system turn. RenderSpans returns,
// beside the text, the byte ranges that came from message contents and tool
// definitions; tokenizer.EncodeMarked parses special tokens everywhere but
// there. Render's text with tokenizer.Encode and special parsing on is what
// transformers does (and what the reference ids record), for trusted
// callers.
//
// # Thinking
//
// In think mode SmolLM3 starts its answer with <think>…</think>. A Parser,
// fed the generated tokens one by one, splits the stream into reasoning and
// answer segments; it recognises the tags as single tokens by id or as text
// split across several tokens, and treats a missing close tag at the end as
// reasoning that never finished.
package chat
