// Drives the web chat in headless Chromium (Debian's chromium, through
// playwright-core) against a server running the fake engine:
// type a message, watch the answer stream, stop it, toggle thinking,
// regenerate, and check that HTML in an answer renders as text.
// Usage: SMOLGO_URL=... CHROMIUM=/usr/bin/chromium SCREENSHOT_DIR=... USER_DATA_DIR=... node browser.mjs
import assert from "node:assert/strict";
import { openChat, step, lastAnswer } from "./chromium.mjs";
import { checkMarkdownLimits } from "./markdown-limits.mjs";
import { checkContextFull, checkDroppedMessages, checkEditing, checkNarrowScreen, checkStatusAndBanner } from "./conversation-edits.mjs";

const shots = process.env.SCREENSHOT_DIR || ".";
step("load the page");
const { context, page, problems } = await openChat();
try {
  const last = () => lastAnswer(page);
  await page.waitForFunction(() => / busy · \d+ queued$/.test(document.getElementById("server-status").textContent));
  assert.equal(await page.isVisible("#demo-banner"), false, "no demo banner for a real model");

  step("reasoning streams in an open block, then folds away");
  await page.fill("#input", "think 40");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const d = [...document.querySelectorAll(".msg.assistant .reasoning")].pop();
    return d && d.open && /Step 5:/.test(d.textContent) && d.querySelector("summary").textContent === "Thinking…";
  });
  await page.screenshot({ path: shots + "/webchat-thinking.png" });
  await page.waitForSelector("#send:not([hidden])");
  assert.equal(await last().locator(".content").textContent(), "I thought in 40 steps.");
  assert.equal(await last().locator(".reasoning").evaluate((d) => d.open), false, "reasoning folded after the answer");
  assert.match(await last().locator(".reasoning summary").textContent(), /^Reasoning \(\d+ words\)$/);

  step("send a long message and watch it stream");
  await page.fill("#input", "count 2000");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#stop:not([hidden])");
  await last().locator(".reasoning").waitFor();
  await page.waitForFunction(() => {
    const m = [...document.querySelectorAll(".msg.assistant .content")].pop();
    return m && /^1 2 3 4 5 /.test(m.textContent);
  });
  const before = (await last().locator(".content").textContent()).length;
  await page.waitForTimeout(300);
  const during = (await last().locator(".content").textContent()).length;
  assert.ok(during > before, `text keeps streaming (${before} -> ${during} chars)`);
  await page.screenshot({ path: shots + "/webchat-streaming.png" });
  assert.equal(await last().locator(".reasoning summary").textContent(), "Reasoning (3 words)");
  assert.equal(await last().locator(".reasoning-body").textContent(), "Counting to 2000.");

  step("press stop");
  await page.click("#stop");
  await page.waitForSelector("#send:not([hidden])");
  const stopped = (await last().locator(".content").textContent()).length;
  await page.waitForTimeout(300);
  assert.equal((await last().locator(".content").textContent()).length, stopped, "no text after stop");
  assert.ok(stopped < 9000, "stopped well before the end");
  const stoppedStats = await last().locator(".stats span").textContent();
  assert.match(stoppedStats, /^\d+ tokens · [\d.]+ tok\/s · stopped$/, "a stopped answer keeps its token stats");
  assert.ok(parseInt(stoppedStats, 10) > 5, "tokens counted while streaming: " + stoppedStats);
  const status = await page.evaluate(async () => (await (await fetch("health")).json()));
  assert.equal(status.slots_processing, 0, "the server slot is free after stop");
  // The footer refreshes on its own every 10 s; after Stop it must settle
  // well before that.
  await page.waitForFunction(() => /fake-smollm3 · 0 busy · 0 queued/.test(document.getElementById("server-status").textContent),
    null, { timeout: 4000 });

  step("turn thinking off and ask again");
  await page.click("label.toggle");
  assert.equal(await page.isChecked("#thinking"), false);
  await page.fill("#input", "hello again");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#send:not([hidden])");
  await page.waitForFunction(() => /tokens/.test([...document.querySelectorAll(".msg.assistant .stats")].pop()?.textContent || ""));
  assert.equal(await last().locator(".content").textContent(), "You said: hello again");
  assert.equal(await last().locator(".reasoning").count(), 0, "no reasoning block with thinking off");
  const stats = await last().locator(".stats").textContent();
  assert.match(stats, /\d+ tokens · [\d.]+ tok\/s · prompt \d+ \(\d+ cached\)/, "stats line: " + stats);

  step("an answer with HTML and Markdown");
  const evil = 'Look: <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> ' +
    "**bold** and `code` [bad](javascript:window.__pwned=3) [good](https://example.com/a)";
  await page.fill("#input", evil);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#send:not([hidden])");
  await page.waitForFunction(() => /tokens/.test([...document.querySelectorAll(".msg.assistant .stats")].pop()?.textContent || ""));
  const content = last().locator(".content");
  const text = await content.textContent();
  assert.ok(text.includes("<script>window.__pwned = 1</script>"), "script tag shown as text: " + text);
  assert.ok(text.includes('<img src=x onerror="window.__pwned = 2">'), "img tag shown as text");
  assert.equal(await page.locator("#messages script, #messages img, #messages iframe").count(), 0, "no element made from model text");
  assert.equal(await content.locator("strong").textContent(), "bold");
  assert.equal(await content.locator("code").textContent(), "code");
  const hrefs = await content.locator("a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  assert.deepEqual(hrefs, ["https://example.com/a"], "only the safe link is a link");
  assert.ok(text.includes("bad (javascript:window.__pwned=3)"), "unsafe link kept as text");
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no injected code ran");

  step("the Markdown renderer only ever makes safe elements (fuzzed)");
  const bad = await page.evaluate(() => {
    const allowedTags = new Set(["P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "A", "UL", "OL", "LI", "BLOCKQUOTE",
      "H3", "H4", "H5", "H6", "HR", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "DIV"]);
    const allowedAttrs = new Set(["href", "target", "rel", "class", "start", "data-lang"]);
    const samples = [
      "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))",
      "[x]( javascript:alert(1))", "[x](data:text/html,<script>alert(1)</script>)", "[x](vbscript:msgbox)",
      "![i](https://e.com/x.png)", "```\n</code></pre><script>alert(1)</script>\n```", "`<b>`", "**<i>x</i>**",
      "| a | <b> |\n|---|---|\n| <script> | [l](javascript:x) |", "> <iframe src=x>", "- <svg onload=alert(1)>",
      "https://example.com/<script>", "[x](https://e.com\" onmouseover=\"alert(1))", "<a href=javascript:alert(1)>x</a>",
    ];
    const alphabet = ["<", ">", "\"", "'", "[", "]", "(", ")", "*", "_", "`", "~", "|", "-", "#", ">", "!", "\n", " ", "a",
      "javascript:", "https://x.y/", "mailto:a@b", "<script>", "onerror=", "<img ", "```", "1. ", "  "];
    let seed = 12345;
    const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
    for (let i = 0; i < 1500; i++) {
      let s = "";
      for (let j = rnd(40); j >= 0; j--) s += alphabet[rnd(alphabet.length)];
      samples.push(s);
    }
    const problems = [];
    for (const text of samples) {
      let frag;
      try { frag = SafeMarkdown.render(text); } catch (e) { problems.push("threw on " + JSON.stringify(text) + ": " + e); continue; }
      const box = document.createElement("div");
      box.appendChild(frag);
      for (const el of box.querySelectorAll("*")) {
        if (!allowedTags.has(el.tagName)) problems.push(el.tagName + " from " + JSON.stringify(text));
        for (const a of el.attributes) {
          if (!allowedAttrs.has(a.name)) problems.push("attribute " + a.name + " from " + JSON.stringify(text));
        }
        if (el.tagName === "A" && !/^(https?:\/\/|mailto:)/.test(el.getAttribute("href"))) problems.push("href " + el.getAttribute("href"));
      }
      if (problems.length > 5) break;
    }
    return problems;
  });
  assert.deepEqual(bad, [], "unsafe Markdown output");
  const rendered = await page.evaluate(() => {
    const cases = ["see https://example.com/x.", "[https://a.example/](https://a.example/)", "**[b](https://b.example/) c**",
      "1. one\n2. two\n   - nested", "snake_case_name and __init__", "# Title"];
    return cases.map((c) => {
      const box = document.createElement("div");
      box.appendChild(SafeMarkdown.render(c));
      return box.innerHTML; // reading our own DOM back as a string to compare; never written
    });
  });
  assert.deepEqual(rendered, [
    '<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer nofollow">https://example.com/x</a>.</p>',
    '<p><a href="https://a.example/" target="_blank" rel="noopener noreferrer nofollow">https://a.example/</a></p>',
    '<p><strong><a href="https://b.example/" target="_blank" rel="noopener noreferrer nofollow">b</a> c</strong></p>',
    "<ol><li>one</li><li>two<ul><li>nested</li></ul></li></ol>",
    "<p>snake_case_name and <strong>init</strong></p>", // as CommonMark
    "<h3>Title</h3>",
  ]);

  step("regenerate the last answer");
  const answers = await page.locator(".msg.assistant").count();
  await last().getByRole("button", { name: "Regenerate" }).click();
  await page.waitForSelector("#send:not([hidden])");
  await page.waitForFunction(() => /tokens/.test([...document.querySelectorAll(".msg.assistant .stats")].pop()?.textContent || ""));
  assert.equal(await page.locator(".msg.assistant").count(), answers, "regenerate replaces the answer");
  assert.match(await last().locator(".stats").textContent(), /\(\d+ cached\)/, "regenerate reuses the session cache");

  step("a second conversation has its own session and thinking setting");
  await page.click("#new-chat");
  assert.equal(await page.isChecked("#thinking"), true, "new chat starts with thinking on");
  await page.fill("#input", "Show me **Markdown**:\n\n- one\n- two\n\n```go\nfmt.Println(\"hi\")\n```");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#send:not([hidden])");
  assert.equal(await page.locator("#conversations .conv").count(), 2);
  assert.equal(await last().locator(".content li").count(), 2);
  assert.equal(await last().locator(".content pre code").textContent(), 'fmt.Println("hi")');
  await page.screenshot({ path: shots + "/webchat-markdown.png" });

  step("a message too long for the context shows a clear error");
  await page.click("#new-chat");
  await page.fill("#input", "word ".repeat(5000));
  await page.keyboard.press("Enter");
  await page.waitForSelector("#send:not([hidden])");
  assert.match(await last().locator(".error").textContent(), /no longer fits in the model's context window/);
  assert.equal(await page.locator("#conversations .conv").count(), 3);
  await page.locator("#conversations .conv.active .conv-delete").click();
  assert.equal(await page.locator("#conversations .conv").count(), 2, "conversation deleted");

  step("back to the first conversation for the screenshot");
  await page.locator("#conversations .conv-title").filter({ hasText: "think 40" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".msg").length >= 8);
  assert.equal(await page.isChecked("#thinking"), false, "the first conversation kept thinking off");
  await page.waitForTimeout(300); // let the switch's transition finish
  await page.screenshot({ path: shots + "/webchat.png" });

  step("on a phone-sized screen the conversations open from the menu button");
  await page.setViewportSize({ width: 390, height: 760 });
  assert.equal(await page.isVisible("#sidebar"), false);
  await page.click("#menu");
  assert.equal(await page.isVisible("#sidebar"), true);
  await page.screenshot({ path: shots + "/webchat-phone.png" });
  await page.locator("#conversations .conv-title").filter({ hasText: "think 40" }).click();
  assert.equal(await page.isVisible("#sidebar"), false, "choosing a conversation closes the menu");
  await page.setViewportSize({ width: 1200, height: 800 });

  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: shots + "/webchat-dark.png" });
  await page.emulateMedia({ colorScheme: "light" });

  await checkEditing(page);
  await checkContextFull(page);
  await checkDroppedMessages(page);
  await checkStatusAndBanner(page, shots);
  await checkNarrowScreen(page, shots);
  await checkMarkdownLimits(page);


  assert.deepEqual(problems, [], "no page errors");
  console.log("browser test passed; screenshots in " + shots);
} finally {
  await context.close();
}
