// The smolgo web chat.
//
// Conversations live in the browser (localStorage); each one also has a
// session on the server that holds its KV cache, so a follow-up question
// only runs the new tokens. Answers stream from the OpenAI-compatible
// endpoint (/v1/chat/completions, stream: true). Model text is untrusted:
// it is only ever put into the page as text or through SafeMarkdown, which
// builds DOM nodes and never parses HTML.
//
// Every message can be edited, deleted or branched into a new
// conversation; the page always sends the conversation's full message list,
// so the server session (which keeps the KV cache of the longest common
// prefix) stays consistent with whatever the list now is.
//
// A server with several models (server.Router) lists them in /api/info: each
// conversation then talks to the chat model picked in its header (new ones
// take the last model picked), its server session belongs to that model, and
// the footer shows that model's state (it loads on its first message).
//
// A model that takes images (/api/info's modalities.vision, or with several
// models the model's input_modalities) gets an Image button; an image can
// also be pasted or dropped into the message box. Images go with their
// question as OpenAI image_url parts holding data: URLs, and show as
// thumbnails above it.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const STORE = "smolgo.chat.v1";
  const state = { conversations: [], current: null, running: null, info: null, lastModel: null, attachments: [] };

  // ---------- persistence ----------
  function load() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE) || "{}");
      if (Array.isArray(saved.conversations)) state.conversations = saved.conversations.filter(valid);
      state.current = saved.current || null;
      if (typeof saved.lastModel === "string") state.lastModel = saved.lastModel;
    } catch (e) { /* start fresh */ }
    for (const c of state.conversations) {
      for (const m of c.messages) if (m.pending) { m.pending = false; m.stopped = true; }
    }
    if (!state.conversations.find((c) => c.id === state.current)) state.current = null;
  }
  // valid keeps a stored conversation only if the page can show it (an
  // older or damaged store must not break every reload).
  function valid(c) {
    if (!c || typeof c.id !== "string" || typeof c.title !== "string" || !Array.isArray(c.messages)) return false;
    c.messages = c.messages.filter((m) => m && (m.role === "user" || m.role === "assistant") && typeof (m.content || "") === "string");
    for (const m of c.messages) {
      if (m.images !== undefined) m.images = Array.isArray(m.images) ? m.images.filter(isImageURL) : [];
    }
    return true;
  }

  function save() {
    try {
      localStorage.setItem(STORE, JSON.stringify({ conversations: state.conversations, current: state.current, lastModel: state.lastModel }));
    } catch (e) { /* storage full or disabled: the chat still works */ }
  }

  function newConversation() {
    const c = { id: "c" + Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: "New chat", thinking: true, messages: [], sessionId: null, created: Date.now() };
    state.conversations.unshift(c);
    state.current = c.id;
    save();
    return c;
  }
  const current = () => state.conversations.find((c) => c.id === state.current);

  // ---------- models ----------
  // chatModels lists the chat models of a server with several; a server
  // with one model lists none, and the page then never names a model.
  function chatModels() {
    const ms = state.info && Array.isArray(state.info.models) ? state.info.models : [];
    return ms.filter((m) => m && m.kind === "chat" && typeof m.id === "string").map((m) => m.id);
  }
  const several = () => chatModels().length > 0;

  // modelOf is the model a conversation talks to: its own while the server
  // still has it, else the last one picked, else the server's default.
  function modelOf(conv) {
    const ms = chatModels();
    if (conv && ms.includes(conv.model)) return conv.model;
    if (ms.includes(state.lastModel)) return state.lastModel;
    return state.info ? state.info.model : "";
  }

  function renderPicker() {
    const pick = $("model-picker");
    const ms = chatModels();
    pick.hidden = ms.length < 2;
    if (state.info) {
      $("model-name").textContent = modelOf(current());
      document.title = modelOf(current()) + " · smolgo chat";
    }
    if (pick.hidden) return;
    if (pick.options.length !== ms.length || [...pick.options].some((o, i) => o.value !== ms[i])) {
      pick.replaceChildren(...ms.map((id) => {
        const o = document.createElement("option");
        o.value = o.textContent = id;
        return o;
      }));
    }
    pick.value = modelOf(current());
    pick.disabled = generating(current());
  }

  // ---------- images ----------
  const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  // isImageURL accepts only what the page itself makes: a data: URL of an
  // image format the server reads (anything else never becomes an <img>).
  const isImageURL = (u) => typeof u === "string" && IMAGE_TYPES.some((t) => u.startsWith("data:" + t + ";base64,"));

  // takesImages says whether the conversation's model takes images.
  function takesImages() {
    const info = state.info;
    if (!info) return false;
    if (several()) {
      const m = info.models.find((x) => x && x.id === modelOf(current()));
      return !!(m && Array.isArray(m.input_modalities) && m.input_modalities.includes("image"));
    }
    return !!(info.modalities && info.modalities.vision);
  }

  function attachNote(text) {
    $("attach-note").textContent = text || "";
    $("attach-note").hidden = !text;
  }

  // addImages attaches image files to the message being written, refusing
  // those the server would not read or take (its body limit, in base64).
  async function addImages(files) {
    attachNote("");
    const limit = state.info && state.info.max_body_bytes > 0 ? state.info.max_body_bytes : 0;
    for (const f of files) {
      if (!IMAGE_TYPES.includes(f.type)) {
        attachNote(`${f.name || "The file"} is not a PNG, JPEG, GIF or WebP image.`);
        continue;
      }
      if (limit && Math.ceil(f.size / 3) * 4 + 64 * 1024 > limit) {
        attachNote(`${f.name || "The image"} is too large: this server takes requests up to ${(limit / (1 << 20)).toFixed(0)} MiB.`);
        continue;
      }
      try {
        const url = await new Promise((resolve, reject) => {
          const r = new FileReader();
          r.onload = () => resolve(r.result);
          r.onerror = () => reject(r.error);
          r.readAsDataURL(f);
        });
        if (isImageURL(url)) state.attachments.push(url);
      } catch (e) {
        attachNote(`${f.name || "The image"} could not be read: ${e && e.message || e}`);
      }
    }
    renderAttachments();
  }

  function renderAttachments() {
    const box = $("attachments");
    box.replaceChildren(...state.attachments.map((url, i) => {
      const d = document.createElement("div");
      d.className = "attachment";
      const img = document.createElement("img");
      img.src = url;
      img.alt = "Image " + (i + 1);
      const x = document.createElement("button");
      x.type = "button";
      x.textContent = "×";
      x.title = "Remove this image";
      x.setAttribute("aria-label", "Remove image " + (i + 1));
      x.addEventListener("click", () => {
        state.attachments.splice(i, 1);
        renderAttachments();
        $("input").focus();
      });
      d.append(img, x);
      return d;
    }));
    box.hidden = state.attachments.length === 0;
  }

  // imageFiles are the image files among a paste's or a drop's items.
  function imageFiles(dt) {
    if (!dt) return [];
    return [...(dt.files || [])].filter((f) => f.type.startsWith("image/"));
  }

  // ---------- server ----------
  async function apiError(res) {
    let body = null;
    try { body = await res.json(); } catch (e) { /* not JSON */ }
    const err = (body && body.error) || {};
    return { status: res.status, code: err.code || "", message: err.message || res.statusText || "request failed" };
  }

  function friendly(e) {
    if (e.code === "queue_full" || e.status === 503 && e.code !== "shutting_down") return "The model is busy: every generation slot is in use and the queue is full. Try again in a moment.";
    if (e.code === "shutting_down") return "The server is shutting down.";
    if (e.code === "context_length_exceeded") return "This conversation no longer fits in the model's context window. Delete or edit the message, or start a new chat from it without the earlier turns. (" + e.message + ")";
    if (e.code === "session_busy") return "This conversation is still generating in another tab.";
    if (e.status === 0) return "Cannot reach the server: " + e.message;
    return "Error " + e.status + ": " + e.message;
  }

  // ensureSession returns the conversation's server session, making one
  // when it has none, when asked (the old one was evicted) or, with several
  // models, when the conversation moved to another model (a session holds
  // one model's KV cache; the old one is deleted).
  async function ensureSession(conv, fresh) {
    const model = modelOf(conv);
    const moved = several() && conv.sessionModel !== model;
    if (conv.sessionId && !fresh && !moved) return conv.sessionId;
    if (conv.sessionId && moved) fetch("api/sessions/" + encodeURIComponent(conv.sessionId), { method: "DELETE" }).catch(() => {});
    const res = await fetch(several() ? "api/sessions?model=" + encodeURIComponent(model) : "api/sessions", { method: "POST" });
    if (!res.ok) throw await apiError(res);
    conv.sessionId = (await res.json()).id;
    conv.sessionModel = model;
    save();
    return conv.sessionId;
  }

  // statusLine says how busy the server is: batch occupancy when the
  // engine batches sequences (sequences_active/sequences_max), else busy
  // slots.
  function statusLine(h) {
    if (h.status !== "ok") return "server: " + h.status;
    if (h.state === "unloaded") return `${h.model} · loads on its first message`;
    if (h.state && h.state !== "loaded") return `${h.model} · ${h.state}…`;
    const load = typeof h.sequences_max === "number" && h.sequences_max > 0
      ? `${h.sequences_active || 0}/${h.sequences_max} generating`
      : `${h.slots_processing} busy`;
    return `${h.model} · ${load} · ${h.queued} queued`;
  }

  async function refreshStatus() {
    try {
      const res = await fetch(several() ? "health?model=" + encodeURIComponent(modelOf(current())) : "health");
      const h = await res.json();
      $("server-status").textContent = statusLine(h);
      $("demo-banner").hidden = h.demo !== true;
      return h;
    } catch (e) {
      $("server-status").textContent = "server unreachable";
      return null;
    }
  }

  // settleStatus refreshes the footer after a generation ends. A stopped
  // one frees its slot on the server a moment after the browser hangs up,
  // so while the server still counts it the footer is read again shortly.
  async function settleStatus() {
    for (const wait of [0, 200, 500, 1000, 2000]) {
      if (wait) await new Promise((r) => setTimeout(r, wait));
      if (state.running) return; // the next generation's own refresh follows
      const h = await refreshStatus();
      if (!h || !(h.slots_processing > 0 || h.sequences_active > 0)) return;
    }
  }

  // ---------- rendering ----------
  const nodes = new WeakMap(); // message -> its DOM node

  function renderSidebar() {
    const nav = $("conversations");
    nav.replaceChildren();
    for (const c of state.conversations) {
      const row = document.createElement("div");
      row.className = "conv" + (c.id === state.current ? " active" : "");
      const title = document.createElement("button");
      title.type = "button";
      title.className = "conv-title";
      title.textContent = c.title;
      title.title = c.title;
      title.addEventListener("click", () => {
        state.current = c.id;
        save();
        closeMenu();
        renderAll();
        if (several()) refreshStatus();
      });
      const del = document.createElement("button");
      del.type = "button";
      del.className = "conv-delete";
      del.textContent = "×";
      del.title = "Delete conversation";
      del.setAttribute("aria-label", "Delete conversation " + c.title);
      del.addEventListener("click", () => deleteConversation(c));
      row.append(title, del);
      nav.appendChild(row);
    }
  }

  function renderAll() {
    renderSidebar();
    const conv = current();
    const box = $("messages");
    box.querySelectorAll(".msg").forEach((n) => n.remove());
    $("empty-state").hidden = !!(conv && conv.messages.length);
    $("chat-title").textContent = conv ? conv.title : "New chat";
    $("thinking").checked = conv ? conv.thinking : true;
    if (conv) for (const m of conv.messages) box.appendChild(messageNode(conv, m));
    updateComposer();
    scrollDown(true);
  }

  function messageNode(conv, m) {
    const node = document.createElement("article");
    node.className = "msg " + m.role;
    nodes.set(m, node);
    fillMessage(conv, m, node);
    return node;
  }

  function fmt(n, digits) { return Number(n).toFixed(digits); }

  // markdown renders model text; should the renderer ever fail, the text
  // is shown as it is rather than leaving the page stuck.
  function markdown(text) {
    try {
      return SafeMarkdown.render(text);
    } catch (e) {
      const d = document.createElement("div");
      d.className = "plain";
      d.textContent = text;
      return d;
    }
  }

  const editing = new WeakSet(); // messages whose editor is open

  function fillMessage(conv, m, node) {
    node.replaceChildren();
    node.classList.toggle("pending", !!m.pending);
    if (editing.has(m)) {
      node.appendChild(editor(conv, m));
      return;
    }
    if (m.role === "user") {
      if (m.images && m.images.length) {
        const t = document.createElement("div");
        t.className = "thumbs";
        m.images.forEach((url, i) => {
          const img = document.createElement("img");
          img.src = url;
          img.alt = "Attached image " + (i + 1);
          t.appendChild(img);
        });
        node.appendChild(t);
      }
      if (m.content || !(m.images && m.images.length)) {
        const b = document.createElement("div");
        b.className = "bubble";
        b.textContent = m.content;
        node.appendChild(b);
      }
      const bar = document.createElement("div");
      bar.className = "actions";
      messageActions(conv, m, bar);
      node.appendChild(bar);
      return;
    }
    const dropped = m.timings && m.timings.dropped_messages;
    if (dropped > 0) {
      const n = document.createElement("div");
      n.className = "notice";
      n.setAttribute("role", "note");
      n.textContent = dropped === 1 ? "1 older message was left out to fit the context"
        : `${dropped} older messages were left out to fit the context`;
      node.appendChild(n);
    }
    if (m.reasoning) {
      const d = document.createElement("details");
      d.className = "reasoning";
      const thinkingNow = m.pending && !m.content;
      d.open = m.reasoningOpen !== undefined ? m.reasoningOpen : thinkingNow;
      const s = document.createElement("summary");
      const words = m.reasoning.trim().split(/\s+/).length;
      s.textContent = thinkingNow ? "Thinking…" : `Reasoning (${words} words)`;
      const body = document.createElement("div");
      body.className = "reasoning-body";
      body.textContent = m.reasoning;
      d.append(s, body);
      d.addEventListener("toggle", () => { if (d.open !== thinkingNow || m.reasoningOpen !== undefined) m.reasoningOpen = d.open; });
      node.appendChild(d);
    }
    const content = document.createElement("div");
    content.className = "content markdown";
    content.appendChild(markdown(m.content || ""));
    if (m.pending) {
      const caret = document.createElement("span");
      caret.className = "caret";
      caret.setAttribute("aria-hidden", "true");
      (content.lastElementChild && /^(P|LI|H\d)$/.test(content.lastElementChild.tagName) ? content.lastElementChild : content).appendChild(caret);
    }
    node.appendChild(content);
    if (m.error) {
      const e = document.createElement("div");
      e.className = "error";
      e.setAttribute("role", "alert");
      e.textContent = m.error;
      if (m.errorCode === "context_length_exceeded") contextFullActions(conv, m, e);
      node.appendChild(e);
    }
    if (!m.pending) {
      const foot = document.createElement("div");
      foot.className = "stats";
      const line = statsLine(m);
      if (line) {
        const text = document.createElement("span");
        text.textContent = line;
        foot.appendChild(text);
      }
      const failed = m.error && !m.content; // nothing to copy, edit or branch from
      if (!failed) foot.appendChild(smallButton("Copy", () => navigator.clipboard && navigator.clipboard.writeText(m.content || "")));
      const last = conv.messages[conv.messages.length - 1] === m;
      if (last && !state.running) foot.appendChild(smallButton("Regenerate", () => regenerate(conv)));
      if (!failed) messageActions(conv, m, foot);
      else if (!generating(conv)) foot.appendChild(smallButton("Delete", () => deleteMessage(conv, m), "Delete this message"));
      node.appendChild(foot);
    }
  }

  // statsLine is the line under an answer: the server's usage and timings
  // when they arrived, else (a stopped answer) what the page counted itself.
  function statsLine(m) {
    const parts = [];
    if (several() && m.model) parts.push(m.model);
    if (m.usage) {
      parts.push(`${m.usage.completion_tokens} tokens`);
      if (m.timings && m.timings.predicted_per_second) parts.push(`${fmt(m.timings.predicted_per_second, 1)} tok/s`);
      const cached = m.usage.prompt_tokens_details ? m.usage.prompt_tokens_details.cached_tokens : 0;
      parts.push(`prompt ${m.usage.prompt_tokens}` + (cached ? ` (${cached} cached)` : ""));
      if (m.timings && m.timings.prompt_per_second && m.timings.prompt_n) parts.push(`prefill ${fmt(m.timings.prompt_per_second, 0)} tok/s`);
    } else if (m.streamed && m.streamed.tokens) {
      const s = m.streamed;
      parts.push(`${s.tokens} tokens`);
      if (s.tokens > 1 && s.last > s.first) parts.push(`${fmt((s.tokens - 1) / ((s.last - s.first) / 1000), 1)} tok/s`);
    }
    if (m.finish === "length") parts.push("stopped at the token limit");
    if (m.stopped) parts.push("stopped");
    return parts.join(" · ");
  }

  const generating = (conv) => !!state.running && state.running.conv === conv;

  // messageActions adds Edit, Branch and Delete for a message (and Answer
  // for a question left without one), except while its conversation is
  // generating. (Editing a question asks it again, so that waits until no
  // answer is generating.)
  function messageActions(conv, m, bar) {
    if (generating(conv)) return;
    if (m.role === "user" && !state.running && conv.messages[conv.messages.length - 1] === m) {
      bar.appendChild(smallButton("Answer", () => regenerate(conv), "Ask the model to answer this message"));
    }
    if (!(state.running && m.role === "user")) bar.appendChild(smallButton("Edit", () => { editing.add(m); refill(conv, m); }));
    bar.appendChild(smallButton("Branch", () => branch(conv, m), "Start a new conversation from here; this one stays as it is"));
    bar.appendChild(smallButton("Delete", () => deleteMessage(conv, m), "Delete this message"));
  }

  // contextFullActions offers ways out of a conversation that no longer
  // fits: take the message back (to shorten it) or ask it in a new chat
  // without the earlier turns.
  function contextFullActions(conv, m, box) {
    const i = conv.messages.indexOf(m);
    const asked = i > 0 && conv.messages[i - 1].role === "user" ? conv.messages[i - 1] : null;
    if (!asked || state.running) return;
    const bar = document.createElement("div");
    bar.className = "actions";
    bar.appendChild(smallButton("Delete the message", () => {
      conv.messages.splice(i - 1, 2);
      save();
      renderAll();
      $("input").value = asked.content;
      state.attachments = (asked.images || []).slice();
      renderAttachments();
      autosize();
      $("input").focus();
    }));
    bar.appendChild(smallButton("Edit the message", () => {
      editing.add(asked);
      refill(conv, asked);
    }));
    bar.appendChild(smallButton("New chat from this message", () => {
      conv.messages.splice(i, 1);
      save();
      const c = branchFrom(conv, [asked]);
      renderAll();
      generate(c);
    }));
    box.appendChild(bar);
  }

  // editor is the in-place editor of a message. Saving a question asks it
  // again (the answers after it go); saving an answer just corrects it.
  function editor(conv, m) {
    const form = document.createElement("form");
    form.className = "editor";
    const t = document.createElement("textarea");
    t.value = m.content || "";
    t.rows = Math.min(12, Math.max(2, t.value.split("\n").length));
    t.setAttribute("aria-label", "Edit message");
    t.title = "Ctrl+Enter saves, Escape cancels";
    const ok = document.createElement("button");
    ok.type = "submit";
    ok.textContent = m.role === "user" ? "Send" : "Save";
    const cancel = smallButton("Cancel", () => { editing.delete(m); refill(conv, m); });
    form.append(t, ok, cancel);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (m.role === "user" && state.running) return;
      const text = t.value.trim();
      if (!text && !(m.images && m.images.length)) return;
      editing.delete(m);
      m.content = text;
      if (m.role !== "user") {
        save();
        refill(conv, m);
        return;
      }
      conv.messages.splice(conv.messages.indexOf(m) + 1);
      save();
      renderAll();
      generate(conv);
    });
    t.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") cancel.click();
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
    });
    setTimeout(() => t.focus(), 0);
    return form;
  }

  function refill(conv, m) {
    const node = nodes.get(m);
    if (node) fillMessage(conv, m, node);
  }

  function smallButton(label, onClick, title) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link-button";
    b.textContent = label;
    if (title) b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  let frame = 0;
  function scheduleUpdate(conv, m) {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const node = nodes.get(m);
      if (node && conv.id === state.current) {
        const atBottom = nearBottom();
        fillMessage(conv, m, node);
        if (atBottom) scrollDown(true);
      }
    });
  }

  function nearBottom() {
    const box = $("messages");
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }
  function scrollDown(force) {
    const box = $("messages");
    if (force) box.scrollTop = box.scrollHeight;
  }

  function updateComposer() {
    const busy = !!state.running;
    $("send").hidden = busy;
    $("stop").hidden = !busy;
    $("thinking").disabled = false;
    $("attach").hidden = !takesImages();
    renderPicker();
  }

  // ---------- chatting ----------
  function history(conv, upto) {
    return conv.messages.slice(0, upto)
      .filter((m) => !m.pending && (!m.error || m.content))
      .map((m) => ({ role: m.role, content: m.images && m.images.length ? parts(m) : m.content }));
  }

  // parts is a question with images as OpenAI content parts: the images,
  // then the text.
  function parts(m) {
    const out = m.images.map((url) => ({ type: "image_url", image_url: { url } }));
    if (m.content) out.push({ type: "text", text: m.content });
    return out;
  }

  async function generate(conv) {
    const reply = { role: "assistant", content: "", reasoning: "", pending: true };
    const msgs = history(conv, conv.messages.length);
    conv.messages.push(reply);
    if (conv.id === state.current) {
      $("empty-state").hidden = true;
      $("messages").appendChild(messageNode(conv, reply));
      scrollDown(true);
    }
    const controller = new AbortController();
    state.running = { conv, reply, controller };
    conv.model = modelOf(conv);
    updateComposer();
    renderSidebar();
    if (several()) setTimeout(() => { if (state.running && state.running.reply === reply) refreshStatus(); }, 300); // "loading…"
    try {
      for (let attempt = 0; ; attempt++) {
        const session = await ensureSession(conv, attempt > 0);
        const res = await fetch("v1/chat/completions", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          signal: controller.signal,
          body: JSON.stringify({
            model: modelOf(conv),
            messages: msgs,
            stream: true,
            stream_options: { include_usage: true },
            session_id: session,
            chat_template_kwargs: { enable_thinking: conv.thinking },
          }),
        });
        if (!res.ok) {
          const e = await apiError(res);
          if (e.code === "session_not_found" && attempt === 0) continue; // evicted: make a new one
          reply.error = friendly(e);
          reply.errorCode = e.code;
          break;
        }
        await readStream(res, conv, reply);
        break;
      }
    } catch (e) {
      if (e && e.name === "AbortError") reply.stopped = true;
      else if (e && e.status !== undefined) reply.error = friendly(e);
      else reply.error = friendly({ status: 0, message: String(e && e.message || e) });
    } finally {
      reply.pending = false;
      state.running = null;
      save();
      updateComposer();
      // The previous answer's Regenerate button goes, this one's comes.
      if (conv.id === state.current) renderAll();
      else renderSidebar();
      settleStatus();
    }
  }

  async function readStream(res, conv, reply) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice(6);
          if (data === "[DONE]") return;
          let chunk;
          try { chunk = JSON.parse(data); } catch (e) { continue; }
          if (chunk.error) {
            reply.error = friendly({ status: 500, code: chunk.error.code, message: chunk.error.message });
            reply.errorCode = chunk.error.code;
            continue;
          }
          const choice = chunk.choices && chunk.choices[0];
          if (choice) {
            const d = choice.delta || {};
            let token = false;
            if (typeof d.reasoning_content === "string" && d.reasoning_content) { reply.reasoning += d.reasoning_content; token = true; }
            if (typeof d.content === "string" && d.content) { reply.content += d.content; token = true; }
            if (token) count(reply);
            if (choice.finish_reason) reply.finish = choice.finish_reason;
          }
          if (typeof chunk.model === "string") reply.model = chunk.model;
          if (chunk.timings) reply.timings = chunk.timings;
          if (chunk.usage) reply.usage = chunk.usage;
          scheduleUpdate(conv, reply);
        }
      }
    }
  }

  // count notes a streamed token (one per delta), so that an answer stopped
  // before the server's usage arrived still shows its size and speed.
  function count(reply) {
    const now = Date.now();
    if (!reply.streamed) reply.streamed = { tokens: 0, first: now, last: now };
    reply.streamed.tokens++;
    reply.streamed.last = now;
  }

  // titleOf makes a conversation title from its first message.
  function titleOf(text) {
    const t = text.replace(/\s+/g, " ").trim();
    return t.length > 48 ? t.slice(0, 47) + "…" : t;
  }

  function send(text, images) {
    let conv = current();
    if (!conv) conv = newConversation();
    if (state.running) return;
    const m = { role: "user", content: text };
    if (images && images.length) m.images = images;
    conv.messages.push(m);
    if (conv.title === "New chat") conv.title = text ? titleOf(text) : "Image";
    save();
    renderAll();
    generate(conv);
  }

  function regenerate(conv) {
    if (state.running) return;
    const last = conv.messages[conv.messages.length - 1];
    if (last && last.role === "assistant") conv.messages.pop();
    renderAll();
    generate(conv);
  }

  // branchFrom makes a new conversation (with its own server session) of
  // copies of msgs, named after conv, and makes it current.
  function branchFrom(conv, msgs) {
    const c = newConversation();
    c.title = (conv.title === "New chat" ? titleOf(msgs[0].content || "") : conv.title).replace(/ · branch$/, "") + " · branch";
    c.thinking = conv.thinking;
    c.messages = msgs.map((m) => {
      const copy = JSON.parse(JSON.stringify(m));
      delete copy.pending;
      return copy;
    });
    save();
    return c;
  }

  // branch starts a new conversation from message m: up to and including
  // an answer, or up to a question with the question back in the input box
  // to ask it differently.
  function branch(conv, m) {
    if (generating(conv)) return;
    const i = conv.messages.indexOf(m);
    const upto = m.role === "user" ? i : i + 1;
    branchFrom(conv, conv.messages.slice(0, upto));
    renderAll();
    if (m.role === "user") {
      $("input").value = m.content;
      state.attachments = (m.images || []).slice();
      renderAttachments();
      autosize();
    }
    $("input").focus();
  }

  function deleteMessage(conv, m) {
    if (generating(conv)) return;
    const i = conv.messages.indexOf(m);
    if (i < 0) return;
    conv.messages.splice(i, 1);
    save();
    renderAll();
  }

  function stop() {
    if (state.running) state.running.controller.abort();
  }

  async function deleteConversation(c) {
    if (state.running && state.running.conv === c) stop();
    state.conversations = state.conversations.filter((x) => x !== c);
    if (state.current === c.id) state.current = state.conversations.length ? state.conversations[0].id : null;
    save();
    renderAll();
    if (c.sessionId) fetch("api/sessions/" + encodeURIComponent(c.sessionId), { method: "DELETE" }).catch(() => {});
  }

  // ---------- wiring ----------
  function closeMenu() {
    $("app").classList.remove("menu-open");
    $("menu").setAttribute("aria-expanded", "false");
  }

  function autosize() {
    const t = $("input");
    t.style.height = "auto";
    t.style.height = Math.min(t.scrollHeight, 240) + "px";
  }

  document.addEventListener("DOMContentLoaded", async () => {
    load();
    $("composer").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = $("input").value.trim();
      const images = state.attachments;
      if ((!text && !images.length) || state.running) return;
      $("input").value = "";
      state.attachments = [];
      renderAttachments();
      attachNote("");
      autosize();
      send(text, images);
    });
    $("attach").addEventListener("click", () => $("attach-file").click());
    $("attach-file").addEventListener("change", () => {
      const files = [...$("attach-file").files];
      $("attach-file").value = ""; // the same file can be picked again
      addImages(files);
    });
    $("input").addEventListener("paste", (ev) => {
      const files = imageFiles(ev.clipboardData);
      if (!files.length || !takesImages()) return;
      ev.preventDefault();
      addImages(files);
    });
    // A file dropped anywhere on the page is attached (or, for a model
    // without images, ignored) instead of the browser opening it.
    const composer = $("composer");
    const dragsFiles = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes("Files");
    document.addEventListener("dragover", (ev) => {
      if (!dragsFiles(ev)) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = takesImages() ? "copy" : "none";
      composer.classList.toggle("dropping", takesImages());
    });
    document.addEventListener("dragleave", (ev) => { if (!ev.relatedTarget) composer.classList.remove("dropping"); });
    document.addEventListener("drop", (ev) => {
      if (!dragsFiles(ev)) return;
      ev.preventDefault();
      composer.classList.remove("dropping");
      if (takesImages()) addImages(imageFiles(ev.dataTransfer));
    });
    $("input").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $("composer").requestSubmit();
      }
    });
    $("input").addEventListener("input", autosize);
    $("stop").addEventListener("click", stop);
    $("menu").addEventListener("click", () => {
      const open = $("app").classList.toggle("menu-open");
      $("menu").setAttribute("aria-expanded", String(open));
    });
    $("new-chat").addEventListener("click", () => {
      const c = current();
      if (!c || c.messages.length) newConversation();
      closeMenu();
      renderAll();
      $("input").focus();
    });
    $("model-picker").addEventListener("change", () => {
      let c = current();
      if (!c) c = newConversation();
      c.model = state.lastModel = $("model-picker").value;
      save();
      renderAll();
      refreshStatus();
    });
    $("thinking").addEventListener("change", () => {
      let c = current();
      if (!c) c = newConversation();
      c.thinking = $("thinking").checked;
      save();
      renderSidebar();
    });
    renderAll();
    try {
      const res = await fetch("api/info");
      state.info = await res.json();
      updateComposer();
    } catch (e) { /* shown by the status line */ }
    refreshStatus();
    setInterval(refreshStatus, 10000);
    $("input").focus();
  });
})();
