// Package chatfmt holds what the chat subpackages of the model families
// (models/qwen3/chat, models/qwen2/chat, models/llamaarch/chat,
// models/llamaarch/chatml, models/gemma3/chat, models/granite/chat,
// models/phi3/chat, models/gptoss/chat, models/qwen3moe/chat,
// smollm3/chat) and package family's tool-call syntaxes share:
//
//   - the renderers' common front: Check (ErrNoMessages for an empty
//     conversation, then CheckRoles), so that every template refuses the
//     same input with the same error;
//   - a text builder that records the byte ranges that came from the caller
//     (Builder: the spans a Format tokenizes as plain text);
//   - Python's notion of white space (Jinja's trim filter is str.strip);
//   - JSON printed the way the reference implementations print it (Python's
//     json.dumps, which is what Hugging Face's tojson filter calls, and
//     nlohmann::json's dump, which is what llama.cpp's template polyfills
//     call), and Python's str of a JSON value (PyStr, what Jinja prints);
//   - a streaming parser for answers that call tools by writing a bare JSON
//     object or list (LeadParser), and llama.cpp's generic tool format for
//     templates that show no tools (GenericTurns, GenericParser,
//     GenericSchema).
//
// Its subpackage think splits <think>…</think> reasoning from the answer as
// tokens stream in (SmolLM3's and Qwen3's chat packages name it, and family
// uses it for every format with Reasoning set).
//
// It is internal: the packages above are its API.
package chatfmt
