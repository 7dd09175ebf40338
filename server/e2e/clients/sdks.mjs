// The agent SDKs against the smolgo server, as their users write them: the
// OpenAI Agents SDK (Responses and Chat Completions, tools with an output
// type, handoffs, streaming), Mastra (tools with structured output),
// LlamaIndex (an agent with a tool), the AI SDK (generateObject with
// decimal bounds, a tool loop through /v1/responses, which sends
// item_reference in its second step) and the openai package's
// responses.stream().
//
// The server runs servertest's echo engine: a line "call NAME {json}" makes
// the model call NAME, a line "answer TEXT" makes it answer TEXT once the
// tools have answered (see servertest.Echo). So every run is a real tool
// loop with a known ending. Run from server/clients_test.go
// (SMOLGO_CLIENTS=sdk); SMOLGO_URL is the server. Prints one JSON line per
// check and a last {"ok": true|false}.

import OpenAI from "openai";
import { z } from "zod";

const base = process.env.SMOLGO_URL;
if (!base) throw new Error("set SMOLGO_URL");
const model = "gpt-4o-mini"; // a client's default name: the server serves its model under any
const results = [];

async function check(name, fn) {
  try {
    const detail = await fn();
    results.push({ name, ok: true, detail });
  } catch (e) {
    results.push({ name, ok: false, error: String(e?.stack ?? e).slice(0, 2000) });
  }
  console.log(JSON.stringify(results.at(-1)));
}

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

const weatherArgs = z.object({ city: z.string() });
const report = z.object({ city: z.string(), temperature: z.number().min(0.5).max(60) });
const callThenAnswer =
  'call get_weather {"city": "Paris"}\nanswer {"city": "Paris", "temperature": 21.5}';

// --- openai: responses.stream() ---
await check("openai responses.stream()", async () => {
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused" });
  const stream = client.responses.stream({ model, input: "hello there" });
  let deltas = "";
  for await (const ev of stream) {
    if (ev.type === "response.output_text.delta") deltas += ev.delta;
  }
  const final = await stream.finalResponse();
  expect(final.output_text === "You said: hello there" && deltas === final.output_text, `text ${JSON.stringify(final.output_text)}`);
  const tools = client.responses.stream({
    model,
    input: 'call get_weather {"city": "Paris"}',
    tools: [{ type: "function", name: "get_weather", parameters: z.toJSONSchema(weatherArgs), strict: false }],
  });
  for await (const _ of tools) {
  }
  const call = (await tools.finalResponse()).output.find((o) => o.type === "function_call");
  expect(call?.name === "get_weather" && JSON.parse(call.arguments).city === "Paris", "no call");
  return final.output_text;
});

// --- the OpenAI Agents SDK ---
const agents = await import("@openai/agents");
const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = agents;
setDefaultOpenAIClient(new OpenAI({ baseURL: base + "/v1", apiKey: "unused" }));
setTracingDisabled(true);
const getWeather = tool({
  name: "get_weather",
  description: "The weather of a city",
  parameters: weatherArgs,
  execute: async ({ city }) => `It is 21.5 °C in ${city}.`,
});
for (const api of ["responses", "chat_completions"]) {
  setOpenAIAPI(api);
  await check(`@openai/agents ${api}: tools with outputType`, async () => {
    const agent = new Agent({ name: "Weather", instructions: "Answer about the weather.", model, tools: [getWeather], outputType: report });
    const result = await run(agent, callThenAnswer);
    expect(result.finalOutput?.city === "Paris" && result.finalOutput.temperature === 21.5, JSON.stringify(result.finalOutput));
    return result.finalOutput;
  });
  await check(`@openai/agents ${api}: handoff`, async () => {
    const weather = new Agent({ name: "Weather agent", instructions: "Answer about the weather.", model, tools: [getWeather] });
    const triage = new Agent({ name: "Triage", instructions: "Hand weather questions over.", model, handoffs: [weather] });
    const result = await run(triage, "call transfer_to_Weather_agent {}");
    expect(result.lastAgent?.name === "Weather agent", `last agent ${result.lastAgent?.name}`);
    expect(typeof result.finalOutput === "string" && result.finalOutput.startsWith("The tool returned"), JSON.stringify(result.finalOutput));
    return result.finalOutput;
  });
  await check(`@openai/agents ${api}: streaming a tool loop`, async () => {
    const agent = new Agent({ name: "Weather", instructions: "Answer about the weather.", model, tools: [getWeather] });
    const stream = await run(agent, 'call get_weather {"city": "Oslo"}', { stream: true });
    let events = 0;
    for await (const _ of stream) events++;
    await stream.completed;
    expect(String(stream.finalOutput).includes("It is 21.5 °C in Oslo."), JSON.stringify(stream.finalOutput));
    return { events, finalOutput: stream.finalOutput };
  });
}
setOpenAIAPI("responses");

