// The smolgo web chat.
//
// Conversations live in the browser (localStorage); each one also has a
// session on the server that holds its KV cache, so a follow-up question
// only runs the new tokens. Answers stream from the OpenAI-compatible
// endpoint (/v1/chat/completions, stream: true). Model text is untrusted:
// it is only ever put into the page as text or through SafeMarkdown, which
// builds DOM nodes and never parses HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const STORE = "smolgo.chat.v1";
  const state = { conversations: [], current: null, running: null, info: null };

  // ---------- persistence ----------
  function load() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE) || "{}");
      if (Array.isArray(saved.conversations)) state.conversations = saved.conversations;
      state.current = saved.current || null;
    } catch (e) { /* start fresh */ }
    for (const c of state.conversations) {
      for (const m of c.messages) if (m.pending) { m.pending = false; m.stopped = true; }
    }
    if (!state.conversations.find((c) => c.id === state.current)) state.current = null;
  }
  function save() {
    try {
      localStorage.setItem(STORE, JSON.stringify({ conversations: state.conversations, current: state.current }));
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
    if (e.code === "context_length_exceeded") return "This conversation no longer fits in the model's context window. Start a new chat or delete earlier messages. (" + e.message + ")";
    if (e.code === "session_busy") return "This conversation is still generating in another tab.";
    if (e.status === 0) return "Cannot reach the server: " + e.message;
    return "Error " + e.status + ": " + e.message;
  }

  async function ensureSession(conv, fresh) {
    if (conv.sessionId && !fresh) return conv.sessionId;
    const res = await fetch("api/sessions", { method: "POST" });
    if (!res.ok) throw await apiError(res);
    conv.sessionId = (await res.json()).id;
    save();
    return conv.sessionId;
  }

  async function refreshStatus() {
    try {
      const res = await fetch("health");
      const h = await res.json();
      $("server-status").textContent = h.status === "ok"
        ? `${h.model} · ${h.slots_processing} busy · ${h.queued} queued`
        : "server: " + h.status;
    } catch (e) {
      $("server-status").textContent = "server unreachable";
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
      title.addEventListener("click", () => { state.current = c.id; save(); closeMenu(); renderAll(); });
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

  function fillMessage(conv, m, node) {
    node.replaceChildren();
    node.classList.toggle("pending", !!m.pending);
    if (m.role === "user") {
      const b = document.createElement("div");
      b.className = "bubble";
      b.textContent = m.content;
      node.appendChild(b);
      return;
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
    content.appendChild(SafeMarkdown.render(m.content || ""));
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
      node.appendChild(e);
    }
    if (!m.pending) {
      const foot = document.createElement("div");
      foot.className = "stats";
      const parts = [];
      if (m.usage) {
        parts.push(`${m.usage.completion_tokens} tokens`);
        if (m.timings && m.timings.predicted_per_second) parts.push(`${fmt(m.timings.predicted_per_second, 1)} tok/s`);
        const cached = m.usage.prompt_tokens_details ? m.usage.prompt_tokens_details.cached_tokens : 0;
        parts.push(`prompt ${m.usage.prompt_tokens}` + (cached ? ` (${cached} cached)` : ""));
        if (m.timings && m.timings.prompt_per_second && m.timings.prompt_n) parts.push(`prefill ${fmt(m.timings.prompt_per_second, 0)} tok/s`);
      }
      if (m.finish === "length") parts.push("stopped at the token limit");
      if (m.stopped) parts.push("stopped");
      const text = document.createElement("span");
      text.textContent = parts.join(" · ");
      foot.appendChild(text);
      const copy = smallButton("Copy", () => navigator.clipboard && navigator.clipboard.writeText(m.content || ""));
      foot.appendChild(copy);
      const last = conv.messages[conv.messages.length - 1] === m;
      if (last && !state.running) foot.appendChild(smallButton("Regenerate", () => regenerate(conv)));
      node.appendChild(foot);
    }
  }

  function smallButton(label, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link-button";
    b.textContent = label;
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
  }

  // ---------- chatting ----------
  function history(conv, upto) {
    return conv.messages.slice(0, upto)
      .filter((m) => !m.error || m.content)
      .map((m) => ({ role: m.role, content: m.content }));
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
    updateComposer();
    renderSidebar();
    try {
      for (let attempt = 0; ; attempt++) {
        const session = await ensureSession(conv, attempt > 0);
        const res = await fetch("v1/chat/completions", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          signal: controller.signal,
          body: JSON.stringify({
            model: state.info ? state.info.model : "",
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
      const node = nodes.get(reply);
      if (node && conv.id === state.current) fillMessage(conv, reply, node);
      // The previous answer's Regenerate button goes, this one's comes.
      if (conv.id === state.current) renderAll();
      updateComposer();
      refreshStatus();
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
          if (chunk.error) { reply.error = friendly({ status: 500, code: chunk.error.code, message: chunk.error.message }); continue; }
          const choice = chunk.choices && chunk.choices[0];
          if (choice) {
            if (choice.delta && typeof choice.delta.reasoning_content === "string") reply.reasoning += choice.delta.reasoning_content;
            if (choice.delta && typeof choice.delta.content === "string") reply.content += choice.delta.content;
            if (choice.finish_reason) reply.finish = choice.finish_reason;
          }
          if (chunk.timings) reply.timings = chunk.timings;
          if (chunk.usage) reply.usage = chunk.usage;
          scheduleUpdate(conv, reply);
        }
      }
    }
  }

  function send(text) {
    let conv = current();
    if (!conv) conv = newConversation();
    if (state.running) return;
    conv.messages.push({ role: "user", content: text });
    if (conv.title === "New chat") conv.title = text.replace(/\s+/g, " ").slice(0, 48);
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
      if (!text || state.running) return;
      $("input").value = "";
      autosize();
      send(text);
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
      $("model-name").textContent = state.info.model;
      document.title = state.info.model + " · smolgo chat";
    } catch (e) { /* shown by the status line */ }
    refreshStatus();
    setInterval(refreshStatus, 10000);
    $("input").focus();
  });
})();
