// Drives the web chat of a server with several models (server.Router) in
// headless Chromium: the header's picker lists the chat models, a
// conversation talks to the one picked (and moves with the picker), the
// footer shows the picked model's state (loading on its first message), new
// conversations and a reload keep the last model picked.
// The fake models answer "I am NAME: You said: ...".
// Usage: SMOLGO_URL=... CHROMIUM=/usr/bin/chromium SCREENSHOT_DIR=... USER_DATA_DIR=... node models.mjs
import assert from "node:assert/strict";
import { openChat, step, lastAnswer, ask } from "./chromium.mjs";

const shots = process.env.SCREENSHOT_DIR || ".";
const status = (page) => page.locator("#server-status").textContent();
step("load the page");
const { context, page, problems } = await openChat("alpha");
try {
  const last = () => lastAnswer(page);
  await page.waitForSelector("#model-picker:not([hidden])");
  const options = await page.locator("#model-picker option").evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(options, ["alpha", "beta"], "the picker lists the chat models, not the embedding model");
  assert.equal(await page.inputValue("#model-picker"), "alpha", "the first chat model is the default");
  await page.waitForFunction(() => document.getElementById("server-status").textContent === "alpha · loads on its first message");
  assert.equal(await page.isVisible("#attach"), true, "alpha takes images: the Image button shows");

  step("ask the default model");
  await ask(page, "hello");
  assert.equal(await last().locator(".content").textContent(), "I am alpha: You said: hello");
  assert.match(await last().locator(".stats span").textContent(), /^alpha · \d+ tokens/);
  await page.waitForFunction(() => /^alpha · \d+ busy · 0 queued$/.test(document.getElementById("server-status").textContent));

  step("pick beta: the footer says it loads, the conversation moves to it");
  await page.selectOption("#model-picker", "beta");
  await page.waitForFunction(() => document.getElementById("server-status").textContent === "beta · loads on its first message");
  assert.equal(await page.textContent("#model-name"), "beta");
  assert.equal(await page.isHidden("#attach"), true, "beta takes text only: no Image button");
  await page.fill("#input", "again");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("server-status").textContent === "beta · loading…");
  assert.equal(await page.isDisabled("#model-picker"), true, "no switching while the conversation generates");
  await page.screenshot({ path: shots + "/webchat-models-loading.png" });
  await page.waitForSelector("#send:not([hidden])");
  await page.waitForFunction(() => /tokens/.test([...document.querySelectorAll(".msg.assistant .stats")].pop()?.textContent || ""));
  assert.equal(await last().locator(".content").textContent(), "I am beta: You said: again");
  assert.match(await last().locator(".stats span").textContent(), /^beta · /);
  assert.match(await page.locator(".msg.assistant .stats span").first().textContent(), /^alpha · /, "the first answer still says alpha");
  await page.screenshot({ path: shots + "/webchat-models.png" });

  step("a new chat takes the last model picked; the old one keeps its own");
  await page.click("#new-chat");
  assert.equal(await page.inputValue("#model-picker"), "beta");
  await page.selectOption("#model-picker", "alpha");
  await ask(page, "third");
  assert.equal(await last().locator(".content").textContent(), "I am alpha: You said: third");
  await page.click(".conv:nth-child(2) .conv-title"); // the first conversation
  assert.equal(await page.inputValue("#model-picker"), "beta", "the first conversation talks to beta now");

  step("reload: the conversations keep their models");
  await page.reload();
  await page.waitForSelector("#model-picker:not([hidden])");
  assert.equal(await page.inputValue("#model-picker"), "beta");
  await ask(page, "after reload");
  assert.equal(await last().locator(".content").textContent(), "I am beta: You said: after reload");

  step("on a 360 px screen the picker fits the header");
  await page.setViewportSize({ width: 360, height: 740 });
  const fit = await page.evaluate(() => {
    const h = document.getElementById("chat-header");
    const p = document.getElementById("model-picker").getBoundingClientRect();
    return { over: h.scrollWidth - h.clientWidth, page: document.documentElement.scrollWidth, right: p.right };
  });
  assert.ok(fit.over <= 0 && fit.page <= 360 && fit.right <= 360, "header fits: " + JSON.stringify(fit));
  await page.screenshot({ path: shots + "/webchat-models-360.png" });

  assert.deepEqual(problems, [], "page problems");
  console.log("models test passed");
} finally {
  await context.close();
}
