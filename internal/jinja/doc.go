// Package jinja renders the Jinja chat templates that GGUF files carry
// (tokenizer.chat_template), as Hugging Face transformers'
// apply_chat_template renders them with Python's jinja2: trim_blocks and
// lstrip_blocks on, the loop controls, transformers' tojson (json.dumps
// with Python's separators, keys in the caller's order, ensure_ascii off),
// raise_exception and strftime_now, and the {% generation %} block.
//
// Values follow Python: dicts keep their keys' order, {{ }} prints str(v)
// (None, True, a list's repr with single quotes), ints and floats print as
// Python prints them, jinja2's Undefined prints as nothing and fails when
// used further, filters such as map and selectattr return one-shot
// generators (always true, not JSON), and the safe and escape filters
// make Markup strings that + escapes the other operand against.
//
// The engine runs sandboxed as jinja2's ImmutableSandboxedEnvironment
// does: no file or network access (include, import and extends are
// errors), private attributes and the methods that mutate lists and dicts
// refused, range() at most 100,000 long. On top of that every render is
// bounded (Limits: steps, nesting of macro calls, the size of the output
// and of every value built, wall-clock time), so a hostile template gets
// an *Error of kind ErrLimit instead of hanging or exhausting the process.
//
// The test renders a corpus of 81 chat templates (llama.cpp's
// models/templates, the families' and SmolLM3's) on 16 conversations
// and compares with Python jinja2's output byte for byte
// (testdata/render.py writes the references).
package jinja
