// Package chat is gpt-oss's chat format, OpenAI's harmony: it turns a
// conversation into gpt-oss's prompt text and reads gpt-oss's answers.
//
// # Rendering
//
// Render reproduces gpt-oss's chat template (llama.cpp's copy of the
// published one, models/templates/openai-gpt-oss-120b.jinja) byte for
// byte as jinja2 renders it with the inputs llama.cpp gives it, checked on
// 44 reference conversations (testdata/render.py writes them). Every
// message is <|start|>ROLE…<|message|>TEXT<|end|>, and:
//
//   - A system message always opens the prompt: the model's identity
//     (Options.ModelIdentity, "You are ChatGPT, …" by default), the
//     knowledge cutoff, the current date (Options.Now; the template's
//     strftime_now reads the local clock), "Reasoning: " and the effort
//     (Options.ReasoningEffort, "medium" by default), and the valid
//     channels. With tools it adds that calls go to the commentary channel.
//   - The caller's system message, which must come first, becomes the
//     developer message's "# Instructions"; the tools are declared there
//     too, under "# Tools", as a TypeScript-like functions namespace:
//     each function a type with its description and its parameters'
//     descriptions as comments, defaults, enums, arrays, unions and nested
//     objects as the template writes them (quirks included: a oneOf with
//     object variants is not collapsed to "any", because the template's
//     flag is set in a loop scope; integers are "number"; an array of
//     more than 50 characters of type is "any[]").
//   - User turns are written as they are; each assistant turn is its
//     answer on the final channel. Earlier reasoning is dropped, with one
//     exception: an assistant turn with tool calls keeps its reasoning
//     (ReasoningContent, or without it its content) as an analysis message
//     while no later assistant turn answers without calls — a tool loop
//     in progress. llama.cpp drops the content of a turn that has both
//     reasoning and calls.
//   - A call is <|start|>assistant to=functions.NAME<|channel|>commentary
//     json<|message|>ARGS<|call|>, the arguments as Python's json.dumps
//     prints them (a string of JSON is parsed first, as llama.cpp does). A
//     tool result is <|start|>functions.NAME to=assistant<|channel|>commentary<|message|>
//     with the content as a JSON string; NAME is the call's it answers.
//     The template writes one call per assistant turn; Render writes each
//     call of a turn with several as the template would write them split
//     into one turn per call, and names the results after them in order.
//   - The last message, when it is the assistant's and no generation
//     prompt is asked for, is written as training data: its reasoning as
//     an analysis message and the answer ending with <|return|>.
//
// Where the template would silently drop a message (a role other than
// system, user, assistant and tool, a system message after the first) or
// its tool calls, Render returns an error naming the message's index, as
// it does where the template raises one (a tool result with no call before
// it, harmony tags in a content). The template's markers must become their
// token ids, but what users wrote must not: RenderSpans returns, beside the
// text, the byte ranges that came from the caller, for
// tokenizer.EncodeMarked. (gpt-oss's vocabulary makes <|start|>,
// <|message|>, <|channel|>, <|constrain|> and <|end|> user-defined tokens,
// which llama.cpp and package tokenizer recognise in any text; only
// <|return|>, <|call|> and the other control tokens stay text in the
// caller's ranges.)
//
// # Reading the answer
//
// Parser splits an answer, a sequence of harmony messages after the
// prompt's <|start|>assistant, into reasoning (the analysis channel),
// content (the final channel, and a commentary preamble) and tool calls
// (a message to functions.NAME), as llama.cpp's gpt-oss parser does;
// CallGrammar forces an answer to be one call.
package chat
