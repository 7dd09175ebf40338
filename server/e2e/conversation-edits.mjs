// Checks, run by browser.mjs on its page, that a conversation never
// dead-ends: messages can be edited, deleted and branched (and what the page
// sends the server follows), a conversation too long for the context says
// what was left out or offers ways out, and the footer, the demo banner and
// a 360 px screen show what they should.
import assert from "node:assert/strict";
import { answered, ask, lastAnswer, step } from "./chromium.mjs";

const contents = (body) => body.messages.map((m) => m.content);
const texts = (page) => page.locator(".msg").evaluateAll((ms) => ms.map((m) => (m.querySelector(".bubble, .content") || m).textContent));

// sentRequests records the chat requests the page makes.
function sentRequests(page) {
  const bodies = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData()));
  });
  return () => bodies[bodies.length - 1];
}

// messageButton clicks a message's action button (a question's show on
// hover).
async function messageButton(page, msg, name) {
  await msg.hover();
  await msg.getByRole("button", { name, exact: true }).click();
}

export async function checkEditing(page) {
  const sent = sentRequests(page);

  step("edit a question: it is asked again and the answers after it go");
  await page.click("#new-chat");
  await page.click("label.toggle"); // thinking off: shorter answers
  await ask(page, "first question");
  await ask(page, "second question");
  await messageButton(page, page.locator(".msg.user").first(), "Edit");
  await page.locator(".msg.user .editor textarea").fill("first question, edited");
  await page.locator(".msg.user .editor").getByRole("button", { name: "Send" }).click();
  await answered(page);
  assert.deepEqual(await texts(page), ["first question, edited", "You said: first question, edited"]);
  assert.deepEqual(contents(sent()), ["first question, edited"], "the server is sent the edited conversation");
  const session = sent().session_id;
  assert.match(session, /^sess-/);

  step("edit an answer: only its text changes, and the next request carries it");
  const answer = lastAnswer(page);
  await messageButton(page, answer, "Edit");
  await answer.locator(".editor textarea").fill("A corrected **answer**.");
  await answer.getByRole("button", { name: "Save" }).click();
  assert.equal(await answer.locator(".content strong").textContent(), "answer");
  await ask(page, "third question");
  assert.deepEqual(contents(sent()), ["first question, edited", "A corrected **answer**.", "third question"]);
  assert.equal(sent().session_id, session, "the conversation keeps its server session");

  step("delete a message: the next request leaves it out");
  await messageButton(page, page.locator(".msg.assistant").first(), "Delete");
  assert.deepEqual(await texts(page), ["first question, edited", "third question", "You said: third question"]);
  await ask(page, "fourth question");
  assert.deepEqual(contents(sent()), ["first question, edited", "third question", "You said: third question", "fourth question"]);
  assert.equal(sent().session_id, session);
  const title = await page.textContent("#chat-title");
  const conversations = await page.locator("#conversations .conv").count();

  step("branch from an answer: a new conversation with its own session; the original stays");
  await messageButton(page, page.locator(".msg.assistant").first(), "Branch");
  assert.equal(await page.locator("#conversations .conv").count(), conversations + 1);
  assert.equal(await page.textContent("#chat-title"), title + " · branch");
  assert.equal(await page.isChecked("#thinking"), false, "the branch keeps the thinking setting");
  await ask(page, "in the branch");
  assert.deepEqual(contents(sent()), ["first question, edited", "third question", "You said: third question", "in the branch"]);
  assert.notEqual(sent().session_id, session, "a branch has its own server session");
  await page.locator("#conversations .conv-title").filter({ hasText: new RegExp("^" + title + "$") }).click();
  assert.equal(await page.locator(".msg").count(), 5, "the original conversation is unchanged");

  step("branch from a question: the question comes back in the input box");
  await messageButton(page, page.locator(".msg.user").last(), "Branch");
  assert.equal(await page.locator("#conversations .conv").count(), conversations + 2);
  assert.equal(await page.locator(".msg").count(), 3);
  assert.equal(await page.inputValue("#input"), "fourth question");
  await page.fill("#input", "");

  step("a question left without an answer can be answered");
  await messageButton(page, lastAnswer(page), "Delete");
  await messageButton(page, page.locator(".msg.user").last(), "Answer");
  await answered(page);
  assert.deepEqual(await texts(page), ["first question, edited", "third question", "You said: third question"]);
  assert.deepEqual(contents(sent()), ["first question, edited", "third question"]);
}

