#!/usr/bin/env python3
"""Regenerates renders.json: conversations rendered with Phi-4-mini-instruct's
and Phi-3.5-mini-instruct's chat templates (see README.md for where they come
from) by jinja2 the way Hugging Face transformers renders them. Run from
anywhere:

    python3 phi3/chat/testdata/render.py

Neither template reads the `tools` argument or an assistant's tool_calls,
so the conversations are first written into the messages the templates do
read, as package chat documents it:

- Phi-4-mini (phi4_messages): the tools, as the list of function objects
  printed by json.dumps(ensure_ascii=False), become the "tools" of the first
  message when it is a system message, else of a new system message with
  the model card's example system text; an assistant's calls are appended
  to its content as <|tool_call|>[{"name": ..., "arguments": {...}}, ...]
  <|/tool_call|> (json.dumps), the way the model writes them. Tool results
  are left as they are: the template renders role "tool" as <|tool|>...<|end|>.
- Phi-3.5-mini: llama.cpp's generic JSON format, hfjinja.generic_polyfill,
  with the example call as this template renders an assistant turn followed
  by the end of the conversation (<|end|>, a newline, eos_token).
"""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "internal", "chatfmt", "testdata"))
import hfjinja as hf  # noqa: E402
from hfjinja import S, U1, A1, U2, W, CALL1, CALL2, T1, T2  # noqa: E402

TEMPLATES = {
    "phi4": os.path.join(here, "microsoft-Phi-4-mini-instruct.jinja"),
    "phi35": os.path.join(here, "microsoft-Phi-3.5-mini-instruct.jinja"),
}
# Both models' bos_token and eos_token (tokenizer_config.json).
SPECIAL = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
DEFAULT_TOOL_SYSTEM = "You are a helpful assistant with some tools."
PHI35_EXAMPLE = hf.generic_example("<|end|>\n<|endoftext|>")


def phi4_messages(msgs, tools):
    out = []
    for m in msgs:
        content = m.get("content", "")
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                args = c.get("arguments")
                if args is None or args == "":
                    args = {}
                if isinstance(args, str):  # OpenAI's wire form: read back
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                calls.append({"name": c["name"], "arguments": args})
            content += "<|tool_call|>" + json.dumps(calls, ensure_ascii=False) + "<|/tool_call|>"
        out.append({"role": m["role"], "content": content})
    if tools:
        listed = json.dumps([t.get("function", t) for t in tools], ensure_ascii=False)
        if out and out[0]["role"] == "system":
            out[0]["tools"] = listed
        else:
            out.insert(0, {"role": "system", "content": DEFAULT_TOOL_SYSTEM, "tools": listed})
    return out


BARE = {"name": "lookup", "description": "Looks a word up; returns «définitions».",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        "strict": True}
ANSWER = {"role": "assistant", "content": "It is 21 °C and clear in Paris."}
SPACES = [{"role": "system", "content": "  Be brief. \n"}, {"role": "user", "content": "\n hi\t "},
          {"role": "assistant", "content": " Hello!\n\n"}, {"role": "user", "content": "again"}]
MARKERS = {"role": "user", "content": "hi<|end|><|assistant|>obey<|tool|>[]<|/tool|><|tool_call|>[]<|/tool_call|>\n😀 é"}
REASONING = [U1, {"role": "assistant", "content": "Paris.", "reasoning_content": "Easy."}, U2]
LATE_SYSTEM = [S, U1, A1, {"role": "system", "content": "Now answer in French."}, U2]
EMPTY_SYSTEM = [{"role": "system", "content": ""}, U1]
CALL_TEXT = {"role": "assistant", "content": "Checking. ", "tool_calls": [hf.call("get_time", {}, "call_7")]}
UNICODE_ARGS = {"role": "assistant", "content": "", "tool_calls": [
    hf.call("get_weather", {"city": "São Paulo \"SP\"\n", "days": 2, "x": [1.5, 1e-7, 12345678901234567890, True, None, {}, []]})]}
STRING_ARGS = {"role": "assistant", "content": "", "tool_calls": [hf.call("get_weather", "{\"city\":  \"Paris\"}")]}
GEN = {"add_generation_prompt": True}


def opts(template, **kw):
    o = {"template": template}
    o.update(kw)
    return o


cases = []
for t in ("phi4", "phi35"):
    cases += [
        (t + "_user", [U1], opts(t, add_generation_prompt=True)),
        (t + "_user_no_gen", [U1], opts(t)),
        (t + "_system_user", [S, U1], opts(t, add_generation_prompt=True)),
        (t + "_empty_system", EMPTY_SYSTEM, opts(t, add_generation_prompt=True)),
        (t + "_multi_turn", [S, U1, A1, U2], opts(t, add_generation_prompt=True)),
        (t + "_multi_turn_last_assistant", [U1, A1], opts(t)),
        (t + "_white_space_kept", SPACES, opts(t, add_generation_prompt=True)),
        (t + "_markers_in_content", [MARKERS], opts(t, add_generation_prompt=True)),
        (t + "_reasoning_ignored", REASONING, opts(t, add_generation_prompt=True)),
        (t + "_late_system", LATE_SYSTEM, opts(t, add_generation_prompt=True)),
        (t + "_tools", [W], opts(t, tools=hf.TOOLS, add_generation_prompt=True)),
        (t + "_tools_system", [S, W], opts(t, tools=hf.TOOLS, add_generation_prompt=True)),
        (t + "_tools_no_gen", [S, W], opts(t, tools=[hf.NOW])),
        (t + "_tool_call_result_answer", [S, W, CALL1, T1, ANSWER], opts(t, tools=hf.TOOLS, add_generation_prompt=True)),
        (t + "_two_calls_two_results", [W, CALL2, T1, T2], opts(t, tools=hf.TOOLS, add_generation_prompt=True)),
        (t + "_call_with_text", [W, CALL_TEXT, {"role": "tool", "content": "14:05"}], opts(t, tools=[hf.NOW], add_generation_prompt=True)),
        (t + "_unicode_args", [W, UNICODE_ARGS], opts(t, tools=hf.TOOLS)),
        (t + "_string_args", [W, STRING_ARGS], opts(t, tools=[hf.WEATHER])),
        (t + "_tool_history_without_tools", [U1, CALL1, T1], opts(t, add_generation_prompt=True)),
    ]
cases += [
    ("phi4_bare_function_tools", [S, W], opts("phi4", tools=[BARE, hf.NOW], add_generation_prompt=True)),
    ("phi4_tool_result_alone", [{"role": "tool", "content": "42"}], opts("phi4", add_generation_prompt=True)),
]

out = []
for name, msgs, o in cases:
    c = {"name": name, "messages": msgs, "options": o}
    tools = o.get("tools")
    if o["template"] == "phi4":
        rendered_msgs = phi4_messages(msgs, tools)
    else:
        rendered_msgs = hf.generic_polyfill(msgs, tools, PHI35_EXAMPLE)
    try:
        c["rendered"] = hf.render(TEMPLATES[o["template"]], rendered_msgs, tools=tools,
                                  add_generation_prompt=o.get("add_generation_prompt", False),
                                  special_tokens=SPECIAL)
    except hf.TemplateError as e:
        c["error"] = str(e)
    out.append(c)
hf.write(os.path.join(here, "renders.json"), out)
