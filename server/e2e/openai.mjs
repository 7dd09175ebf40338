// Drives a running smolgo server with the official openai client, once
// without and once with streaming, and through responses.stream(), and
// checks what comes back.
// Usage: SMOLGO_URL=http://127.0.0.1:PORT node openai.mjs
// Exits non-zero (with a message) on the first failed check; prints one
// JSON line of results on success.
import assert from "node:assert/strict";
import OpenAI from "openai";

const base = process.env.SMOLGO_URL;
assert.ok(base, "SMOLGO_URL is not set");
// Real models say different things; the fake engine echoes. EXPECT_ECHO=1
// turns on the exact-text checks.
const exact = process.env.EXPECT_ECHO === "1";
// THINKING=off turns thinking off in every request (the tiny test model's
// thinking prompt is long and its reasoning is noise anyway).
const thinkingOff = process.env.THINKING === "off";
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 120_000 });

const models = await client.models.list();
assert.equal(models.data.length, 1, "one model listed");
const model = models.data[0].id;

// Non-streaming, thinking off.
const c = await client.chat.completions.create({
  model,
  messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: "Say hello" }],
  max_tokens: 24,
  temperature: 0,
  seed: 42,
  chat_template_kwargs: { enable_thinking: false },
});
assert.equal(c.object, "chat.completion");
assert.equal(c.choices.length, 1);
assert.equal(c.choices[0].message.role, "assistant");
assert.ok(["stop", "length"].includes(c.choices[0].finish_reason), "finish_reason " + c.choices[0].finish_reason);
assert.equal(typeof c.choices[0].message.content, "string");
assert.ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0, "usage filled");
assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
assert.equal(c.choices[0].message.reasoning_content, undefined, "no reasoning with thinking off");
if (exact) assert.equal(c.choices[0].message.content, "You said: Say hello");

// Streaming, thinking on, with usage.
const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "count 12" }],
  stream: true,
  stream_options: { include_usage: true },
  max_tokens: 40,
  ...(thinkingOff ? { chat_template_kwargs: { enable_thinking: false } } : {}),
  stop: ["11"],
});
let content = "", reasoning = "", chunks = 0, finish = null, usage = null, id = null;
for await (const chunk of stream) {
  chunks++;
  id ??= chunk.id;
  assert.equal(chunk.id, id, "one id for all chunks");
  assert.equal(chunk.object, "chat.completion.chunk");
  if (chunk.usage) usage = chunk.usage;
  const ch = chunk.choices[0];
  if (!ch) continue;
  if (ch.delta.content) content += ch.delta.content;
  if (ch.delta.reasoning_content) reasoning += ch.delta.reasoning_content;
  if (ch.finish_reason) finish = ch.finish_reason;
}
assert.ok(chunks > 3, "several chunks, got " + chunks);
assert.ok(finish === "stop" || finish === "length", "finish_reason " + finish);
assert.ok(usage && usage.completion_tokens > 0, "usage chunk");
assert.ok(!content.includes("11"), "stop string not in the output");
if (exact) {
  assert.equal(content.trim(), "1 2 3 4 5 6 7 8 9 10");
  assert.equal(reasoning, "Counting to 12.");
  assert.equal(finish, "stop");
}

// The Responses API through the client's stream helper, whose accumulator
// checks every event against the items it was told of (a message item
// without its content list, or reasoning text for a part never announced,
// throws). Thinking on, so that a reasoning item streams too.
const rstream = client.responses.stream({ model, input: "Say hello", max_output_tokens: 48 });
let rdeltas = "";
for await (const ev of rstream) {
  if (ev.type === "response.output_text.delta") rdeltas += ev.delta;
}
const rfinal = await rstream.finalResponse();
assert.ok(["completed", "incomplete"].includes(rfinal.status), "responses status " + rfinal.status);
assert.equal(rfinal.output_text, rdeltas, "the helper's text is the deltas'");
if (exact) assert.equal(rfinal.output_text, "You said: Say hello");

// A bad request surfaces as the client's typed error with our message.
let status = 0;
try {
  await client.chat.completions.create({ model, messages: [] });
} catch (e) {
  assert.ok(e instanceof OpenAI.APIError, "APIError");
  status = e.status;
  assert.match(e.message, /messages/);
}
assert.equal(status, 400);

console.log(JSON.stringify({ ok: true, model, nonstream: c.choices[0].message.content, stream: { chunks, content, reasoning, finish, usage } }));
