// Checks that the page's Markdown renderer stays bounded and safe on
// hostile input (run by browser.mjs on its page): 6,000 ">" in one line
// (which used to overflow the stack and leave the chat stuck), deeply
// nested lists, 1 MB of text, patterns that make naive regular expressions
// quadratic, and a render that runs out of its time budget; then the same
// through the server, and a reload.
import assert from "node:assert/strict";
import { ask, lastAnswer, step } from "./chromium.mjs";

export async function checkMarkdownLimits(page) {
  step("Markdown: hostile input renders quickly, bounded and inert");
  const r = await page.evaluate(() => {
    const max = SafeMarkdown.LIMITS.maxDepth;
    // nesting is the deepest run of tag elements inside one another.
    const nesting = (root, tag) => {
      let deepest = 0;
      for (const e of root.querySelectorAll(tag)) {
        let n = 0;
        for (let p = e; p && p !== root; p = p.parentElement) if (p.tagName === tag.toUpperCase()) n++;
        deepest = Math.max(deepest, n);
      }
      return deepest;
    };
    const render = (text, budget) => {
      const t0 = performance.now();
      const box = document.createElement("div");
      box.appendChild(SafeMarkdown.render(text, budget));
      return { box, ms: performance.now() - t0 };
    };
    const unsafe = (box) => box.querySelectorAll("script, img, iframe, svg, object, [onerror], [onload]").length +
      [...box.querySelectorAll("a")].filter((a) => !/^(https?:|mailto:)/.test(a.getAttribute("href"))).length;
    const out = { max };
    const evil = "<script>window.__pwned = 4</script><img src=x onerror=\"window.__pwned = 5\"> [x](javascript:window.__pwned=6)";

    let x = render(">".repeat(6000));
    out.quotes = { ms: x.ms, depth: nesting(x.box, "blockquote"), text: x.box.textContent };
    x = render("> ".repeat(6000) + evil);
    out.spacedQuotes = { ms: x.ms, depth: nesting(x.box, "blockquote"), unsafe: unsafe(x.box), evil: x.box.textContent.includes("<script>") };
    x = render("|a".repeat(20000) + "\n" + "|-".repeat(20000));
    out.wideTable = { ms: x.ms, columns: x.box.querySelectorAll("th").length };
    x = render("a|b\n-|-\n" + "x|y\n".repeat(1500));
    out.tallTable = { ms: x.ms, rows: x.box.querySelectorAll("tbody tr").length, after: x.box.querySelectorAll(":scope > p").length };
    const lines = [];
    for (let i = 0; i < 300; i++) lines.push(" ".repeat(2 * i) + "- item " + i);
    x = render(lines.join("\n") + "\n" + " ".repeat(600) + "- " + evil);
    out.indentedList = { ms: x.ms, depth: nesting(x.box, "ul"), last: x.box.textContent.includes("item 299"), unsafe: unsafe(x.box) };
    x = render("- ".repeat(5000) + "1. ".repeat(5000) + "x");
    out.inlineList = { ms: x.ms, depth: nesting(x.box, "ul") + nesting(x.box, "ol"), x: x.box.textContent.endsWith("x") };
    const mb = ("**bold** " + evil + "\n> quote\n").repeat(Math.ceil(1e6 / 110));
    x = render(mb);
    out.megabyte = { ms: x.ms, length: mb.length, plain: x.box.querySelectorAll(".plain").length, same: x.box.textContent === mb, unsafe: unsafe(x.box) };
    const slow = "**a ~~b [c](d _f *g __h ![i]( ".repeat(3000);
    x = render(slow);
    out.unclosed = { ms: x.ms, length: slow.length, same: x.box.textContent === slow.trim() };
    let ticks = ""; // backtick runs of lengths 1..400, none closed
    for (let i = 1; i <= 400; i++) ticks += "`".repeat(i) + "a";
    x = render(ticks);
    out.backticks = { ms: x.ms, length: ticks.length, same: x.box.textContent === ticks };
    const doc = "A paragraph with **bold**, *italic* and `code`.\n\n- a list\n- of items\n\n".repeat(600);
    x = render(doc, 0);
    out.budget = { ms: x.ms, plain: x.box.querySelectorAll(".plain").length, end: x.box.textContent.trimEnd().endsWith("of items") };
    // A budget far above the document's cost: on a loaded machine the
    // default 250 ms can run out and turn the tail plain, which is the
    // budget working, not what this case checks.
    x = render(doc, 60000);
    out.fullDoc = { ms: x.ms, plain: x.box.querySelectorAll(".plain").length, strong: x.box.querySelectorAll("strong").length };
    return out;
  });
  console.log("markdown limits:", JSON.stringify(r, (k, v) => (typeof v === "number" ? Math.round(v * 10) / 10 : k === "text" ? v.length : v)));
  const slowest = 2000; // ms; each of these takes well under 100 ms on a laptop
  for (const [name, c] of Object.entries(r)) if (c.ms !== undefined) assert.ok(c.ms < slowest, `${name} took ${c.ms} ms`);
  assert.equal(r.quotes.depth, r.max, "6,000 '>' nest maxDepth quotes deep");
  assert.equal(r.quotes.text, ">".repeat(6000 - r.max), "the '>' past the cap stay as text");
  assert.equal(r.spacedQuotes.depth, r.max);
  assert.equal(r.spacedQuotes.unsafe, 0, "no element from the text deep in quotes");
  assert.ok(r.spacedQuotes.evil, "the markup past the cap is shown as text");
  assert.equal(r.indentedList.depth, r.max, "300 nested list levels stop at maxDepth");
  assert.ok(r.indentedList.last, "the deepest items are still shown");
  assert.equal(r.indentedList.unsafe, 0);
  assert.ok(r.inlineList.depth <= r.max && r.inlineList.depth > 0 && r.inlineList.x, "list markers in one line: " + JSON.stringify(r.inlineList));
  assert.ok(r.megabyte.length > 1e6 && r.megabyte.plain === 1 && r.megabyte.same, "1 MB is shown as plain text: " + JSON.stringify(r.megabyte));
  assert.equal(r.megabyte.unsafe, 0);
  assert.ok(r.unclosed.length < 1e5 && r.unclosed.same, "unclosed openers stay as text");
  assert.equal(r.wideTable.columns, 64, "tables have at most 64 columns");
  assert.ok(r.tallTable.rows === 1000 && r.tallTable.after === 1, "tables have at most 1,000 rows, then text: " + JSON.stringify(r.tallTable));
  assert.ok(r.backticks.same, "unclosed code spans stay as text");
  assert.ok(r.budget.plain >= 1 && r.budget.end, "past its time budget the rest is plain text: " + JSON.stringify(r.budget));
  assert.ok(r.fullDoc.plain === 0 && r.fullDoc.strong === 600, "within its budget all is Markdown: " + JSON.stringify(r.fullDoc));
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no injected code ran");

  step("an answer with 6,000 '>' in one line renders, the chat goes on, and a reload works");
  await page.click("#new-chat");
  await ask(page, "quotes\n" + ">".repeat(6000));
  const last = lastAnswer(page);
  assert.equal(await last.locator(".content blockquote").count(), r.max);
  assert.equal(await page.isVisible("#send"), true, "the chat is not stuck generating");
  await ask(page, "still here?");
  assert.equal(await lastAnswer(page).locator(".content").textContent(), "You said: still here?");
  await page.reload();
  await page.waitForFunction(() => document.getElementById("model-name").textContent === "fake-smollm3");
  assert.equal(await page.locator(".msg.assistant").first().locator(".content blockquote").count(), r.max, "the answer renders after a reload");
}
