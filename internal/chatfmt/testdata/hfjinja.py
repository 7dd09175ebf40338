"""Renders chat templates the way Hugging Face transformers does, for the
reference renders of the chat subpackages (qwen3/chat, qwen2/chat,
llama3/chat, gemma3/chat). Each package's testdata/render.py imports this
module and writes its renders.json; the Go tests compare against that file
and need no Python.

transformers (src/transformers/utils/chat_template_utils.py) compiles a
template in an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension, its own tojson filter
(json.dumps with ensure_ascii=False, so no HTML escaping), and the globals
raise_exception and strftime_now; it renders with messages, tools,
documents, add_generation_prompt, the special tokens (bos_token, eos_token) and any
extra keyword arguments. So does render() here, with strftime_now reading a
fixed date instead of the clock.

Requires Debian's python3-jinja2 (3.1.x).
"""

import datetime
import json
import os

import jinja2
import jinja2.ext
import jinja2.sandbox


class TemplateError(Exception):
    pass


def _env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(template_path, messages, tools=None, add_generation_prompt=False,
           date="2025-07-08", special_tokens=None, documents=None, **kwargs):
    """Returns the render, or raises TemplateError with the template's message."""
    now = datetime.datetime.strptime(date, "%Y-%m-%d")
    with open(template_path, encoding="utf-8") as f:
        src = f.read()
    tmpl = _env(now).from_string(src)
    try:
        return tmpl.render(messages=messages, tools=tools, documents=documents,
                           add_generation_prompt=add_generation_prompt,
                           **(special_tokens or {}), **kwargs)
    except jinja2.exceptions.TemplateError as e:
        raise TemplateError(str(e)) from e


def hf_messages(msgs):
    """Converts messages in engine.Message's JSON form (what renders.json
    stores) into the form Hugging Face users pass: tool calls as
    {"id", "type": "function", "function": {"name", "arguments": dict}};
    optional fields only when set (the Go side cannot tell empty from
    absent)."""
    out = []
    for m in msgs:
        h = {"role": m["role"], "content": m.get("content", "")}
        if m.get("reasoning_content"):
            h["reasoning_content"] = m["reasoning_content"]
        if m.get("tool_calls"):
            h["tool_calls"] = []
            for c in m["tool_calls"]:
                tc = {"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
                if c.get("id"):
                    tc["id"] = c["id"]
                h["tool_calls"].append(tc)
        if m.get("tool_call_id"):
            h["tool_call_id"] = m["tool_call_id"]
        if m.get("name"):
            h["name"] = m["name"]
        out.append(h)
    return out


def write(path, cases):
    """Writes cases (dicts with name, messages, options and rendered or
    error) as JSON, one case per line inside the array, keys in order."""
    lines = [json.dumps(c, ensure_ascii=False) for c in cases]
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(lines) + "\n]\n")
    print("%s: %d cases (%d errors)" % (os.path.relpath(path), len(cases), sum("error" in c for c in cases)))


# Shared material for the cases.

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather in a city. Use it for \"now\" questions; not <forecasts>.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
        "required": ["city"]}}}

NOW = {"type": "function", "function": {
    "name": "get_time",
    "description": "Returns the time.",
    "parameters": {"type": "object", "properties": {}, "required": []}}}

TOOLS = [WEATHER, NOW]


def call(name, args, id=""):
    c = {"name": name, "arguments": args}
    if id:
        c["id"] = id
    return c


# Messages (in engine.Message's JSON form) the families' cases share.

S = {"role": "system", "content": "You are a terse assistant."}
U1 = {"role": "user", "content": "What is the capital of France?"}
A1 = {"role": "assistant", "content": "Paris."}
U2 = {"role": "user", "content": "And of Italy?"}
W = {"role": "user", "content": "Weather in Paris and the time, please."}
CALL1 = {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call_0")]}
CALL2 = {"role": "assistant", "content": "", "tool_calls": [
    call("get_weather", {"city": "Paris", "unit": "celsius"}, "call_0"), call("get_time", {}, "call_1")]}
T1 = {"role": "tool", "content": "{\"temp\": 21, \"sky\": \"clear\"}", "tool_call_id": "call_0", "name": "get_weather"}
T2 = {"role": "tool", "content": "14:05", "tool_call_id": "call_1", "name": "get_time"}
