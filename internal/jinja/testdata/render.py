#!/usr/bin/env python3
"""Regenerates corpus.json.gz: every chat template of the corpus rendered by
Python jinja2 the way Hugging Face transformers' apply_chat_template renders
it, on each conversation below. The Go test (corpus_test.go) renders the same
templates with package jinja and compares byte for byte; where jinja2 raised,
the engine must raise too. Run from anywhere:

    python3 internal/jinja/testdata/render.py

The corpus: llama.cpp's models/templates/*.jinja (the clone that
../shared/tools/llamaref/build.sh makes, read in place), the templates the
families' chat packages keep in their testdata, and SmolLM3's in
../shared/tokenizer. Each template is stored by its path and the SHA-256 of
its text, so a changed template fails the test until this script runs again.

transformers (src/transformers/utils/chat_template_utils.py) compiles a
template in an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension and its AssistantTracker extension
(the {% generation %} block), its own tojson filter (json.dumps with
ensure_ascii=False, keys in the caller's order), and the globals
raise_exception and strftime_now; it renders with messages, tools,
add_generation_prompt, the special tokens and any extra keyword arguments.
So does this script, with strftime_now reading a fixed date instead of the
clock. Requires Debian's python3-jinja2 (3.1.x).
"""

import datetime
import glob
import gzip
import hashlib
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
CACHE = os.environ.get("SMOLGO_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "smolgo"))
LLAMACPP = os.path.join(CACHE, "llamaref", "nlc-3.22.1", "llama.cpp")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))

NOW = datetime.datetime(2025, 7, 8, 14, 5, 9)


