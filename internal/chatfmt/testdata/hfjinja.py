"""Renders chat templates the way Hugging Face transformers does, for the
reference renders of the chat subpackages (qwen3/chat, qwen2/chat,
llama3/chat, llama3/chatml, gemma3/chat), and rewrites tool use the way
llama.cpp's generic tool format does for templates that show no tools.
Each package's testdata/render.py imports this module and writes its
renders.json; the Go tests compare against that file and need no Python.

transformers (src/transformers/utils/chat_template_utils.py) compiles a
template in an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension, its AssistantTracker extension
(the {% generation %} block), its own tojson filter
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
import jinja2.nodes
import jinja2.sandbox


class TemplateError(Exception):
    pass


class _Generation(jinja2.ext.Extension):
    """transformers' AssistantTracker: {% generation %}…{% endgeneration %}
    renders its body (transformers also records where, for masks)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation"), [], [], body).set_lineno(lineno)

    def _generation(self, caller):
        return caller()


def _env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols])
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


# llama.cpp's generic tool format, for templates that show no tools (Gemma
# 3's, SmolLM2's). Up to the release that replaced minja, llama.cpp's
# common_chat_params_init_generic added a system instruction to answer in
# JSON, then minja's chat_template::apply (minja/chat-template.hpp,
# vendored in llama.cpp as common/minja/chat-template.hpp) polyfilled what
# the template cannot show: the tools (a system text listing them, with an
# example call), the assistants' tool calls ({"tool_calls": [...]} as the
# content) and the tool results ({"tool_response": {...}} as a user turn).
# generic_polyfill() does that, printing JSON as nlohmann::json's dump(2)
# and minja's Value::dump(2) print it; the rewritten messages are then
# rendered by jinja2 like any other. So for those cases the template part
# is checked against jinja2 and the polyfill against this transcription of
# minja, not against llama.cpp itself.

GENERIC_RESPOND = ("Respond in JSON format, either with `tool_call` (a request to call tools) "
                   "or with `response` reply to the user's request")


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


def _polyfill_messages(msgs):
    """The tool calls and results of msgs (engine.Message's JSON form) as
    minja rewrites them for a template that shows neither."""
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


def generic_example(template_path, special_tokens):
    """The example call minja's chat_template constructor cuts out of two
    renders: a user turn with the generation prompt, and the same turn
    followed by a call of a dummy tool; the example is what the second adds,
    less a final EOS token (and line break) when the template writes one
    there."""
    user = {"role": "user", "content": "Hey"}
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"name": "tool_name", "arguments": {"arg1": "some_value"}, "id": "call_1___"}]}
    prefix = render(template_path, [user], add_generation_prompt=True, special_tokens=special_tokens)
    full = render(template_path, _polyfill_messages([user, call]), special_tokens=special_tokens)
    eos = special_tokens["eos_token"]
    last = full.rfind(eos)
    if last >= 0 and (last == len(prefix) - len(eos) or (full.endswith("\n") and last == len(full) - len(eos) - 1)):
        full = full[:last]
    common = 0
    for i in range(min(len(prefix), len(full))):
        if prefix[i] != full[i]:
            break
        if prefix[i] != "<":  # minja leaves a shared "<" to the example
            common = i + 1
    return full[common:]


def generic_polyfill(msgs, tools, example):
    """msgs (engine.Message's JSON form) as llama.cpp's generic format hands
    them to the template; example is generic_example's."""
    if tools:
        # llama.cpp rebuilds each tool from its name, description and parameters.
        norm = [{"type": "function", "function": {"name": t["function"]["name"],
                                                  "description": t["function"].get("description", ""),
                                                  "parameters": t["function"].get("parameters", {})}} for t in tools]
        msgs = _add_system(msgs, GENERIC_RESPOND)
        msgs = _add_system(msgs, "You can call any of the following tools to satisfy the user's requests: " +
                           minja_dump(norm) + "\n\nExample tool call syntax:\n\n" + example + "\n\n")
    return _polyfill_messages(msgs)


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
