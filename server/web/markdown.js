// Safe Markdown rendering for untrusted model output.
//
// The renderer never parses HTML: it builds DOM nodes with createElement and
// puts every piece of model text in with createTextNode/textContent, so a
// "<script>" or "<img onerror=...>" in an answer shows up as those
// characters. Links keep only http:, https: and mailto: targets; anything
// else (javascript:, data:, relative) is shown as plain text.
//
// Supported: paragraphs (single newlines kept as line breaks), #-headings,
// fenced code blocks (``` or ~~~, an unclosed fence renders as code so far,
// which suits streaming), indented nested lists (-, *, + and 1.), block
// quotes, pipe tables, horizontal rules, and inline `code`, **bold**,
// *italic*, _italic_, ~~strike~~, [links](https://...) and bare URLs.
"use strict";

(function (global) {
  const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const HR = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;
  const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  function indentOf(line) {
    const m = /^\s*/.exec(line);
    return m[0].replace(/\t/g, "    ").length;
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || HR.test(line) || LIST_ITEM.test(line) || QUOTE.test(line);
  }

  // safeHref returns an absolute http(s)/mailto URL or null.
  function safeHref(raw) {
    const url = String(raw || "").trim();
    if (!/^(https?:\/\/|mailto:)/i.test(url)) return null;
    try {
      const u = new URL(url);
      if (u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:") return u.href;
    } catch (e) { /* not a URL */ }
    return null;
  }

  function link(parent, text, href) {
    const safe = safeHref(href);
    if (!safe) {
      // Keep what the model wrote, visibly, but inert.
      parent.appendChild(document.createTextNode(text === href ? text : text + " (" + href + ")"));
      return;
    }
    const a = el("a");
    a.href = safe;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    inline(text, a, true);
    parent.appendChild(a);
  }

  // One regular expression finds the next inline construct; groups:
  // 1,2 code | 3 image? 4 text 5 href | 6 **bold** | 7 lead 8 __bold__ |
  // 9 ~~strike~~ | 10 *italic* | 11 lead 12 _italic_ | 13 bare URL
  // (underscores count only at word boundaries, so snake_case stays text)
  const INLINE = new RegExp([
    "(`+)([\\s\\S]*?[^`])\\1(?!`)",
    "(!?)\\[([^\\]\\n]+)\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)",
    "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*",
    "(^|[^\\w])__(?=\\S)([\\s\\S]*?\\S)__(?!\\w)",
    "~~(?=\\S)([\\s\\S]*?\\S)~~",
    "\\*(?=[^\\s*])([^*\\n]*?[^\\s*])\\*",
    "(^|[^\\w])_(?=[^\\s_])([^_\\n]*?[^\\s_])_(?!\\w)",
    "(https?:\\/\\/[^\\s<>()\\[\\]]*[^\\s<>()\\[\\].,;:!?'\"])",
  ].join("|"), "g");

  // inline renders text with inline Markdown into parent. Inside a link
  // (noLinks) links and bare URLs stay text: no links within links.
  function inline(text, parent, noLinks) {
    let pos = 0;
    const re = new RegExp(INLINE.source, "g");
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > pos) addText(parent, text.slice(pos, m.index));
      if (m[1] !== undefined) {
        const c = el("code");
        c.textContent = m[2].length > 2 && m[2][0] === " " && m[2][m[2].length - 1] === " " ? m[2].slice(1, -1) : m[2];
        parent.appendChild(c);
      } else if (m[4] !== undefined) {
        if (noLinks) inline(m[4], parent, true);
        else link(parent, m[4], m[5]);
      } else if (m[6] !== undefined || m[8] !== undefined) {
        if (m[7]) addText(parent, m[7]);
        const b = el("strong");
        inline(m[6] !== undefined ? m[6] : m[8], b, noLinks);
        parent.appendChild(b);
      } else if (m[9] !== undefined) {
        const s = el("del");
        inline(m[9], s, noLinks);
        parent.appendChild(s);
      } else if (m[10] !== undefined) {
        const i = el("em");
        inline(m[10], i, noLinks);
        parent.appendChild(i);
      } else if (m[12] !== undefined) {
        if (m[11]) addText(parent, m[11]);
        const i = el("em");
        inline(m[12], i, noLinks);
        parent.appendChild(i);
      } else if (m[13] !== undefined) {
        if (noLinks) addText(parent, m[13]);
        else link(parent, m[13], m[13]);
      }
      pos = re.lastIndex;
    }
    if (pos < text.length) addText(parent, text.slice(pos));
  }

  // addText adds text, turning newlines into <br>.
  function addText(parent, text) {
    const parts = text.split("\n");
    parts.forEach((p, i) => {
      if (i > 0) parent.appendChild(el("br"));
      if (p) parent.appendChild(document.createTextNode(p));
    });
  }

  function splitRow(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  // blocks renders lines of Markdown into parent.
  function blocks(lines, parent, tight) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i++; continue; }

      let m = FENCE.exec(line);
      if (m) {
        const fence = m[1], lang = m[2];
        const body = [];
        i++;
        while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && lines[i].trim().replace(/[`~]/g, "") === "")) {
          body.push(lines[i]);
          i++;
        }
        i++; // closing fence (or past the end while streaming)
        const pre = el("pre");
        const code = el("code");
        if (lang) {
          code.className = "lang-" + lang.replace(/[^\w+#-]/g, "");
          pre.dataset.lang = lang.replace(/[^\w+#.-]/g, "");
        }
        code.textContent = body.join("\n");
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      m = HEADING.exec(line);
      if (m) {
        const h = el("h" + Math.min(6, m[1].length + 2));
        inline(m[2], h);
        parent.appendChild(h);
        i++;
        continue;
      }
      if (HR.test(line)) {
        parent.appendChild(el("hr"));
        i++;
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && lines[i].trim() && (m = QUOTE.exec(lines[i]))) {
          inner.push(m[1]);
          i++;
        }
        const q = el("blockquote");
        blocks(inner, q, false);
        parent.appendChild(q);
        continue;
      }
      m = LIST_ITEM.exec(line);
      if (m) {
        const base = indentOf(line);
        const ordered = /\d/.test(m[2]);
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
        while (i < lines.length) {
          const im = LIST_ITEM.exec(lines[i]);
          if (!im || indentOf(lines[i]) !== base || /\d/.test(im[2]) !== ordered) break;
          const item = [im[3]];
          i++;
          // Continuation: deeper-indented lines (nested lists, wrapped
          // text) and blank lines followed by deeper-indented ones.
          while (i < lines.length) {
            const l = lines[i];
            if (l.trim() && indentOf(l) > base) {
              item.push(l.slice(Math.min(indentOf(l), base + 2)));
              i++;
            } else if (!l.trim() && i + 1 < lines.length && lines[i + 1].trim() && indentOf(lines[i + 1]) > base) {
              item.push("");
              i++;
            } else if (l.trim() && !startsBlock(l) && !LIST_ITEM.test(l) && item.length === 1) {
              item.push(l.trim()); // lazy continuation of the first line
              i++;
            } else {
              break;
            }
          }
          const li = el("li");
          blocks(item, li, true);
          list.appendChild(li);
          if (i < lines.length && !lines[i].trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1]) && indentOf(lines[i + 1]) === base) i++;
        }
        parent.appendChild(list);
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
        const head = splitRow(line);
        const table = el("table");
        const thead = el("thead"), tr = el("tr");
        head.forEach((c) => { const th = el("th"); inline(c, th); tr.appendChild(th); });
        thead.appendChild(tr);
        table.appendChild(thead);
        const tbody = el("tbody");
        i += 2;
        while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
          const row = el("tr");
          splitRow(lines[i]).forEach((c) => { const td = el("td"); inline(c, td); row.appendChild(td); });
          tbody.appendChild(row);
          i++;
        }
        table.appendChild(tbody);
        const wrap = el("div", "table-wrap");
        wrap.appendChild(table);
        parent.appendChild(wrap);
        continue;
      }
      // Paragraph: up to a blank line or the start of another block.
      const para = [line.trim()];
      i++;
      while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) {
        para.push(lines[i].trim());
        i++;
      }
      if (tight && parent.tagName === "LI" && !parent.firstChild) {
        inline(para.join("\n"), parent);
      } else {
        const p = el("p");
        inline(para.join("\n"), p);
        parent.appendChild(p);
      }
    }
  }

  // render returns a DocumentFragment for the Markdown text.
  function render(text) {
    const frag = document.createDocumentFragment();
    blocks(String(text).replace(/\r\n?/g, "\n").split("\n"), frag, false);
    return frag;
  }

  global.SafeMarkdown = { render, safeHref };
})(window);