class Generation(jinja2.ext.Extension):
    """transformers' AssistantTracker: {% generation %}…{% endgeneration %}
    renders its body (transformers also records where, for masks)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation"), [], [], body).set_lineno(lineno)

    def _generation(self, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# The conversations, as Hugging Face users pass them.

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather in a city. Use it for \"now\" questions; not <forecasts>.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time",
    "description": "Returns the time.",
    "parameters": {"type": "object", "properties": {}, "required": []}}}
TOOLS = [WEATHER, TIME]


def call(name, args, id):
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


S = {"role": "system", "content": "You are a terse assistant."}
U1 = {"role": "user", "content": "What is the capital of France?"}
A1 = {"role": "assistant", "content": "Paris."}
U2 = {"role": "user", "content": "And of Italy?"}
A2 = {"role": "assistant", "content": "Rome."}
W = {"role": "user", "content": "Weather in Paris and the time, please."}
CALL1 = {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call_0")]}
CALL2 = {"role": "assistant", "content": "", "tool_calls": [
    call("get_weather", {"city": "Paris", "unit": "celsius"}, "call_0"), call("get_time", {}, "call_1")]}
T1 = {"role": "tool", "content": "{\"temp\": 21, \"sky\": \"clear\"}", "tool_call_id": "call_0", "name": "get_weather"}
T2 = {"role": "tool", "content": "14:05", "tool_call_id": "call_1", "name": "get_time"}
FINAL = {"role": "assistant", "content": "21 °C and clear; it is 14:05."}
R1 = {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks for France's capital."}
CALLR = {"role": "assistant", "content": "Let me check.", "reasoning_content": "I need the weather.",
         "tool_calls": [call("get_weather", {"city": "Paris"}, "call_0")]}


def conv(name, messages, add_generation_prompt=True, tools=None, **kwargs):
    c = {"name": name, "messages": messages, "add_generation_prompt": add_generation_prompt}
    if tools is not None:
        c["tools"] = tools
    c.update(kwargs)
    return c


CONVERSATIONS = [
    conv("user", [U1]),
    conv("user_no_gen", [U1], add_generation_prompt=False),
    conv("system_user", [S, U1]),
    conv("turns", [S, U1, A1, U2]),
    conv("turns_no_gen", [S, U1, A1, U2, A2], add_generation_prompt=False),
    conv("think_on", [S, U1], enable_thinking=True),
    conv("think_off", [S, U1], enable_thinking=False),
    conv("reasoning_history", [U1, R1, U2]),
    conv("reasoning_last", [U1, R1], add_generation_prompt=False),
    conv("tools", [S, W], tools=TOOLS),
    conv("tool_call", [W, CALL1, T1], tools=TOOLS),
    conv("tool_calls", [S, W, CALL2, T1, T2], tools=TOOLS),
    conv("tool_calls_answered", [S, W, CALL2, T1, T2, FINAL, U2], tools=TOOLS),
    conv("tool_call_reasoning", [W, CALLR, T1], tools=TOOLS, enable_thinking=True),
    conv("tool_call_no_gen", [W, CALL1], tools=[WEATHER], add_generation_prompt=False),
    # Mistral's templates want call ids of 9 letters and digits.
    conv("tool_calls_id9", [W, {"role": "assistant", "content": "", "tool_calls": [
        call("get_weather", {"city": "Paris"}, "a1B2c3D4e"), call("get_time", {}, "Z9y8X7w6V")]},
        dict(T1, tool_call_id="a1B2c3D4e"), dict(T2, tool_call_id="Z9y8X7w6V")], tools=TOOLS),
]

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}


# Small templates for the semantics the corpus may not reach: each is
# rendered with SNIPPET_VARS; the Go test (TestSnippets) compares.
SNIPPET_VARS = {"d": {"b": 1, "a": [1, 2.5, None, True, "x'y"]}, "s": "  Hello, World  ", "n": 7, "l": [3, 1, 2],
                "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
SNIPPETS = [
    "{% set c = 0 %}{% for i in range(3) %}{% set c = c + 1 %}{{ c }}{% endfor %}|{{ c }}",
    "{% macro m() %}{{ x }}{% endmacro %}{% set x = 5 %}{{ m() }}",
    "{% for i in [1] %}{% set y = 2 %}{% endfor %}[{{ y }}]",
    "{% if true %}{% set y = 2 %}{% endif %}{{ y }}",
    "{{ undefined_x is iterable }} {{ none is iterable }} {{ {} is sequence }} {{ true is number }} {{ 'a' is sequence }}",
    "{{ [1,2]|map('string')|list }} {{ l|sort }} {{ l|sort(reverse=true) }}",
    "{{ {'a':1}.items() }} {{ {'a':1}.items()|list }} {{ range(3) }} {{ range(1, 9, 2)|list }}",
    "{{ 1/2 }} {{ 7//2 }} {{ -7//2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2**10 }} {{ 1e6 }} {{ 1e16 }} {{ 0.1+0.2 }} {{ 1.0 }} {{ 3.0*2 }} {{ 1e-5 }} {{ 2**-1 }}",
    "{{ x.y }}",
    "{% set e = {} %}{{ e.y.z }}",
    "{{ 'a' + 1 }}",
    "{{ none ~ 1 }} {{ 'a' ~ undefined_x ~ 'b' }}",
    "{{ [1, 'a', none, true, {'k': 'v\\'\"'}] }} {{ d }} {{ (1,) }} {{ (1, 'b') }}",
    "{% for x in none %}{% endfor %}",
    "{{ d|tojson }} {{ l|tojson(indent=2) }} {{ 'é\u2028\U0001F600'|tojson }} {{ 'é'|tojson(ensure_ascii=true) }} {{ d|tojson(separators=(',', ':')) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}",
    "{{ 'abc'[::-1] }} {{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ s[2:7] }} {{ l[-1] }} {{ l[1:] }} {{ l[::2] }}",
    "{{ 'x'|indent(2) }}|{{ 'a\nb\n\nc'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}",
    "{% for a in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.cycle('x','y') }};{% endfor %}",
    "{{ '{0}-{1}-{a}'.format(1, 2, a=3) }} {{ '{}|{:>5}|{:.2f}|{!r}'.format('a', 'b', 3.14159, 'c') }} {{ '%s=%d' % ('x', 3) }} {{ '%s' % 'y' }} {{ '%05.1f|%-4s|%x' % (3.14159, 'ab', 255) }}",
    "{{ ['B','a','C']|sort }} {{ {'b':1,'A':2}|dictsort }} {{ msgs|sort(attribute='role', reverse=true)|map(attribute='content')|join(',') }}",
    "{% set ns = namespace(a=1) %}{% for i in [1,2] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }} {{ ns }}",
    "{{ 'a' if false }}|{{ 'b' if true else 'c' }}|{{ () }}",
    "{{ 1 < 'a' }}",
    "{% set x %}  a  {% endset %}[{{ x }}]{% set y | upper %}b{% endset %}{{ y }}",
    "{{ 'AbC'|lower }} {{ 'hello world-wide(x)'|title }} {{ 'hEllo'|capitalize }} {{ s|trim }} {{ 'xxhixx'|trim('x') }} {{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}",
    "{{ l|first }} {{ l|last }} {{ []|first }} {{ l[5] }} {{ l|min }} {{ l|max }} {{ l|sum }} {{ l|length }} {{ s|length }} {{ d|length }}",
    "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ x|d('e') }}",
    "{{ 'abc'|replace('b', 'x') }} {{ 'a\"<>&'|e }} {{ 'a'|safe }} {{ '<'|safe + '<' }} {{ ('<b>'|e) ~ '<' }}",
    "{{ x is defined }} {{ 'a' in 'abc' }} {{ 'k' in {'k':1} }} {{ 1 not in [1] }} {{ n is divisibleby 7 }} {{ n is odd }} {{ n is even }} {{ none is none }} {{ 'a' is string }} {{ d is mapping }}",
    "{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}{% for k, v in d.items() %}{{ k }}:{{ v }};{% endfor %}",
    "{% for m in msgs if m.role == 'user' %}{{ loop.index }}{{ m.content }}{% else %}none{% endfor %}{% for m in [] %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% macro f(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1) }}|{{ f(1, 2, 3, 4) }}|{{ f(1, c=5, z=6) }}",
    "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(5) }}",
    "{{ msgs|selectattr('role', 'equalto', 'user')|list }} {{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }} {{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('even')|list }}",
    "{{ msgs|selectattr('role', 'equalto', 'user') is iterable }} {% if [1]|select('even') %}truthy{% endif %}",
    "{{ l|unique|list }} {{ ['a','A','b']|unique|list }} {{ l|reverse|list }} {{ 'abc'|reverse }} {{ l|join('-') }} {{ l|list }}",
    "{{ d.get('b') }} {{ d.get('z') }} {{ d.get('z', 3) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d['a'][1] }} {{ d.a.0 }}",
    "{{ s.startswith('  H') }} {{ s.endswith(('x', '  ')) }} {{ s.find('o') }} {{ s.count('l') }} {{ s.upper() }} {{ s.lower() }} {{ s.replace('l', 'L', 2) }} {{ ','.join(['a', 'b']) }} {{ 'a\nb\r\nc'.splitlines() }}",
    "{{ l.append(4) }}",
    "{{ l.append }}ok",
    "{{ d.update }}ok{{ d.pop('b') }}",
    "{{ 3.7|int }} {{ '42'|int }} {{ 'x'|int }} {{ '3.5'|float }} {{ 2|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }}",
    "{{ 'hello world foo'|wordcount }} {{ 'abcdefghij'|truncate(5, true, '..', 0) }} {{ 'ab'|center(6) }}|",
    "{{ [1,2,3,4,5]|batch(2)|list }} {{ msgs|groupby('role')|list }}",
    "{% filter upper %}abc {{ 'd' }}{% endfilter %}",
    "{{ raise_exception('boom') }}",
    "{{ strftime_now('%Y-%m-%d %H:%M:%S %B %b %d %-d %A %a %j %p %I') }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 2) %}{{ t[0] }}{{ t|length }}",
    "{% raw %}{{ not rendered }}{% endraw %}",
    "a\n  {% if true %}\n  b\n  {% endif %}\n  c  {#- comment -#}  d\n{{- ' e ' -}}\n f",
    "  {%+ if true %}x{% endif +%}\n  y",
    "{{ [1, 2] == [1, 2] }} {{ (1, 2) == [1, 2] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ x == none }} {{ none == none }}",
    "{{ 'a' * 3 }} {{ [0] * 3 }} {{ -n }} {{ +n }} {{ not n }} {{ n and 'y' }} {{ 0 or 'z' }} {{ 1 < n < 10 }}",
    "{{ dict(a=1, b=2) }} {{ dict(a=1).a }} {{ namespace(x=1).x }} {{ {'a': {'b': [1]}}['a']['b'][0] }}",
    "{{ msgs[0]['content'] }} {{ msgs|map(attribute='role')|join(', ') }} {{ msgs|length }} {{ msgs[-1].content|upper }}",
    "{% for m in msgs %}{{ loop.nextitem.content if not loop.last else 'end' }}{% endfor %}",
    "{% set items = [{'name': 'b', 'v': 2}, {'name': 'a', 'v': 1}] %}{{ items|sort(attribute='name')|map(attribute='v')|list }} {{ items|map(attribute='missing', default='-')|list }}",
    "{{ 'x'|from_json }}",
    "{% if false %}{{ 'x'|from_json }}{% endif %}ok",
    "{{ x|items|list }} {{ d|items|list }}",
    "{% for x in 5 %}{% endfor %}",
    "{{ range(200000)|length }}",
    "{{ 'abc'.format() }} {{ '{{}}'.format() }} {{ 'é'|length }} {{ 'ab'[0] }} {{ 'ab'[5] }}",
    "{% set x = 1 %}{% with x = 2 %}{{ x }}{% endwith %}{{ x }}",
    "{{ '%(a)s-%(b)d' % {'a': 'x', 'b': 2} }}",
    "{{ [3, 'a']|sort }}",
    "{% macro w(a) %}<{{ a }}{{ caller() }}>{% endmacro %}{% call w(1) %}inner{% endcall %}",
    "{{ s.title() }} {{ 'a1b2'.isalnum() }} {{ '12'.isdigit() }} {{ 'ab'.isupper() }} {{ 'x'.zfill(3) }} {{ 'a-b-c'.partition('-') }} {{ 'ab'.removeprefix('a') }}",
]


def corpus():
    """(name, path) of every template: llama.cpp's, the families', SmolLM3's."""
    out = []
    for p in sorted(glob.glob(os.path.join(LLAMACPP, "models", "templates", "*.jinja"))):
        out.append(("llama.cpp/models/templates/" + os.path.basename(p), p))
    for p in sorted(glob.glob(os.path.join(ROOT, "models", "*", "*", "testdata", "*.jinja"))):
        out.append((os.path.relpath(p, ROOT), p))
    p = os.path.join(SHARED, "tokenizer", "chat_template.jinja")
    if os.path.exists(p):
        out.append(("shared/tokenizer/chat_template.jinja", p))
    return out


