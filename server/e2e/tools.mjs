// Tool-call round trip through the official openai client against a smolgo
// server whose engine is the fake (server/servertest): the user message
// "call get_weather {...}" makes it call the tool, and a conversation that
// ends with a tool result makes it answer "The tool returned: <result>".
// Checks, in order: a non-streaming call (message.tool_calls, finish_reason
// "tool_calls"), the same call streamed (delta.tool_calls accumulated by
// index), and the tool's result sent back (assistant tool_calls + a "tool"
// message) giving a final answer that uses it.
// Usage: SMOLGO_URL=http://127.0.0.1:PORT node tools.mjs
// Exits non-zero (with a message) on the first failed check; prints one JSON
// line of results on success.
import assert from "node:assert/strict";
import OpenAI from "openai";

const base = process.env.SMOLGO_URL;
assert.ok(base, "SMOLGO_URL is not set");
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const model = (await client.models.list()).data[0].id;

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city.",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["city"],
      },
    },
  },
];
const wantArgs = { city: "Paris", unit: "celsius" };
const question = { role: "user", content: "call get_weather " + JSON.stringify(wantArgs) };

function checkCall(call, where) {
  assert.ok(call, where + ": no tool call");
  assert.equal(call.type, "function", where + ": tool call type");
  assert.ok(typeof call.id === "string" && call.id.length > 0, where + ": tool call id is empty");
  assert.equal(call.function.name, "get_weather", where + ": function name");
  assert.equal(typeof call.function.arguments, "string", where + ": arguments must be a JSON string");
  assert.deepEqual(JSON.parse(call.function.arguments), wantArgs, where + ": arguments");
}

// 1. Non-streaming.
const c = await client.chat.completions.create({
  model,
  messages: [question],
  tools,
  tool_choice: "auto",
  chat_template_kwargs: { enable_thinking: false },
});
const msg = c.choices[0].message;
assert.equal(c.choices[0].finish_reason, "tool_calls", "non-streaming finish_reason");
assert.equal(msg.tool_calls?.length, 1, "non-streaming: one tool call, got " + JSON.stringify(msg));
checkCall(msg.tool_calls[0], "non-streaming");
assert.ok(!msg.content || !msg.content.includes("<tool_call>"), "the tag leaked into content: " + msg.content);

// 2. Streaming: accumulate delta.tool_calls by index.
const stream = await client.chat.completions.create({
  model,
  messages: [question],
  tools,
  stream: true,
  chat_template_kwargs: { enable_thinking: false },
});
const calls = [];
let streamedContent = "", finish = null, deltas = 0;
for await (const chunk of stream) {
  const ch = chunk.choices[0];
  if (!ch) continue;
  if (ch.finish_reason) finish = ch.finish_reason;
  if (ch.delta?.content) streamedContent += ch.delta.content;
  for (const d of ch.delta?.tool_calls ?? []) {
    deltas++;
    assert.equal(typeof d.index, "number", "streamed tool call delta without index");
    const acc = (calls[d.index] ??= { id: "", type: "", function: { name: "", arguments: "" } });
    if (d.id) acc.id = d.id;
    if (d.type) acc.type = d.type;
    if (d.function?.name) acc.function.name += d.function.name;
    if (d.function?.arguments) acc.function.arguments += d.function.arguments;
  }
}
assert.equal(finish, "tool_calls", "streaming finish_reason");
assert.equal(calls.length, 1, "streaming: one tool call, got " + JSON.stringify(calls));
checkCall(calls[0], "streaming");
assert.ok(!streamedContent.includes("<tool_call>"), "the tag leaked into streamed content: " + streamedContent);

// 3. Send the call and the tool's result back; the answer must use it.
const result = JSON.stringify({ temperature: 18, sky: "clear" });
const final = await client.chat.completions.create({
  model,
  messages: [
    question,
    { role: "assistant", content: null, tool_calls: [calls[0]] },
    { role: "tool", tool_call_id: calls[0].id, content: result },
  ],
  tools,
  chat_template_kwargs: { enable_thinking: false },
});
const answer = final.choices[0].message.content;
assert.equal(final.choices[0].finish_reason, "stop", "final finish_reason");
assert.equal(final.choices[0].message.tool_calls, undefined, "final answer has no tool calls");
assert.equal(answer, "The tool returned: " + result, "final answer does not use the tool result");

console.log(JSON.stringify({ ok: true, call: msg.tool_calls[0].function, streamedDeltas: deltas, answer }));