export async function checkContextFull(page) {
  const sent = sentRequests(page);
  const tooLong = "word ".repeat(5000).trim();

  step("a message too long for the context can be taken back to shorten it");
  await page.click("#new-chat");
  await ask(page, "a short question");
  await ask(page, tooLong);
  const error = lastAnswer(page).locator(".error");
  assert.match(await error.textContent(), /no longer fits in the model's context window/);
  await error.getByRole("button", { name: "Delete the message" }).click();
  assert.equal(await page.locator(".msg").count(), 2, "the message and its error are gone");
  assert.equal(await page.inputValue("#input"), tooLong, "the message is back in the input box");

  step("or edited in place");
  await page.keyboard.press("Enter");
  await answered(page);
  assert.deepEqual(await lastAnswer(page).locator(".stats button").allTextContents(), ["Regenerate", "Delete"], "a failed answer has nothing to copy or edit");
  await lastAnswer(page).getByRole("button", { name: "Edit the message" }).click();
  await page.locator(".msg.user .editor textarea").fill("a shorter message");
  await page.locator(".msg.user .editor").getByRole("button", { name: "Send" }).click();
  await answered(page);
  assert.deepEqual(await texts(page), ["a short question", "You said: a short question", "a shorter message", "You said: a shorter message"]);

  step("or asked in a new chat without the earlier turns");
  await page.fill("#input", tooLong);
  const conversations = await page.locator("#conversations .conv").count();
  await page.keyboard.press("Enter");
  await answered(page);
  await lastAnswer(page).getByRole("button", { name: "New chat from this message" }).click();
  await answered(page);
  assert.equal(await page.locator("#conversations .conv").count(), conversations + 1);
  assert.deepEqual(contents(sent()), [tooLong], "the new chat sends only that message");
  assert.match(await lastAnswer(page).locator(".error").textContent(), /no longer fits/, "still too long on its own");
  await page.locator("#conversations .conv.active .conv-delete").click();
}

export async function checkDroppedMessages(page) {
  step("an answer that needed older messages left out says so (and a damaged store does not break the page)");
  await page.evaluate(() => {
    // A conversation that no longer fits the fake's 4,096-token context:
    // four messages of 1,500 words each.
    const saved = JSON.parse(localStorage.getItem("smolgo.chat.v1"));
    const long = "word ".repeat(1500).trim();
    saved.conversations.unshift({ id: "c-long", title: "Long history", thinking: false, sessionId: null, created: Date.now(),
      messages: [{ role: "user", content: long }, { role: "assistant", content: long }, { role: "user", content: long }, { role: "assistant", content: long }] });
    saved.conversations.push(null, { id: "c-bad", title: "damaged", messages: "not a list" }); // must not break the page
    saved.current = "c-long";
    localStorage.setItem("smolgo.chat.v1", JSON.stringify(saved));
  });
  await page.reload();
  await page.waitForFunction(() => document.getElementById("model-name").textContent === "fake-smollm3");
  assert.equal(await page.locator("#conversations .conv-title").filter({ hasText: "damaged" }).count(), 0, "a damaged stored conversation is dropped");
  await ask(page, "and now?");
  assert.equal(await lastAnswer(page).locator(".content").textContent(), "You said: and now?");
  assert.equal(await lastAnswer(page).locator(".notice").textContent(), "2 older messages were left out to fit the context");
  assert.equal(await page.locator(".notice").count(), 1, "only the answer that needed it says so");
}

export async function checkStatusAndBanner(page, shots) {
  step("the footer shows batch occupancy and the demo banner when /health says so");
  const health = { status: "ok", model: "fake-smollm3", slots_idle: 0, slots_processing: 4, queued: 1, sessions: 3,
    session_bytes: 0, demo: true, sequences_active: 3, sequences_max: 4, sequences_waiting: 1 };
  await page.route("**/health", (route) => route.fulfill({ json: health }));
  await page.reload();
  await page.waitForFunction(() => document.getElementById("server-status").textContent === "fake-smollm3 · 3/4 generating · 1 queued");
  assert.equal(await page.isVisible("#demo-banner"), true);
  assert.equal(await page.textContent("#demo-banner"),
    "Demo model with random weights: answers are gibberish. Run with -model FILE for a real model.");
  await page.screenshot({ path: shots + "/webchat-demo.png" });
  await page.unroute("**/health");
  await page.reload();
  await page.waitForFunction(() => / busy · \d+ queued$/.test(document.getElementById("server-status").textContent));
  assert.equal(await page.isVisible("#demo-banner"), false);
}

export async function checkNarrowScreen(page, shots) {
  step("on a 360 px screen the placeholder fits and long titles end with an ellipsis");
  await page.setViewportSize({ width: 360, height: 740 });
  await page.click("#menu");
  await page.click("#new-chat");
  const question = "Could you please explain, in great detail and with examples, how a KV cache speeds up decoding?";
  await ask(page, question);
  await page.click("#menu");
  const m = await page.evaluate(() => {
    const input = document.getElementById("input");
    const cs = getComputedStyle(input);
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = cs.font;
    const overflow = (e) => ({ text: e.textContent, style: getComputedStyle(e).textOverflow, cut: e.scrollWidth > e.clientWidth });
    return {
      placeholder: ctx.measureText(input.placeholder).width,
      room: input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
      page: document.documentElement.scrollWidth,
      header: document.getElementById("chat-header").scrollWidth - document.getElementById("chat-header").clientWidth,
      chat: overflow(document.getElementById("chat-title")),
      conv: overflow(document.querySelector("#conversations .conv.active .conv-title")),
    };
  });
  await page.screenshot({ path: shots + "/webchat-360.png" });
  await page.click("#conversations .conv.active .conv-title"); // closes the menu
  await page.setViewportSize({ width: 1200, height: 800 });
  assert.ok(m.placeholder <= m.room, `the placeholder (${m.placeholder} px) fits the input (${m.room} px)`);
  assert.ok(m.page <= 360 && m.header <= 0, "nothing is wider than the screen: " + JSON.stringify(m));
  assert.equal(m.chat.text, question.slice(0, 47) + "…", "a long title is cut with an ellipsis");
  for (const t of [m.chat, m.conv]) assert.ok(t.style === "ellipsis" && t.cut, "the title is cut by CSS: " + JSON.stringify(t));
}
