// Drives the web chat's images in headless Chromium against a server with
// a vision model (golden-vision's tiny Gemma 3 with its projector): the
// Image button attaches a PNG, which shows in the composer and then as a
// thumbnail above the question; the request carries it as an OpenAI
// image_url part with a data: URL; the model answers. Paste and drop attach
// images too, and × removes one. On a text-only server (SMOLGO_TEXT_URL)
// the button is hidden and a pasted image is not attached.
// Usage: SMOLGO_URL=... SMOLGO_TEXT_URL=... IMAGE=x.png CHROMIUM=... SCREENSHOT_DIR=... USER_DATA_DIR=... node images.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { openChat, step, lastAnswer, answered } from "./chromium.mjs";

const shots = process.env.SCREENSHOT_DIR || ".";
const image = process.env.IMAGE;
assert.ok(image, "IMAGE is not set");
const png = readFileSync(image);
const dataURL = "data:image/png;base64," + png.toString("base64");

// handOver dispatches a paste (into the message box) or a drop (on the
// messages) of a PNG file made in the page from base64.
async function handOver(page, kind, b64) {
  await page.evaluate(([kind, b64]) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "pasted.png", { type: "image/png" }));
    if (kind === "paste") {
      document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
    } else {
      const target = document.getElementById("messages");
      target.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
      target.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, [kind, b64]);
}

step("load the page of the vision model");
const { context, page, problems } = await openChat("gemma3-vision");
try {
  const bodies = [];
  page.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData())); });
  await page.waitForSelector("#attach:not([hidden])");

  step("attach a PNG with the Image button");
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.click("#attach")]);
  await chooser.setFiles(image);
  await page.waitForSelector("#attachments:not([hidden]) .attachment img");
  assert.equal(await page.locator("#attachments .attachment img").getAttribute("src"), dataURL, "the composer shows the image");
  await page.screenshot({ path: shots + "/webchat-image-attached.png" });

  step("ask about it: a thumbnail in the question, an image_url part in the request, an answer");
  await page.fill("#input", "What is in this picture?");
  await page.keyboard.press("Enter");
  await answered(page);
  assert.equal(await page.isHidden("#attachments"), true, "the composer is empty after sending");
  const question = page.locator(".msg.user").last();
  assert.equal(await question.locator(".thumbs img").getAttribute("src"), dataURL, "the question shows its image");
  assert.equal(await question.locator(".bubble").textContent(), "What is in this picture?");
  assert.equal(bodies.length, 1);
  assert.deepEqual(bodies[0].messages, [{ role: "user", content: [
    { type: "image_url", image_url: { url: dataURL } }, { type: "text", text: "What is in this picture?" }] }]);
  const stats = await lastAnswer(page).locator(".stats span").textContent();
  assert.match(stats, /^6 tokens · .* · prompt (\d+)/, "the model answered: " + stats);
  assert.equal(await lastAnswer(page).locator(".error").count(), 0);
  await page.screenshot({ path: shots + "/webchat-image-answer.png" });

  step("paste an image and drop another, remove one, ask with an image only");
  await handOver(page, "paste", png.toString("base64"));
  await page.waitForFunction(() => document.querySelectorAll("#attachments .attachment").length === 1);
  await handOver(page, "drop", png.toString("base64"));
  await page.waitForFunction(() => document.querySelectorAll("#attachments .attachment").length === 2);
  await page.click("#attachments .attachment:nth-child(2) button");
  assert.equal(await page.locator("#attachments .attachment").count(), 1, "× removes an image");
  await page.keyboard.press("Enter"); // no text: the image is the question
  await answered(page);
  assert.equal(bodies.length, 2);
  const sent = bodies[1].messages;
  assert.equal(sent.length, 3, "the conversation so far and the new question");
  assert.deepEqual(sent[2], { role: "user", content: [{ type: "image_url", image_url: { url: dataURL } }] });
  assert.equal(await page.locator(".msg.user").last().locator(".bubble").count(), 0, "an image-only question has no text bubble");
  assert.equal(await page.locator(".msg.user .thumbs img").count(), 2);
  assert.match(await lastAnswer(page).locator(".stats span").textContent(), /^6 tokens/);

  step("a file that is not an image is refused, saying so");
  const [chooser2] = await Promise.all([page.waitForEvent("filechooser"), page.click("#attach")]);
  await chooser2.setFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("not an image") });
  await page.waitForSelector("#attach-note:not([hidden])");
  assert.equal(await page.textContent("#attach-note"), "notes.txt is not a PNG, JPEG, GIF or WebP image.");
  assert.equal(await page.isHidden("#attachments"), true);

  step("reload: the images stay with their questions");
  await page.reload();
  await page.waitForSelector("#attach:not([hidden])");
  assert.equal(await page.locator(".msg.user .thumbs img").count(), 2);

  step("a text-only model: no Image button, a pasted image is not attached");
  await page.goto(process.env.SMOLGO_TEXT_URL + "/");
  await page.waitForFunction(() => document.getElementById("model-name").textContent !== "the model");
  await page.waitForTimeout(200);
  assert.equal(await page.isHidden("#attach"), true, "no Image button for a text-only model");
  await handOver(page, "paste", png.toString("base64"));
  await handOver(page, "drop", png.toString("base64"));
  await page.waitForTimeout(200);
  assert.equal(await page.isHidden("#attachments"), true, "nothing attached");

  assert.deepEqual(problems, [], "page problems");
  console.log("images test passed");
} finally {
  await context.close();
}
