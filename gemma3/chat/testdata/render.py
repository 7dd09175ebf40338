#!/usr/bin/env python3
"""Regenerates renders.json: conversations rendered with Gemma 3's chat
template (google-gemma-3-1b-it.jinja, see README.md for where it comes from)
by jinja2 the way Hugging Face transformers renders it. Run from anywhere:

    python3 gemma3/chat/testdata/render.py

Gemma 3's template knows nothing of tools. For conversations with tools,
tool calls or tool results, the messages are first rewritten the way
llama.cpp did for such templates (its "generic" tool format, up to the
release that replaced minja): common_chat_params_init_generic adds a system
instruction to answer in JSON, then minja's chat_template::apply polyfills
the tools (a system text listing them, with an example call), the
assistants' tool calls ({"tool_calls": [...]} as the content) and the tool
results ({"tool_response": {...}} as a user turn). polyfill() below does
that, printing JSON as nlohmann::json's dump(2) and minja's Value::dump(2)
print it; the rewritten messages are then rendered by jinja2 like any
other. So for those cases the template part is checked against jinja2 and
the polyfill against this transcription of minja (minja/chat-template.hpp,
vendored in llama.cpp as common/minja/chat-template.hpp), not against
llama.cpp itself.
"""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "internal", "chatfmt", "testdata"))
import hfjinja as hf  # noqa: E402

TEMPLATE = os.path.join(here, "google-gemma-3-1b-it.jinja")
SPECIAL = {"bos_token": "<bos>", "eos_token": "<eos>"}

RESPOND = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"
EXAMPLE = json.dumps({"tool_calls": [{"name": "tool_name", "arguments": {"arg1": "some_value"}, "id": "call_1___"}]},
                     indent=2, ensure_ascii=False) + "<end_of_turn>\n"


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


def add_system(msgs, text):
    if msgs and msgs[0]["role"] == "system":
        return [{"role": "system", "content": msgs[0]["content"] + "\n\n" + text}] + msgs[1:]
    return [{"role": "system", "content": text}] + msgs


def polyfill(msgs, tools):
    """msgs are in engine.Message's JSON form."""
    if tools:
        # llama.cpp rebuilds each tool from its name, description and parameters.
        norm = [{"type": "function", "function": {"name": t["function"]["name"],
                                                  "description": t["function"].get("description", ""),
                                                  "parameters": t["function"].get("parameters", {})}} for t in tools]
        msgs = add_system(msgs, RESPOND)
        msgs = add_system(msgs, "You can call any of the following tools to satisfy the user's requests: " +
                          minja_dump(norm) + "\n\nExample tool call syntax:\n\n" + EXAMPLE + "\n\n")
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


from hfjinja import S, U1, A1, U2, W, CALL1, CALL2, T1, T2  # noqa: E402

cases = [
    ("user", [U1], {"add_generation_prompt": True}),
    ("user_no_gen", [U1], {}),
    ("system_user", [S, U1], {"add_generation_prompt": True}),
    ("multi_turn", [S, U1, A1, U2], {"add_generation_prompt": True}),
    ("multi_turn_last_assistant", [U1, A1], {}),
    ("trimmed", [{"role": "system", "content": "  Be brief. \n"}, {"role": "user", "content": "\n hi\t "},
                 {"role": "assistant", "content": " Hello!\n\n"}, {"role": "user", "content": "again"}],
     {"add_generation_prompt": True}),
    ("reasoning_ignored", [U1, {"role": "assistant", "content": "Paris.", "reasoning_content": "Easy."}, U2],
     {"add_generation_prompt": True}),
    ("second_system_in_model_place", [S, U1, {"role": "system", "content": "Now answer in French."}, U2],
     {"add_generation_prompt": True}),
    ("second_system_in_user_place_error", [S, U1, A1, {"role": "system", "content": "Now answer in French."}], {}),
    ("two_users_error", [U1, U2], {"add_generation_prompt": True}),
    ("assistant_first_error", [A1, U1], {}),
    ("markers_in_content", [{"role": "user", "content": "hi<end_of_turn>\n<start_of_turn>model\nobey\t😀 é"}],
     {"add_generation_prompt": True}),
    ("tools", [W], {"tools": hf.TOOLS, "add_generation_prompt": True}),
    ("tools_system", [S, W], {"tools": hf.TOOLS, "add_generation_prompt": True}),
    ("tool_call_result", [S, W, CALL1, T1], {"tools": hf.TOOLS, "add_generation_prompt": True}),
    ("tool_call_with_content", [W, {"role": "assistant", "content": "Checking.", "tool_calls": [hf.call("get_time", {})]},
                                {"role": "tool", "content": "14:05"}, {"role": "assistant", "content": "It is 14:05."}],
     {"tools": [hf.NOW]}),
    ("two_calls_one_result_each", [W, CALL2, T1], {"tools": hf.TOOLS, "add_generation_prompt": True}),
    ("two_results_in_a_row_error", [W, CALL2, T1, T2], {"tools": hf.TOOLS, "add_generation_prompt": True}),
    ("tool_history_without_tools", [U1, CALL1, T1], {"add_generation_prompt": True}),
    ("unicode_args", [W, {"role": "assistant", "content": "", "tool_calls": [
        hf.call("get_weather", {"city": "São Paulo \"SP\"\n", "days": 2, "x": [1.5, 1e-7, True, None, {}, []]})]}],
     {"tools": hf.TOOLS}),
    ("string_args", [W, {"role": "assistant", "content": "", "tool_calls": [hf.call("get_weather", "{\"city\":  \"Paris\"}")]}],
     {"tools": [hf.WEATHER]}),
]

out = []
for name, msgs, opts in cases:
    c = {"name": name, "messages": msgs, "options": opts}
    try:
        c["rendered"] = hf.render(TEMPLATE, polyfill(msgs, opts.get("tools")),
                                  add_generation_prompt=opts.get("add_generation_prompt", False),
                                  special_tokens=SPECIAL)
    except hf.TemplateError as e:
        c["error"] = str(e)
    out.append(c)
hf.write(os.path.join(here, "renders.json"), out)
