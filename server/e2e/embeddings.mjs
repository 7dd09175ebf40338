// Embeds with the official openai client against a running smolgo server
// serving an embedding model, and checks the vectors against the engine's
// (WANT: a JSON array of the expected vectors of the two texts below).
// The client asks for base64 unless told otherwise and decodes it itself;
// float is asked for explicitly. Usage:
//   SMOLGO_URL=http://127.0.0.1:PORT WANT='[[...],[...]]' node embeddings.mjs
// Exits non-zero on the first failed check; prints one JSON line on success.
import assert from "node:assert/strict";
import OpenAI from "openai";

const base = process.env.SMOLGO_URL;
assert.ok(base, "SMOLGO_URL is not set");
const want = JSON.parse(process.env.WANT);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const model = (await client.models.list()).data[0].id;
const input = ["Hello world", "the quick brown fox"];

const results = {};
for (const format of [undefined, "float", "base64"]) {
  const params = { model, input };
  if (format) params.encoding_format = format;
  const r = await client.embeddings.create(params);
  assert.equal(r.object, "list");
  assert.equal(r.data.length, 2);
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens, "usage");
  for (let i = 0; i < 2; i++) {
    assert.equal(r.data[i].index, i);
    let v = r.data[i].embedding;
    if (format === "base64") {
      // Asked for explicitly, the client hands the base64 string back.
      assert.equal(typeof v, "string");
      const b = Buffer.from(v, "base64");
      v = Array.from(new Float32Array(b.buffer, b.byteOffset, b.length / 4));
    }
    assert.equal(v.length, want[i].length, "width");
    for (let j = 0; j < v.length; j++) {
      assert.equal(Math.fround(v[j]), Math.fround(want[i][j]), `format ${format} vector ${i} value ${j}`);
    }
  }
  results[format ?? "default(base64)"] = r.data[0].embedding.length ?? "string";
}

// A single string input.
const one = await client.embeddings.create({ model, input: "Hello world", encoding_format: "float" });
assert.equal(one.data.length, 1);
console.log(JSON.stringify({ ok: true, formats: results, dims: one.data[0].embedding.length }));