// --- the AI SDK ---
const { generateObject, generateText, tool: aiTool, stepCountIs } = await import("ai");
const { createOpenAI } = await import("@ai-sdk/openai");
const provider = createOpenAI({ baseURL: base + "/v1", apiKey: "unused" });
await check("ai generateObject with decimal bounds", async () => {
  const { object } = await generateObject({
    model: provider(model),
    schema: z.object({ ratio: z.number().min(0.5).max(2.25), label: z.string() }),
    prompt: 'answer {"ratio": 1.75, "label": "fine"}',
  });
  expect(object.ratio === 1.75 && object.label === "fine", JSON.stringify(object));
  return object;
});
await check("ai generateText tool loop through /v1/responses", async () => {
  const result = await generateText({
    model: provider(model),
    tools: { get_weather: aiTool({ description: "The weather of a city", inputSchema: weatherArgs, execute: async ({ city }) => `It is 21.5 °C in ${city}.` }) },
    stopWhen: stepCountIs(4),
    prompt: 'call get_weather {"city": "Rome"}',
  });
  expect(result.steps.length === 2 && result.text.includes("It is 21.5 °C in Rome."), `${result.steps.length} steps: ${result.text}`);
  return result.text;
});

// --- Mastra ---
await check("mastra agent: tools with structuredOutput", async () => {
  const { Agent: MastraAgent } = await import("@mastra/core/agent");
  const { createTool } = await import("@mastra/core/tools");
  const weatherTool = createTool({
    id: "get_weather",
    description: "The weather of a city",
    inputSchema: weatherArgs,
    execute: async ({ city }) => `It is 21.5 °C in ${city}.`,
  });
  const agent = new MastraAgent({
    id: "weather",
    name: "Weather",
    instructions: "Answer about the weather.",
    model: provider(model),
    tools: { get_weather: weatherTool },
  });
  const out = await agent.generate(callThenAnswer, { structuredOutput: { schema: report }, maxSteps: 4 });
  expect(out.object?.city === "Paris" && out.object.temperature === 21.5, JSON.stringify(out.object ?? out.text));
  return out.object;
});

// --- LlamaIndex ---
await check("llamaindex agent with a tool", async () => {
  const { agent } = await import("@llamaindex/workflow");
  const { tool: liTool } = await import("llamaindex");
  const { OpenAI: LiOpenAI } = await import("@llamaindex/openai");
  const llm = new LiOpenAI({ model, apiKey: "unused", baseURL: base + "/v1" });
  const weather = liTool({ name: "get_weather", description: "The weather of a city", parameters: weatherArgs, execute: ({ city }) => `It is 21.5 °C in ${city}.` });
  const a = agent({ tools: [weather], llm });
  const result = await a.run('call get_weather {"city": "Lima"}');
  const text = String(result.data?.result ?? result.data?.message?.content ?? JSON.stringify(result.data));
  expect(text.includes("It is 21.5 °C in Lima."), text);
  return text;
});

const ok = results.every((r) => r.ok);
console.log(JSON.stringify({ ok, passed: results.filter((r) => r.ok).length, of: results.length }));
process.exit(ok ? 0 : 1);
