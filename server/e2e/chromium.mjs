// Shared set-up of the browser tests: headless Debian Chromium through
// playwright-core, a page that records page errors, unexpected console
// errors and dialogs (the test fails on any), and helpers for steps.
// Environment: SMOLGO_URL, CHROMIUM, USER_DATA_DIR.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

export const url = process.env.SMOLGO_URL;
assert.ok(url, "SMOLGO_URL is not set");

export const step = (s) => console.log("step:", s);

// openChat launches Chromium and opens the chat page, waiting until it
// names model; problems collects what went wrong on the page. Console
// errors for HTTP 400 responses are expected (a context-full answer is one)
// and not counted.
export async function openChat(model = "fake-smollm3") {
  const context = await chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1200, height: 800 },
  });
  const problems = [];
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 400/.test(m.text())) problems.push("console error: " + m.text());
  });
  page.on("dialog", (d) => { problems.push("a dialog opened: " + d.message()); d.dismiss(); });
  page.setDefaultTimeout(15000);
  await page.goto(url + "/");
  await page.waitForFunction((m) => document.getElementById("model-name").textContent === m, model);
  return { context, page, problems };
}

// lastAnswer is the last assistant message on the page.
export const lastAnswer = (page) => page.locator(".msg.assistant").last();

// ask sends text and waits for the answer to finish (its stats line shows).
export async function ask(page, text) {
  await page.fill("#input", text);
  await page.keyboard.press("Enter");
  await answered(page);
}

// answered waits until no answer is generating and the last one has its
// stats line or an error.
export async function answered(page) {
  await page.waitForSelector("#send:not([hidden])");
  await page.waitForFunction(() => {
    const m = [...document.querySelectorAll(".msg.assistant")].pop();
    return m && !m.classList.contains("pending") && (/tokens/.test(m.querySelector(".stats")?.textContent || "") || m.querySelector(".error"));
  });
}
