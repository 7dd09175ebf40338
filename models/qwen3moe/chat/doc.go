// Package chat is Qwen3-Coder's chat format: it turns a conversation into
// the prompt text of Qwen3-Coder's chat template and reads the XML tool
// calls Qwen3-Coder writes.
//
// # Rendering
//
// Render reproduces Qwen3-Coder's chat template (llama.cpp's copy,
// models/templates/Qwen3-Coder.jinja) byte for byte as jinja2 renders it
// with the inputs llama.cpp gives it, checked on 25 reference
// conversations (testdata/render.py writes them). The template writes
// ChatML turns, <|im_start|>role\n…<|im_end|>\n, and:
//
//   - A system message first is the system turn. With tools the system
//     turn is always there (DefaultSystem without a system message): the
//     system text, then "# Tools" and each tool as XML, <function> with
//     its <name>, its <description> (trimmed; empty when it has none: llama.cpp
//     gives every tool one) and <parameters>, one <parameter> per
//     property with its name, type, trimmed description and every other
//     key of its schema as <key>value</key> (objects and lists as JSON,
//     other values as Python prints them: True, None), then the other keys
//     of the parameters schema (<required>…</required>), and the
//     instructions to call in the XML form. A system message anywhere else
//     is a system turn of its own.
//   - An assistant turn with calls writes its content trimmed, then each
//     call as <tool_call>\n<function=NAME>\n, one
//     <parameter=KEY>\nVALUE\n</parameter>\n per argument (a string as
//     it is, an object or a list as JSON, any other value as Python prints
//     it), and </function>\n</tool_call>. Reasoning is never shown:
//     Qwen3-Coder does not reason.
//   - Tool results become a user turn of <tool_response> blocks; a result
//     that is the first message after the system message gets no user
//     header (the template's loop.previtem is undefined there).
//
// Where the template would silently drop a message (a role other than
// system, user, assistant and tool) or its tool calls, Render returns an
// error naming the message's index. RenderSpans returns, beside the text,
// the byte ranges that came from the caller, for tokenizer.EncodeMarked.
//
// # Reading the answer
//
// ToolParser reads the calls out of an answer as it streams, typing each
// parameter's raw text by the tools' schemas as llama.cpp does;
// CallGrammar forces an answer to be calls. NewToolParserIn and
// CallGrammarIn do the same for the models that write these calls with
// other tags (Tags): Seed-OSS between <seed:tool_call> tags, MiniMax-M2 as
// blocks of <invoke name="…"> calls.
package chat
