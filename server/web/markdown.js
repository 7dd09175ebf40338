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
//
// Whatever the text, rendering is bounded (see LIMITS): it is iterative (a
// work list of containers to fill, no recursion, so 6,000 ">" in a row
// cannot overflow the stack), quotes and lists nest at most maxDepth deep
// (deeper markers stay as text), every inline span and link is at most
// maxSpan characters (so no pattern scans the whole text from every
// position), text over maxChars is shown as plain text, and a render that
// runs past budgetMs shows the rest of the text plain. A long answer (40 KB)
// renders in about 25 ms, the worst 100 KB in about 0.1 s (and up to 0.2 s
// more to lay out), in headless Chromium on this project's 2-core VM.
"use strict";

(function (global) {
  const LIMITS = Object.freeze({
    maxChars: 100000, // longer text is shown as plain text, unparsed
    maxDepth: 16, // quotes/lists/inline spans nested deeper stay as text
    maxSpan: 2000, // the longest inline span (code, bold, link) recognised
    maxColumns: 64, // a table row's further cells stay in its last cell
    maxRows: 1000, // a table's further rows are shown as paragraphs
    budgetMs: 250, // after this long, the rest of a render is plain text
  });

  const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
  const HEADING = /^\s{0,3}(#{1,6})(?:\s+(.*))?$/;
  const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;
  const TABLE_SEP = /^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$/; // tested on trimmed lines

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  // plain is text shown as it is (white-space: pre-wrap), for input too
  // big or too slow to render as Markdown.
  function plain(text) {
    const d = el("div", "plain");
    d.textContent = text;
    return d;
  }

  function indentOf(line) {
    const m = /^\s*/.exec(line);
    return m[0].replace(/\t/g, "    ").length;
  }

  // isRule reports a horizontal rule: three or more of one of - * _,
  // spaces allowed between them.
  function isRule(line) {
    if (indentOf(line) > 3) return false;
    return /^(?:-{3,}|\*{3,}|_{3,})$/.test(line.replace(/\s+/g, ""));
  }

  // heading returns [level, text] for an ATX heading line, or null. The
  // closing #s are trimmed with string operations, not a pattern that could
  // backtrack on a long line of spaces and #s.
  function heading(line) {
    const m = HEADING.exec(line);
    if (!m) return null;
    let t = (m[2] || "").trim();
    const closing = /(^|\s)#+$/.exec(t);
    if (closing) t = t.slice(0, closing.index).trim();
    return [m[1].length, t];
  }

  function startsBlock(line, depth) {
    if (FENCE.test(line) || HEADING.test(line) || isRule(line)) return true;
    return depth < LIMITS.maxDepth && (LIST_ITEM.test(line) || QUOTE.test(line));
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

  // One regular expression finds the next inline construct; groups:
  // 1,2 code (the whole run of backticks opens, matched atomically, so a
  // long run is not retried at every shorter length) | 3 image? 4 text 5 href | 6 **bold** | 7 lead 8 __bold__ |
  // 9 ~~strike~~ | 10 *italic* | 11 lead 12 _italic_ | 13 bare URL
  // (underscores count only at word boundaries, so snake_case stays text).
  // A span's text cannot contain its own opener (a link's text no "[",
  // bold no "**"), so each attempt stops at the next opener and a text full
  // of unclosed openers is scanned about once, not once per opener; and
  // every repetition is bounded by maxSpan besides.
  const N = LIMITS.maxSpan;
  const INLINE = new RegExp([
    `(?<!\`)(?=(\`+))\\1([\\s\\S]{0,${N}}?[^\`])\\1(?!\`)`,
    `(!?)\\[([^\\[\\]\\n]{1,${N}})\\]\\(\\s*<?([^()[\\]\\s<>]{0,${N}})>?(?:\\s+"[^"\\n]{0,${N}}")?\\s*\\)`,
    `\\*\\*(?=\\S)((?:[^*]|\\*(?!\\*)){0,${N}}?\\S)\\*\\*`,
    `(^|[^\\w])__(?=\\S)((?:[^_]|_(?!_)){0,${N}}?\\S)__(?!\\w)`,
    `~~(?=\\S)((?:[^~]|~(?!~)){0,${N}}?\\S)~~`,
    `\\*(?=[^\\s*])([^*\\n]{0,${N}}?[^\\s*])\\*`,
    `(^|[^\\w])_(?=[^\\s_])([^_\\n]{0,${N}}?[^\\s_])_(?!\\w)`,
    `(https?:\\/\\/[^\\s<>()\\[\\]]{0,${N}}[^\\s<>()\\[\\].,;:!?'"])`,
  ].join("|"), "g");

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
    const cells = s.split(/(?<!\\)\|/);
    if (cells.length > LIMITS.maxColumns) cells.push(cells.splice(LIMITS.maxColumns - 1).join("|"));
    return cells.map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  // A Renderer fills containers from a work list instead of recursing: a
  // quote, list item or inline span gets its element (or, for inline text,
  // a placeholder) at once, so the document order is fixed, and its
  // contents are queued. Each piece of work only writes into its own
  // element or in place of its own placeholder, so the order the queue is
  // drained in does not matter.
  class Renderer {
    constructor(budgetMs) {
      this.work = [];
      this.deadline = Date.now() + budgetMs;
      this.late = false;
      this.ticks = 0;
    }

    // overBudget reports whether the render has run out of time (checked
    // on every 16th call: reading the clock is not free).
    overBudget() {
      if (!this.late && (++this.ticks & 15) === 0 && Date.now() > this.deadline) this.late = true;
      return this.late;
    }

    run() {
      while (this.work.length) this.work.pop()();
    }

    blocks(lines, parent, tight, depth) {
      this.work.push(() => this.fillBlocks(lines, parent, tight, depth));
    }

    // inline queues text with inline Markdown for parent. It may share
    // parent with other work (a list item's text before its nested list),
    // so an empty text node holds its place until the text is rendered.
    inline(text, parent, noLinks, depth) {
      const anchor = document.createTextNode("");
      parent.appendChild(anchor);
      this.work.push(() => {
        const out = document.createDocumentFragment();
        this.fillInline(text, out, noLinks, depth);
        anchor.parentNode.replaceChild(out, anchor);
      });
    }

    link(parent, text, href, depth) {
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
      this.inline(text, a, true, depth + 1);
      parent.appendChild(a);
    }

    // span appends a new element for an inline span and queues its text.
    span(parent, tag, text, noLinks, depth) {
      const e = el(tag);
      this.inline(text, e, noLinks, depth + 1);
      parent.appendChild(e);
    }

    // fillInline renders text with inline Markdown into parent. Inside a
    // link (noLinks) links and bare URLs stay text: no links within links.
    fillInline(text, parent, noLinks, depth) {
      if (depth >= LIMITS.maxDepth) {
        addText(parent, text);
        return;
      }
      let pos = 0;
      const re = new RegExp(INLINE.source, "g");
      let m;
      while (!this.overBudget() && (m = re.exec(text)) !== null) {
        if (m.index > pos) addText(parent, text.slice(pos, m.index));
        if (m[1] !== undefined) {
          const c = el("code");
          c.textContent = m[2].length > 2 && m[2][0] === " " && m[2][m[2].length - 1] === " " ? m[2].slice(1, -1) : m[2];
          parent.appendChild(c);
        } else if (m[4] !== undefined) {
          if (noLinks) this.inline(m[4], parent, true, depth + 1);
          else this.link(parent, m[4], m[5], depth);
        } else if (m[6] !== undefined || m[8] !== undefined) {
          if (m[7]) addText(parent, m[7]);
          this.span(parent, "strong", m[6] !== undefined ? m[6] : m[8], noLinks, depth);
        } else if (m[9] !== undefined) {
          this.span(parent, "del", m[9], noLinks, depth);
        } else if (m[10] !== undefined) {
          this.span(parent, "em", m[10], noLinks, depth);
        } else if (m[12] !== undefined) {
          if (m[11]) addText(parent, m[11]);
          this.span(parent, "em", m[12], noLinks, depth);
        } else if (m[13] !== undefined) {
          if (noLinks) addText(parent, m[13]);
          else this.link(parent, m[13], m[13], depth);
        }
        pos = re.lastIndex;
      }
      if (pos < text.length) addText(parent, text.slice(pos));
    }

    // fillBlocks renders lines of Markdown into parent.
    fillBlocks(lines, parent, tight, depth) {
      let i = 0;
      while (i < lines.length) {
        if (this.overBudget()) {
          parent.appendChild(plain(lines.slice(i).join("\n")));
          return;
        }
        const line = lines[i];
        if (!line.trim()) { i++; continue; }

        let m = FENCE.exec(line);
        if (m) {
          const fence = m[1], lang = m[2];
          const closer = fence[0].repeat(fence.length);
          const body = [];
          i++;
          while (i < lines.length && !(lines[i].trim().startsWith(closer) && lines[i].trim().replace(/[`~]/g, "") === "")) {
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
        const h = heading(line);
        if (h) {
          const e = el("h" + Math.min(6, h[0] + 2));
          this.inline(h[1], e, false, 0);
          parent.appendChild(e);
          i++;
          continue;
        }
        if (isRule(line)) {
          parent.appendChild(el("hr"));
          i++;
          continue;
        }
        const nest = depth < LIMITS.maxDepth;
        if (nest && QUOTE.test(line)) {
          const inner = [];
          while (i < lines.length && lines[i].trim() && (m = QUOTE.exec(lines[i]))) {
            inner.push(m[1]);
            i++;
          }
          const q = el("blockquote");
          this.blocks(inner, q, false, depth + 1);
          parent.appendChild(q);
          continue;
        }
        m = nest ? LIST_ITEM.exec(line) : null;
        if (m) {
          i = this.list(lines, i, m, parent, depth);
          continue;
        }
        if (line.includes("|") && i + 1 < lines.length && lines[i + 1].includes("-") && TABLE_SEP.test(lines[i + 1].trim())) {
          i = this.table(lines, i, parent);
          continue;
        }
        // Paragraph: up to a blank line or the start of another block.
        const para = [line.trim()];
        i++;
        while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], depth)) {
          para.push(lines[i].trim());
          i++;
        }
        if (tight && parent.tagName === "LI" && !parent.firstChild) {
          this.inline(para.join("\n"), parent, false, 0);
        } else {
          const p = el("p");
          this.inline(para.join("\n"), p, false, 0);
          parent.appendChild(p);
        }
      }
    }

    // list renders the list whose first item (matched as m) is lines[i]
    // and returns the index of the first line after it.
    list(lines, i, m, parent, depth) {
      const base = indentOf(lines[i]);
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
          } else if (l.trim() && !startsBlock(l, depth) && !LIST_ITEM.test(l) && item.length === 1) {
            item.push(l.trim()); // lazy continuation of the first line
            i++;
          } else {
            break;
          }
        }
        const li = el("li");
        this.blocks(item, li, true, depth + 1);
        list.appendChild(li);
        if (i < lines.length && !lines[i].trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1]) && indentOf(lines[i + 1]) === base) i++;
      }
      parent.appendChild(list);
      return i;
    }

    // table renders the pipe table whose header is lines[i] and returns
    // the index of the first line after it.
    table(lines, i, parent) {
      const table = el("table");
      const thead = el("thead"), tr = el("tr");
      splitRow(lines[i]).forEach((c) => { const th = el("th"); this.inline(c, th, false, 0); tr.appendChild(th); });
      thead.appendChild(tr);
      table.appendChild(thead);
      const tbody = el("tbody");
      i += 2;
      for (let n = 0; n < LIMITS.maxRows && i < lines.length && lines[i].trim() && lines[i].includes("|") && !this.overBudget(); n++) {
        const row = el("tr");
        splitRow(lines[i]).forEach((c) => { const td = el("td"); this.inline(c, td, false, 0); row.appendChild(td); });
        tbody.appendChild(row);
        i++;
      }
      table.appendChild(tbody);
      const wrap = el("div", "table-wrap");
      wrap.appendChild(table);
      parent.appendChild(wrap);
      return i;
    }
  }

  // render returns a DocumentFragment for the Markdown text. Text longer
  // than LIMITS.maxChars is shown as plain text; budgetMs (default
  // LIMITS.budgetMs) bounds the time spent, after which the rest is plain.
  function render(text, budgetMs) {
    const frag = document.createDocumentFragment();
    const s = String(text == null ? "" : text);
    if (s.length > LIMITS.maxChars) {
      frag.appendChild(plain(s));
      return frag;
    }
    const r = new Renderer(budgetMs === undefined ? LIMITS.budgetMs : budgetMs);
    r.blocks(s.replace(/\r\n?/g, "\n").split("\n"), frag, false, 0);
    r.run();
    return frag;
  }

  global.SafeMarkdown = { render, safeHref, LIMITS };
})(window);
