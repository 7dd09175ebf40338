"""Renders chat templates the way Hugging Face transformers does, for the
reference renders of the chat subpackages (qwen3/chat, qwen2/chat,
llama3/chat, gemma3/chat, phi3/chat). Each package's testdata/render.py imports this
module and writes its renders.json; the Go tests compare against that file
and need no Python.

transformers (src/transformers/utils/chat_template_utils.py) compiles a
template in an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension, its own tojson filter
(json.dumps with ensure_ascii=False, so no HTML escaping), and the globals
raise_exception and strftime_now; it renders with messages, tools,
add_generation_prompt, the special tokens (bos_token, eos_token) and any
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
           date="2025-07-08", special_tokens=None, **kwargs):
    """Returns the render, or raises TemplateError with the template's message."""
    now = datetime.datetime.strptime(date, "%Y-%m-%d")
    with open(template_path, encoding="utf-8") as f:
        src = f.read()
    tmpl = _env(now).from_string(src)
    try:
        return tmpl.render(messages=messages, tools=tools, documents=None,
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


# llama.cpp's generic JSON tool format (internal/chatfmt/generic.go), for
# templates that show neither tools, nor calls, nor results (Gemma 3's,
# Phi-3.5-mini's). Up to the release that replaced minja,
# common_chat_params_init_generic added a system instruction to answer in
# JSON, then minja's chat_template::apply polyfilled the tools (a system text
# listing them, with an example call), the assistants' tool calls
# ({"tool_calls": [...]} as the content) and the tool results
# ({"tool_response": {...}} as a user turn). generic_polyfill() does that,
# printing JSON as nlohmann::json's dump(2) and minja's Value::dump(2) print
# it; the rewritten messages are then rendered by jinja2 like any other. So
# the template part is checked against jinja2 and the polyfill against this
# transcription of minja (minja/chat-template.hpp, vendored in llama.cpp as
# common/minja/chat-template.hpp), not against llama.cpp itself.

GENERIC_RESPOND = ("Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` "
                   "reply to the user's request")


def generic_example(tail):
    """The example minja adds after the tool list: the polyfilled call of a
    dummy tool as the template renders an assistant turn holding it (tail is
    what the template writes after the content), between "Example tool call
    syntax" and two newlines."""
    call = json.dumps({"tool_calls": [{"name": "tool_name", "arguments": {"arg1": "some_value"}, "id": "call_1___"}]},
                      indent=2, ensure_ascii=False)
    return "\n\nExample tool call syntax:\n\n" + call + tail + "\n\n"


def minja_dump(v, indent=2, level=0):
    """minja::Value::dump(indent, to_json=true): json.dumps(indent), except
    that empty arrays and objects get their line breaks too."""
    pad = lambda lv: "\n" + " " * (lv * indent)  # noqa: E731
    if isinstance(v, dict):
        items = [json.dumps(k, ensure_ascii=False) + ": " + minja_dump(x, indent, level + 1) for k, x in v.items()]
        return "{" + pad(level + 1) + ("," + pad(level + 1)).join(items) + pad(level) + "}"
    if isinstance(v, list):
        items = [minja_dump(x, indent, level + 1) for x in v]
        return "[" + pad(level + 1) + ("," + pad(level + 1)).join(items) + pad(level) + "]"
    return json.dumps(v, ensure_ascii=False)


def _add_system(msgs, text):
    if msgs and msgs[0]["role"] == "system":
        return [{"role": "system", "content": msgs[0]["content"] + "\n\n" + text}] + msgs[1:]
    return [{"role": "system", "content": text}] + msgs


def generic_polyfill(msgs, tools, example):
    """Rewrites msgs (in engine.Message's JSON form) for the generic format;
    example is generic_example(...) for the template."""
    if tools:
        # llama.cpp rebuilds each tool from its name, description and parameters.
        norm = [{"type": "function", "function": {"name": t["function"]["name"],
                                                  "description": t["function"].get("description", ""),
                                                  "parameters": t["function"].get("parameters", {})}} for t in tools]
        msgs = _add_system(msgs, GENERIC_RESPOND)
        msgs = _add_system(msgs, "You can call any of the following tools to satisfy the user's requests: " +
                           minja_dump(norm) + example)
    out = []
    for m in msgs:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                args = c.get("arguments") or {}
                if isinstance(args, str):  # minja parses string arguments back
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                tc = {"name": c["name"], "arguments": args}
                if c.get("id"):
                    tc["id"] = c["id"]
                calls.append(tc)
            obj = {"tool_calls": calls}
            if m.get("content"):
                obj["content"] = m["content"]
            m = {"role": "assistant", "content": json.dumps(obj, indent=2, ensure_ascii=False)}
        elif m["role"] == "tool":
            r = {}
            if m.get("name"):
                r["tool"] = m["name"]
            r["content"] = m["content"]
            if m.get("tool_call_id"):
                r["tool_call_id"] = m["tool_call_id"]
            m = {"role": "user", "content": json.dumps({"tool_response": r}, indent=2, ensure_ascii=False)}
        else:
            m = {"role": m["role"], "content": m["content"]}
        out.append(m)
    return out


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