def render_all():
    env = environment()
    templates = []
    for name, path in corpus():
        with open(path, encoding="utf-8") as f:
            src = f.read()
        entry = {"name": name, "sha256": hashlib.sha256(src.encode("utf-8")).hexdigest(), "renders": {}}
        try:
            tmpl = env.from_string(src)
        except Exception as e:  # a template jinja2 cannot compile: every render fails
            tmpl, compile_error = None, "%s: %s" % (type(e).__name__, e)
        for c in CONVERSATIONS:
            ctx = {k: v for k, v in c.items() if k != "name"}
            if tmpl is None:
                entry["renders"][c["name"]] = {"error": compile_error}
                continue
            try:
                entry["renders"][c["name"]] = {"text": tmpl.render(**SPECIAL, **ctx)}
            except Exception as e:
                entry["renders"][c["name"]] = {"error": "%s: %s" % (type(e).__name__, e)}
        templates.append(entry)
    return templates


def main():
    templates = render_all()
    if not any(t["name"].startswith("llama.cpp/") for t in templates):
        sys.exit("llama.cpp's templates not found under %s: run bash ../shared/tools/llamaref/build.sh" % LLAMACPP)
    env = environment()
    snippets = []
    for src in SNIPPETS:
        entry = {"template": src}
        try:
            entry["text"] = env.from_string(src).render(**SNIPPET_VARS)
        except Exception as e:
            entry["error"] = "%s: %s" % (type(e).__name__, e)
        snippets.append(entry)
    doc = {"now": NOW.isoformat(), "special": SPECIAL, "conversations": CONVERSATIONS, "templates": templates,
           "snippet_vars": SNIPPET_VARS, "snippets": snippets}
    data = json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
    path = os.path.join(HERE, "corpus.json.gz")
    with open(path, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
            g.write(data)
    n = sum(len(t["renders"]) for t in templates)
    errs = sum("error" in r for t in templates for r in t["renders"].values())
    print("%s: %d templates, %d renders (%d errors), %d bytes gzipped" % (
        os.path.relpath(path, ROOT), len(templates), n, errs, os.path.getsize(path)))


if __name__ == "__main__":
    main()
