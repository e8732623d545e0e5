/* Verity chat page. Plain JavaScript, no build step.
 *
 * Safety rules:
 * - Titles, passages, errors and user messages are text: they reach the page only
 *   through textContent / createTextNode / setAttribute — never innerHTML.
 * - An answer is Markdown. It is rendered by markdown-it with raw HTML off (so any
 *   HTML in it is escaped text), the result is sanitized by DOMPurify into a DOM
 *   fragment (an allow-list of tags and attributes, http(s)/mailto/relative links
 *   only, no images), and only then attached. Citation pills are never markup from
 *   the model: their tokens become placeholder characters before rendering, and the
 *   placeholders are swapped for pill elements built here after sanitizing.
 */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const ui = {
    threads: $("thread-list"),
    threadsToggle: $("threads-toggle"),
    workspace: $("workspace-picker"),
    newChat: $("new-chat"),
    messages: $("messages"),
    composer: $("composer"),
    input: $("composer-input"),
    send: $("send"),
    chips: $("mention-chips"),
    picker: $("mention-picker"),
    panel: $("citation-panel"),
    panelTitle: $("citation-title"),
    panelMeta: $("citation-meta"),
    panelStatus: $("citation-status"),
    panelSupport: $("citation-support"),
    panelBody: $("citation-body"),
    panelClose: $("citation-close"),
    status: $("chat-status"),
    jumpLatest: $("jump-latest"),
    // What a modal source panel (a narrow screen) makes inert behind it.
    background: [document.querySelector(".skip-link"), document.querySelector(".topbar"),
      $("sidebar"), document.querySelector(".conversation")],
  };

  const state = {
    threadId: null,
    threads: [],
    polls: new Map(), // thread id -> the AbortControllers of its messages asked for (watchPending)
    deleting: new Set(), // ids of threads a DELETE was sent for: no longer polled
    threadStop: null, // the conversation the keyboard last reached in the list: its Tab stop
    moreThreads: null, // the API's link to older conversations
    citations: new Map(), // n -> citation JSON, for the current thread
    pendingMentions: [], // [{kind, id, label}]
    folders: null, // Promise of the workspace's folders as [{kind, id, label}], once asked
    documentMatches: new Map(), // query -> Promise of matching documents, while the picker is open
    workspace: null, // the chosen workspace's slug (null: the server's default, the first)
    picker: { open: false, start: 0, query: "", items: [], active: 0 },
    loading: Promise.resolve(), // the thread being loaded into the message list
    shown: 0, // bumped each time the message list is given another conversation (or none)
    panelRequest: 0,
    pageView: null, // the open PDF page view, if any
    panelOpener: null, // the pill that opened the source panel: focus goes back to it
    following: true, // the reader is at the end of the messages: a streaming answer is followed
    workspaceKeyed: false, // a key is moving the workspace <select>: its change waits
  };
  const views = new WeakMap(); // assistant bubble -> its view (text, citations, grounding)

  // --- Helpers -------------------------------------------------------------------

  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === "text") node.textContent = value;
        else if (key === "className") node.className = value;
        else if (key === "dataset") Object.assign(node.dataset, value);
        else node.setAttribute(key, value);
      }
    }
    for (const child of children || []) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (field && field.value) return field.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // The browser's own "Failed to fetch" says nothing a user can act on.
  const OFFLINE_TEXT = "Can't reach Verity. Check your connection.";
  const DRAFT_KEY = "verity.draft"; // a question kept across signing in again

  /* The session is gone (signed out in another tab, or expired): every request fails
   * alike until the user signs in again, which the page offers once. */
  class SessionEnded extends Error {}

  async function api(path, options) {
    const opts = options || {};
    const headers = { Accept: "application/json", ...(opts.headers || {}) };
    const init = { method: opts.method || "GET", headers, credentials: "same-origin" };
    if (init.method !== "GET") headers["X-CSRFToken"] = csrfToken();
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    if (opts.signal) init.signal = opts.signal;
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      if (error.name === "AbortError") throw error; // stopped on purpose (Stop)
      throw new Error(OFFLINE_TEXT);
    }
    if (await sessionEnded(response)) {
      showSessionEnded();
      throw new SessionEnded("Your session has ended.");
    }
    if (opts.raw) return response;
    if (!response.ok) throw new Error(await errorText(response));
    return response.status === 204 ? null : response.json();
  }

  /* A 401, or the 403 DRF answers a session's request when nobody is signed in (its
   * words; a 403 for something not allowed is an ordinary error). */
  async function sessionEnded(response) {
    if (response.status === 401) return true;
    if (response.status !== 403) return false;
    try {
      const body = await response.clone().json();
      return /credentials were not provided|CSRF Failed/i.test((body && body.detail) || "");
    } catch (_) {
      return false;
    }
  }

  function showSessionEnded() {
    if (document.getElementById("session-ended")) return;
    const link = el("a", { href: "/accounts/login/?next=/", text: "Sign in again" });
    // The question being typed (or just refused) is kept for after signing in.
    link.addEventListener("click", () => {
      if (ui.input.value.trim()) sessionStorage.setItem(DRAFT_KEY, ui.input.value);
    });
    ui.messages.before(el("p", { id: "session-ended", className: "session-ended", role: "alert" },
      ["Your session has ended — ", link]));
  }

  function restoreDraft() {
    const draft = sessionStorage.getItem(DRAFT_KEY);
    sessionStorage.removeItem(DRAFT_KEY);
    if (draft && !ui.input.value) ui.input.value = draft;
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body && typeof body.detail === "string") return body.detail;
      // A refused field: {"content": ["Ensure this field has no more than 20000 characters."]}
      const fields = body && typeof body === "object" ? Object.values(body) : [];
      const said = fields.flat().filter((m) => typeof m === "string");
      return said.length ? said.join(" ") : `Request failed (HTTP ${response.status})`;
    } catch (_) {
      return `Request failed (HTTP ${response.status})`;
    }
  }

  function scrollToEnd() {
    ui.messages.scrollTop = ui.messages.scrollHeight;
    state.following = true;
    ui.jumpLatest.hidden = true;
  }

  function atEnd() {
    const { scrollHeight, scrollTop, clientHeight } = ui.messages;
    return scrollHeight - scrollTop - clientHeight < 40;
  }

  /* A streaming answer grows at the end: the view follows it only while the reader is
   * there. Someone who scrolled up to read is left where they are, and offered a jump. */
  function followLatest() {
    if (state.following) scrollToEnd();
    else ui.jumpLatest.hidden = false;
  }

  // Says a short status to screen readers (the message list itself is not a live region).
  function announce(text) {
    ui.status.textContent = text;
  }

  // --- Rendering answers: Markdown, pills, grounding -------------------------------

  const md = window.markdownit({ html: false, linkify: true, breaks: true, typographer: false });
  // A model-written image would make the browser fetch a URL nobody chose (and can
  // carry data out in it): an image becomes a link to its URL, named by its alt text.
  md.renderer.rules.image = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    const href = md.utils.escapeHtml(token.attrGet("src") || "");
    const label = md.utils.escapeHtml(self.renderInlineAsText(token.children, options, env) || "image");
    return `<a href="${href}">${label}</a>`;
  };
  // Table alignment as a class: the sanitizer allows no style attributes.
  for (const rule of ["th_open", "td_open"]) {
    md.renderer.rules[rule] = (tokens, idx, options, env, self) => {
      const token = tokens[idx];
      const align = /text-align:(left|center|right)/.exec(token.attrGet("style") || "");
      token.attrs = (token.attrs || []).filter(([name]) => name !== "style");
      if (align) token.attrJoin("class", `align-${align[1]}`);
      return self.renderToken(tokens, idx, options);
    };
  }

  // A document's passage: its Markdown source as written, hard-wrapped lines re-flowed
  // (no breaks) and its text left as it is (no linkify), so offsets into it still align;
  // images and table alignment handled as in answers.
  const passageMd = window.markdownit({ html: false, linkify: false, breaks: false, typographer: false });
  for (const rule of ["image", "th_open", "td_open"]) passageMd.renderer.rules[rule] = md.renderer.rules[rule];

  const PURIFY = {
    ALLOWED_TAGS: [
      "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote",
      "pre", "code", "em", "strong", "s", "a", "table", "thead", "tbody", "tr", "th", "td",
    ],
    ALLOWED_ATTR: ["href", "title", "class", "start"],
    // DOMPurify's default minus every scheme but http(s) and mailto (relative links stay).
    ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
    RETURN_DOM_FRAGMENT: true,
  };

  // Private-use characters mark where a pill goes ("n:k": number n, the answer's k-th
  // marker); model text cannot contain them.
  const PILL_OPEN = "\uE000";
  const PILL_CLOSE = "\uE001";
  const PLACEHOLDER = /\uE000(\d+):(\d+)\uE001/;
  const CITATION_TOKEN = /\[citation:(\d+)\]/g;

  const VERDICT_WORDS = {
    partial: "Partly supported",
    unsupported: "Not supported",
    // Past the check's budget (a very long answer): not known to be supported.
    unchecked: "Not checked",
  };
  const VERDICT_ICONS = { partial: "?", unsupported: "!", unchecked: "–" };
  let viewCounter = 0;
  const pillSupports = new WeakMap(); // pill -> what the check found for its own use

  /* The sanitized DOM of a Markdown answer, placeholders where its pills go. */
  function markdownFragment(text) {
    let k = 0;
    const source = String(text || "")
      .replace(/[\uE000\uE001]/g, "")
      .replace(CITATION_TOKEN, (_, n) => `${PILL_OPEN}${n}:${k++}${PILL_CLOSE}`);
    const fragment = DOMPurify.sanitize(md.render(source), PURIFY);
    for (const link of fragment.querySelectorAll("a[href]")) {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer nofollow");
    }
    return fragment;
  }

  function insertPills(root, view) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const found = [];
    while (walker.nextNode()) {
      if (walker.currentNode.nodeValue.includes(PILL_OPEN)) found.push(walker.currentNode);
    }
    for (const node of found) {
      // A marker in code is quoted text, as the server reads it: no pill.
      const quoted = Boolean(node.parentElement && node.parentElement.closest("code, pre"));
      const parts = node.nodeValue.split(PLACEHOLDER);
      const replacement = document.createDocumentFragment();
      for (let i = 0; i < parts.length; i += 3) {
        if (parts[i]) replacement.append(document.createTextNode(parts[i]));
        if (i + 2 >= parts.length) break;
        const [n, k] = [Number(parts[i + 1]), Number(parts[i + 2])];
        replacement.append(quoted ? document.createTextNode(`[citation:${n}]`)
          : citationPill(n, k, view));
      }
      node.replaceWith(replacement);
    }
    // A pill in a link's text would be a button inside a link: it follows the link.
    for (const pill of [...root.querySelectorAll("a .citation-pill")].reverse()) {
      pill.closest("a").after(pill);
    }
  }

  function citationFor(view, n) {
    return (view && view.citations.get(n)) || state.citations.get(n);
  }

  /* What the check found for the answer's k-th marker (number n): n's own support in the
   * sentence that marker belongs to; before the check, or for an answer stored without it,
   * n's weakest use in the answer. A pill is flagged by its own passage even when the
   * sentence is supported (by another passage it cites, or by its passages together):
   * taking the sentence's verdict would show a passage that does not say the claim as
   * supporting it, and open it on a sentence that does not. The note says the sentence
   * itself stands. */
  function pillSupport(view, n, k) {
    const known = citationFor(view, n);
    const fallback = (known && known.support) || null;
    const sentences = (view && view.grounding && view.grounding.sentences) || [];
    const marker = [...String(view ? view.text : "").matchAll(CITATION_TOKEN)][k];
    const toUnits = marker && sentences.length ? answerIndexer(view) : null;
    const sentence = marker && sentences.find(
      (s) => toUnits(s.char_start) <= marker.index && marker.index < toUnits(s.char_end),
    );
    const own = sentence && sentence.support && sentence.support[String(n)];
    // A sentence that makes no claim (a heading, a question, only code) was not checked:
    // its pill flags nothing and opens the passage as cited, with no sentence marked. The
    // number's weakest use is another sentence's, and its spans (an unsupported use's best
    // guess, often) would show text as backing what this sentence never said. The check
    // reads no span for a sentence it did not check, so none is guessed here.
    if (!sentence) return fallback;
    if (!own) return null;
    if (sentence.verdict === "supported" && own.verdict !== "supported") {
      return { ...own, note: "the sentence's sources together support it" };
    }
    return own;
  }

  /* "Not supported: the passage does not mention 10 (the sentence's sources …)". */
  function supportText(support) {
    const reason = support.reason ? `: ${support.reason}` : "";
    const note = support.note ? ` (${support.note})` : "";
    return `${VERDICT_WORDS[support.verdict]}${reason}${note}`;
  }

  /* "Source 3, not supported: Q3 Launch Notes": the verdict is in the name, which screen
   * readers always read (a description is often skipped in a paragraph). */
  function pillName(n, title, verdict) {
    const said = verdict ? `, ${VERDICT_WORDS[verdict].toLowerCase()}` : "";
    return `Source ${n}${said}${title ? `: ${title}` : ""}`;
  }

  function citationPill(n, k, view) {
    const known = citationFor(view, n);
    const title = known ? sourceName(known.document) : "";
    const support = pillSupport(view, n, k);
    const verdict = support && VERDICT_WORDS[support.verdict] ? support.verdict : null;
    const pill = el("button", {
      type: "button",
      className: "citation-pill",
      dataset: { n: String(n), k: String(k) }, // k: which marker, kept across re-renders
      // A flagged pill has its own tooltip: the native one would cover it.
      title: verdict ? null : title || `Source ${n}`,
      "aria-label": pillName(n, title, verdict),
      text: String(n),
    });
    pillSupports.set(pill, support);
    if (verdict) {
      // Shape and a symbol as well as colour: the flag must not depend on seeing colour.
      pill.classList.add(`support-${verdict}`);
      pill.append(el("span", {
        className: "support-icon", "aria-hidden": "true", text: VERDICT_ICONS[verdict],
      }));
      // The same id at every render of the answer: an unchanged block is kept (renderAssistant).
      const id = `support-tip-${view ? view.key : 0}-${k}`;
      pill.append(el("span", {
        id, role: "tooltip", className: "support-tip", text: supportText(support),
      }));
      pill.setAttribute("aria-describedby", id);
      // Escape hides the tooltip until the pointer or focus leaves the pill.
      const undismiss = () => pill.classList.remove("tip-dismissed");
      pill.addEventListener("mouseleave", undismiss);
      pill.addEventListener("blur", undismiss);
    }
    return pill;
  }

  /* The tooltip shown now (hovered or keyboard-focused pill), if any. */
  function shownTooltipPill() {
    return document.querySelector(
      ".citation-pill.support-partial:not(.tip-dismissed):is(:hover, :focus-visible), " +
      ".citation-pill.support-unsupported:not(.tip-dismissed):is(:hover, :focus-visible), " +
      ".citation-pill.support-unchecked:not(.tip-dismissed):is(:hover, :focus-visible)");
  }

  /* Text direction from the text itself: an Arabic or Hebrew paragraph reads right to left
   * (and its pills stay beside their sentence), an English one left to right. */
  const TEXT_BLOCKS = "p, li, h1, h2, h3, h4, h5, h6, blockquote, th, td";

  function autoDirection(root) {
    for (const block of root.querySelectorAll(TEXT_BLOCKS)) block.setAttribute("dir", "auto");
  }

  /* "2 of 4 cited sentences are not fully supported by their sources; 1 claim cites no
   * source": what the pills and underlines say one by one, in one visible line. */
  function groundingSummary(view, flagged) {
    const sentences = (view.grounding && view.grounding.sentences) || [];
    const cited = sentences.filter((s) => s.verdict !== "not_a_claim" && s.verdict !== "uncited");
    const weak = cited.filter((s) => s.verdict === "partial" || s.verdict === "unsupported").length;
    const unchecked = cited.filter((s) => s.verdict === "unchecked").length;
    const uncited = sentences.filter((s) => s.verdict === "uncited").length;
    const parts = [];
    if (weak) {
      parts.push(`${weak} of ${cited.length} cited sentences ${weak === 1 ? "is" : "are"} ` +
        "not fully supported by their sources");
    }
    if (unchecked) parts.push(`${unchecked} not checked`);
    if (uncited) parts.push(`${uncited} claim${uncited === 1 ? " cites" : "s cite"} no source`);
    if (!parts.length && flagged) {
      parts.push("Some sources do not back their sentence on their own (its other sources do)");
    }
    return parts.join("; ");
  }

  function labelCodeBlocks(root) {
    for (const code of root.querySelectorAll("pre > code")) {
      const language = /(?:^|\s)language-(\S+)/.exec(code.className);
      if (!language) continue;
      const pre = code.parentElement;
      const block = el("div", { className: "code-block" }, [
        el("div", { className: "code-lang", text: language[1] }),
      ]);
      pre.replaceWith(block);
      block.append(pre);
    }
  }

  /* Claim sentences without a citation get a quiet dotted underline.
   *
   * Sentence offsets index the Markdown source; the rendered text is that source
   * minus its markup. Aligning the two character by character (a pill stands for
   * its whole [citation:n] token) maps each offset onto a text node position. */
  function markUncited(root, view) {
    const sentences = (view.grounding && view.grounding.sentences) || [];
    const uncited = sentences.filter((s) => s.verdict === "uncited");
    if (!uncited.length) return;
    const atoms = [];
    collectAtoms(root, atoms);
    const map = alignToAtoms(view.text, atoms);
    const toUnits = answerIndexer(view);
    const ranges = uncited
      .map((s) => wholeWords(atoms, map[toUnits(s.char_start)], map[toUnits(s.char_end)]))
      .filter(([start, end]) => end > start)
      .sort((a, b) => b[0] - a[0]);
    // Last range first, last node first: splitting a text node keeps the nodes
    // and offsets of everything before the split valid.
    for (const [start, end] of ranges) {
      const segments = textSegments(atoms, start, end).filter((s) => !isLabel(s.node));
      segments.reverse().forEach((segment, index) => {
        const span = el("span", { className: "uncited-claim", title: "No source cited" });
        // The last piece of the sentence carries "(no source cited)" for screen readers.
        if (index === 0) span.classList.add("claim-end");
        wrapText(segment, () => span);
      });
    }
  }

  const WORD_CHAR = /[\p{L}\p{N}]/u;

  function isWordAtom(atom) {
    return Boolean(atom && !atom.pill && WORD_CHAR.test(atom.ch));
  }

  /* The atoms [start, end) widened to whole words: a sentence edge that lands inside a
   * word (a link's text, a URL's dot read as a full stop) must not cut it in two. */
  function wholeWords(atoms, start, end) {
    let [from, to] = [start, end];
    while (from > 0 && isWordAtom(atoms[from - 1]) && isWordAtom(atoms[from])) from--;
    while (to < atoms.length && to > 0 && isWordAtom(atoms[to - 1]) && isWordAtom(atoms[to])) to++;
    return [from, to];
  }

  /* A table's header cell, or a list item of a word or two ("First step"), labels rather
   * than claims: it is not underlined as an uncited claim. */
  function isLabel(node) {
    const parent = node.parentElement;
    if (!parent) return false;
    if (parent.closest("th")) return true;
    const item = parent.closest("li");
    return Boolean(item) && item.textContent.trim().split(/\s+/).length <= 2;
  }

  function clamp(value, max) {
    return Math.max(0, Math.min(max, Number(value) || 0));
  }

  /* The server's offsets (char_start, char_end, spans) count code points, as Python
   * strings do; a JavaScript string indexes UTF-16 code units, where a character past
   * U+FFFF (😀, 𝑥) takes two. Returns a function from a code-point offset into `text`
   * to the UTF-16 index of the same place, clamped to the text: one O(n) pass, then
   * O(1) a lookup. */
  function codeUnitIndexer(text) {
    const units = [0]; // units[k]: the UTF-16 index of the k-th code point
    for (const ch of String(text)) units.push(units[units.length - 1] + ch.length);
    return (offset) => units[clamp(offset, units.length - 1)];
  }

  function codePointLength(text) {
    return Array.from(String(text)).length; // iterating a string walks code points
  }

  /* The indexer of an answer's text, built once per text (every pill asks for it). */
  function answerIndexer(view) {
    if (!view.indexer || view.indexer.text !== view.text) {
      view.indexer = { text: view.text, toUnits: codeUnitIndexer(view.text) };
    }
    return view.indexer.toUnits;
  }

  function collectAtoms(node, atoms) {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        for (let i = 0; i < child.nodeValue.length; i++) {
          atoms.push({ node: child, offset: i, ch: child.nodeValue[i] });
        }
      } else if (child.classList && child.classList.contains("citation-pill")) {
        atoms.push({ pill: child });
      } else if (child.nodeType === Node.ELEMENT_NODE) {
        collectAtoms(child, atoms);
      }
    }
  }

  function alignToAtoms(source, atoms) {
    const map = new Array(source.length + 1).fill(0);
    const space = /\s/;
    const token = /\[citation:\d+\]/y;
    // "](https://…)" after a link's (or an image's) text: Markdown syntax, never shown.
    // Matched char by char, its letters would be paired with the words that follow.
    const destination = /\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:"[^"]*"|'[^']*'))?\)/y;
    let j = 0;
    for (let i = 0; i < source.length;) {
      map[i] = j;
      destination.lastIndex = i;
      const link = atoms[j] && atoms[j].ch === "]" ? null : destination.exec(source);
      if (link) {
        for (let x = i; x < i + link[0].length; x++) map[x] = j;
        i += link[0].length;
        continue;
      }
      token.lastIndex = i;
      const marker = token.exec(source);
      if (marker) {
        let k = j;
        while (k < atoms.length && !atoms[k].pill && space.test(atoms[k].ch)) k++;
        if (k < atoms.length && atoms[k].pill) {
          for (let x = i; x < i + marker[0].length; x++) map[x] = k;
          i += marker[0].length;
          j = k + 1;
          continue;
        }
      }
      const atom = atoms[j];
      const ch = source[i];
      if (atom && !atom.pill && (atom.ch === ch || (space.test(atom.ch) && space.test(ch)))) {
        i++;
        j++;
      } else if (atom && !atom.pill && space.test(atom.ch) && !space.test(ch)) {
        j++; // whitespace the renderer added between blocks
      } else {
        i++; // Markdown syntax: in the source, not in the text
      }
    }
    map[source.length] = j;
    return map;
  }

  /* `code`: keep the segments in code too (a passage's highlight may fall in one). */
  function textSegments(atoms, start, end, code) {
    const segments = [];
    for (let i = start; i < end && i < atoms.length; i++) {
      const atom = atoms[i];
      if (atom.pill) continue;
      const last = segments[segments.length - 1];
      if (last && last.node === atom.node && last.end === atom.offset) last.end += 1;
      else segments.push({ node: atom.node, start: atom.offset, end: atom.offset + 1 });
    }
    return segments.filter((s) => {
      const parent = s.node.parentElement;
      const inCode = !code && parent && parent.closest("pre, code");
      return !inCode && s.node.nodeValue.slice(s.start, s.end).trim();
    });
  }

  function wrapText(segment, make) {
    let target = segment.node;
    if (segment.end < target.nodeValue.length) target.splitText(segment.end);
    if (segment.start > 0) target = target.splitText(segment.start);
    const wrapper = make();
    target.replaceWith(wrapper);
    wrapper.append(target);
  }

  /* An assistant message's state: its text, its citations (with support) and grounding. */
  function assistantView(bubble, body) {
    const view = {
      bubble, body, text: "", citations: new Map(), grounding: null, final: false,
      timer: null, renderedAt: 0, indexer: null, key: ++viewCounter,
    };
    views.set(bubble, view);
    return view;
  }

  function setViewCitations(view, list) {
    for (const citation of list || []) {
      if (citation && Number.isInteger(citation.n)) view.citations.set(citation.n, citation);
    }
  }

  function renderAssistant(view) {
    const places = pillPlaces(view.body);
    const fragment = markdownFragment(view.text);
    insertPills(fragment, view);
    if (view.final) markUncited(fragment, view);
    labelCodeBlocks(fragment);
    autoDirection(fragment);
    markSelected(fragment, places.selected);
    keepUnchanged(view.body, fragment);
    keepPillPlaces(view.body, places);
    if (view.final && view.truncated) {
      // metadata.truncated: the reply was longer than the server reads (CHAT_MAX_ANSWER_CHARS),
      // or (metadata.stopped) someone stopped it.
      const cut = view.stopped ? "(Stopped: the answer was not written further.)"
        : "(The answer was cut here: it was longer than this server keeps.)";
      view.body.append(el("p", { className: "muted answer-cut", text: cut }));
    }
    const flagged = Boolean(view.body.querySelector(
      ".support-partial, .support-unsupported, .support-unchecked"));
    const summary = view.final ? groundingSummary(view, flagged) : "";
    // Below the answer, not in it: it is the check's word, not the model's text.
    const shown = view.bubble.querySelector(":scope > .grounding-summary");
    if (shown) shown.remove();
    if (summary) view.body.after(el("p", { className: "grounding-summary", text: summary }));
    view.bubble.classList.toggle("has-flags", flagged || Boolean(summary));
  }

  /* Which of an answer's pills (by marker, k) has the keyboard, is selected, and opened
   * the source panel. The answer is re-rendered as it streams and once more when it ends:
   * its new pills take those parts, or the keyboard would drop to the page, and closing
   * the panel could not give it back to the pill. */
  function pillPlaces(body) {
    const place = (node) => (node && node.matches && node.matches(".citation-pill")
      && body.contains(node) ? node.dataset.k : null);
    return {
      focused: place(document.activeElement),
      selected: place(body.querySelector(".citation-pill.selected")),
      opener: place(state.panelOpener),
    };
  }

  const pillAt = (root, k) => (k === null ? null
    : root.querySelector(`.citation-pill[data-k="${k}"]`));

  function markSelected(root, k) {
    const selected = pillAt(root, k);
    if (selected) selected.classList.add("selected");
  }

  /* The answer's blocks that render as before stay in the page, only those after the
   * first change are replaced: a streaming answer grows at its end, so a pill the keyboard
   * is on keeps it without being focused anew at every render (a screen reader would say
   * it again ten times a second). A kept pill takes its new render's support. */
  function keepUnchanged(body, fragment) {
    const old = [...body.childNodes];
    const fresh = [...fragment.childNodes];
    let same = 0;
    while (same < old.length && same < fresh.length && old[same].isEqualNode(fresh[same])) {
      const pills = (node) => (node.querySelectorAll ? [...node.querySelectorAll(".citation-pill")]
        : []);
      const renewed = pills(fresh[same]);
      pills(old[same]).forEach((pill, i) => pillSupports.set(pill, pillSupports.get(renewed[i])));
      same += 1;
    }
    for (const node of old.slice(same)) node.remove();
    body.append(...fresh.slice(same));
  }

  function keepPillPlaces(body, places) {
    const opener = pillAt(body, places.opener);
    if (opener) state.panelOpener = opener;
    const focused = pillAt(body, places.focused);
    if (focused && document.activeElement !== focused) focused.focus();
  }

  // While streaming, re-render at most every RENDER_INTERVAL_MS: parsing the whole
  // answer on every token would make long answers stutter.
  const RENDER_INTERVAL_MS = 100;

  function scheduleRender(view) {
    if (view.timer !== null) return;
    const wait = Math.max(0, RENDER_INTERVAL_MS - (performance.now() - view.renderedAt));
    view.timer = setTimeout(() => {
      view.timer = null;
      renderNow(view);
      followLatest();
    }, wait);
  }

  function renderNow(view) {
    if (view.timer !== null) clearTimeout(view.timer);
    view.timer = null;
    view.renderedAt = performance.now();
    renderAssistant(view);
  }

  function rememberCitations(list, older) {
    // `older`: an earlier page loaded after the newer ones, whose entries stay.
    for (const citation of list || []) {
      if (!citation || !Number.isInteger(citation.n)) continue;
      if (!(older && state.citations.has(citation.n))) state.citations.set(citation.n, citation);
    }
  }

  function mentionChip(mention, onRemove) {
    const label = mention.label || mention.title || `${mention.kind} ${mention.id}`;
    const chip = el("span", {
      className: `mention-chip kind-${mention.kind}`,
      // Which of two documents of one name it is (a chosen mention knows its folder).
      title: mention.where ? `${label}, ${mention.where}` : null,
    }, [
      el("span", { className: "chip-kind", text: mention.kind === "folder" ? "folder" : "doc" }),
      el("span", { className: "chip-label", text: label, dir: "auto" }),
    ]);
    chip.dataset.kind = mention.kind;
    chip.dataset.id = String(mention.id);
    if (onRemove) {
      const remove = el("button", {
        type: "button", className: "chip-remove", "aria-label": `Remove ${label}`, text: "×",
      });
      remove.addEventListener("click", onRemove);
      chip.append(remove);
    }
    return chip;
  }

  // --- Messages ------------------------------------------------------------------

  let messageCounter = 0;

  /* A message is an article with a heading, so screen readers can go from one to the next
   * (the visible "You" / "Verity" label is for the eye only). */
  function messageBubble(role) {
    const heading = `message-heading-${++messageCounter}`;
    const body = el("div", { className: "bubble-body" });
    const bubble = el("article", { className: `message role-${role}`, "aria-labelledby": heading }, [
      el("h2", {
        id: heading, className: "visually-hidden", text: role === "user" ? "You said" : "Verity answered",
      }),
      el("div", { className: "bubble-role", "aria-hidden": "true", text: role === "user" ? "You" : "Verity" }),
      body,
    ]);
    return { bubble, body };
  }

  function renderMessage(message) {
    const { bubble, body } = messageBubble(message.role);
    bubble.dataset.id = String(message.id);
    const text = message.resolved_content || message.content || "";
    if (message.role === "assistant") {
      if (message.status === "error") {
        bubble.classList.add("is-error");
        body.append(el("p", { text }));
        if (!(message.metadata && message.metadata.stopped)) rateFailure(bubble, message.feedback);
      } else if (message.status === "pending") {
        // Another tab's turn still running (one a stopped server left becomes an error).
        bubble.classList.add("is-pending");
        body.append(el("p", { className: "muted", text: "This answer is not finished yet." }));
        body.append(stopWaitingButton(message));
      } else {
        const view = assistantView(bubble, body);
        view.text = text;
        setViewCitations(view, message.citations);
        view.grounding = message.grounding || null;
        view.truncated = Boolean(message.metadata && message.metadata.truncated);
        view.stopped = Boolean(message.metadata && message.metadata.stopped);
        view.final = true;
        renderAssistant(view);
        addAnswerActions(bubble, view, message.feedback);
      }
    } else {
      body.append(...questionParagraphs(text));
      if (message.mentions && message.mentions.length) {
        const chips = el("div", { className: "message-mentions" });
        for (const mention of message.mentions) chips.append(mentionChip(mention));
        bubble.append(chips);
      }
    }
    return bubble;
  }

  function questionParagraphs(text) {
    return text.split(/\n[ \t]*\n/).filter((paragraph) => paragraph.trim())
      .map((paragraph) => el("p", { text: paragraph, dir: "auto" }));
  }

  /* An answer no stream of this tab is writing (another tab's, or one a restarted
   * server left): the server is asked to stop it, and closes it within seconds (its turn
   * stores what it wrote; no turn at all: an error, 10 s on) instead of after
   * LLM_TIMEOUT + 2 minutes. The page's polling (watchPending) shows the outcome. */
  function stopWaitingButton(message) {
    const threadId = state.threadId;
    const button = el("button", { type: "button", className: "answer-action", text: "Stop waiting" });
    button.addEventListener("click", () => {
      button.disabled = true;
      api(`/api/threads/${threadId}/messages/${message.id}/stop`, { method: "POST" })
        .catch(() => { button.disabled = false; });
    });
    return button;
  }

  /* Answers another tab's turn (or this tab before a reload) is still writing: the
   * thread's messages are asked for again, after 1 s and then less often (at most every
   * 5 s), until each is complete or failed; then it is shown in full, with its pills.
   * Asking stops when the conversation is left or reloaded into the list (that load
   * watches its own) and when the thread is gone. A turn a stopped server left pending
   * becomes an error on the server's side after a while, so this ends too. */
  const POLL_FIRST_MS = 1000;
  const POLL_MAX_MS = 5000;

  function watchPending(threadId, pagePath, bubbles) {
    // `pagePath`: the page (by number) the bubbles were loaded from. Pages are counted
    // from the oldest message and messages are only appended, so it still holds them
    // however many turns were added since.
    const shown = state.shown;
    const watched = new Set(bubbles);
    const current = () => state.threadId === threadId && state.shown === shown
      && !state.deleting.has(threadId);
    let wait = POLL_FIRST_MS;
    const poll = async () => {
      if (!current()) return;
      let messages = null;
      const controller = new AbortController();
      const asking = state.polls.get(threadId) || new Set();
      state.polls.set(threadId, asking.add(controller));
      try {
        const response = await api(pagePath, { raw: true, signal: controller.signal });
        if (response.status === 404) return; // deleted meanwhile (by another tab)
        if (response.ok) messages = ((await response.json()) || {}).results || [];
      } catch (error) {
        if (error.name === "AbortError") {
          // Aborted for a DELETE: if that fails, the answer is watched on (current()).
          setTimeout(poll, wait);
          return;
        }
        // Offline for a moment: ask again later.
      } finally {
        asking.delete(controller);
      }
      if (!current()) return;
      const byId = new Map((messages || []).map((m) => [String(m.id), m]));
      for (const bubble of [...watched]) {
        const message = messages ? byId.get(bubble.dataset.id) : undefined;
        if (messages && !message) watched.delete(bubble); // no longer in the thread
        if (!message || message.status === "pending") continue;
        watched.delete(bubble);
        const { scrollHeight, scrollTop, clientHeight } = ui.messages;
        const atEnd = scrollHeight - scrollTop - clientHeight < 40;
        rememberCitations(message.citations);
        const settled = renderMessage(message);
        if (questions.has(bubble)) questions.set(settled, questions.get(bubble));
        bubble.replaceWith(settled);
        placeRegenerate();
        if (atEnd) scrollToEnd();
      }
      if (!watched.size) return;
      wait = Math.min(POLL_MAX_MS, Math.round(wait * 1.5));
      setTimeout(poll, wait);
    };
    setTimeout(poll, wait);
  }

  function clearMessages(note) {
    ui.messages.replaceChildren();
    if (note) ui.messages.append(el("p", { className: "empty-state", text: note }));
  }

  // --- Threads -------------------------------------------------------------------

  /* The list is one Tab stop (the conversation last reached, else the open one, else the
   * first): the arrow keys move between conversations and, to the right, onto a row's
   * Rename and Delete; F2 and Delete do those from the conversation itself. Three stops a
   * row took a keyboard user through every action of every conversation to reach the
   * messages. It is an ARIA grid (see page.html): its keys are its description, said once
   * as it is entered, not again at every row.
   *
   * Re-rendering it (a conversation added, renamed, deleted, retitled by its first answer)
   * keeps the keyboard where it was: a row being renamed, or asking whether to delete,
   * stays as it is, and the focus on a row rebuilt goes back to that conversation. */
  function renderThreads() {
    const focus = threadFocus();
    const editing = ui.threads.querySelector(".thread.renaming, .thread.confirming");
    const listed = (id) => id !== null && state.threads.some((t) => t.id === id);
    const stop = listed(state.threadStop) ? state.threadStop
      : listed(state.threadId) ? state.threadId
        : state.threads.length ? state.threads[0].id : null;
    const rows = state.threads.map((thread) => (
      editing && editing.dataset.id === String(thread.id) ? editing : threadRow(thread, stop)));
    if (!rows.length) {
      rows.push(el("div", { className: "thread-empty", role: "row" }, [
        el("div", { role: "gridcell", text: "No conversations yet." }),
      ]));
    }
    for (const error of document.querySelectorAll(".thread-error")) error.remove();
    if (editing && rows.includes(editing)) {
      // New rows go around it: moved, it would lose the focus and what is typed in it.
      editing.classList.toggle("active", editing.dataset.id === String(state.threadId));
      for (const row of [...ui.threads.children]) if (row !== editing) row.remove();
      const at = rows.indexOf(editing);
      editing.before(...rows.slice(0, at));
      editing.after(...rows.slice(at + 1));
    } else {
      ui.threads.replaceChildren(...rows);
    }
    renderOlder();
    restoreThreadFocus(focus);
  }

  function threadRow(thread, stop) {
    const name = thread.title || "New chat";
    const button = el("button", {
      type: "button", className: "thread-link", text: name, title: name, dir: "auto",
      "aria-current": thread.id === state.threadId ? "true" : null,
      tabindex: thread.id === stop ? "0" : "-1",
    });
    button.addEventListener("click", () => selectThread(thread.id));
    const rename = el("button", {
      type: "button", className: "thread-action", text: "✎", title: "Rename (F2)",
      "aria-label": `Rename “${name}”`, tabindex: "-1",
    });
    rename.addEventListener("click", () => startRename(item, thread));
    const remove = el("button", {
      type: "button", className: "thread-action", text: "×", title: "Delete (Delete key)",
      "aria-label": `Delete “${name}”`, tabindex: "-1",
    });
    remove.addEventListener("click", () => confirmDelete(item, thread));
    const item = el("div", {
      className: thread.id === state.threadId ? "thread active" : "thread", role: "row",
      dataset: { id: String(thread.id) },
    }, [
      threadCell(button, "thread-main"),
      threadCell(rename, "thread-act"),
      threadCell(remove, "thread-act"),
    ]);
    button.addEventListener("keydown", (event) => {
      if (event.key === "F2") { event.preventDefault(); startRename(item, thread); }
      // A Mac's key marked delete sends Backspace.
      if (event.key === "Delete" || event.key === "Backspace") {
        event.preventDefault();
        confirmDelete(item, thread);
      }
    });
    return item;
  }

  function threadCell(content, className) {
    return el("div", { role: "gridcell", className: `thread-cell ${className}` }, [content]);
  }

  /* "Show older" follows the grid, a Tab stop of its own; the keyboard goes on from it to
   * the first of the conversations it brings. */
  function renderOlder() {
    const older = $("thread-older");
    if (!state.moreThreads) {
      older.replaceChildren();
      return;
    }
    const more = el("button", { type: "button", className: "thread-more", text: "Show older" });
    more.addEventListener("click", async () => {
      const shown = state.threads.length;
      try {
        await loadThreads(state.moreThreads);
      } catch (error) {
        showThreadError(error);
        return;
      }
      const first = ui.threads.querySelectorAll(".thread-link")[shown];
      if (first) first.focus();
    });
    older.replaceChildren(more);
  }

  /* Where the keyboard is in the list: which conversation (and where its row was), and
   * which of its controls (-1: none of them, e.g. its rename field). */
  function threadFocus() {
    const active = document.activeElement;
    const item = active && ui.threads.contains(active) && active.closest(".thread");
    if (!item) return null;
    const controls = [...item.querySelectorAll(".thread-link, .thread-action")];
    return {
      element: active, id: item.dataset.id, control: controls.indexOf(active),
      index: [...ui.threads.querySelectorAll(".thread")].indexOf(item),
    };
  }

  /* The focus was on a row the list no longer holds: the same control of the same
   * conversation, else its link, else (it was deleted) the conversation now in its place,
   * else the one before it, else New chat. */
  function restoreThreadFocus(focus) {
    if (!focus || focus.element.isConnected) return;
    const item = ui.threads.querySelector(`.thread[data-id="${focus.id}"]`);
    if (item) {
      const controls = [...item.querySelectorAll(".thread-link, .thread-action")];
      // Rename and Delete are hidden until their row holds the focus: its link's first.
      if (controls.length) controls[0].focus();
      if (focus.control > 0 && controls[focus.control]) controls[focus.control].focus();
      return;
    }
    const rows = ui.threads.querySelectorAll(".thread");
    const row = rows[Math.min(focus.index, rows.length - 1)];
    const next = row && row.querySelector(".thread-link");
    (next || ui.newChat).focus();
  }

  async function loadThreads(next) {
    // `next` (the API's link to the following page) appends; without it the list restarts.
    const workspace = state.workspace;
    const page = await api(next || inWorkspace("/api/threads?origin=chat"));
    // Another workspace was picked while this list loaded (just after the page opened):
    // its own list is on the way, and this one must not land over it.
    if (state.workspace !== workspace) return;
    const results = (page && page.results) || [];
    state.threads = next ? [...state.threads, ...results] : results;
    const more = page && page.next ? new URL(page.next, location.href) : null;
    state.moreThreads = more ? more.pathname + more.search : null; // whatever host DRF saw
    renderThreads();
    showTitle(); // a new conversation is titled by its first question
  }

  /* The tab (and the history list) names the conversation shown. */
  function showTitle(title) {
    const thread = state.threads.find((t) => t.id === state.threadId);
    const name = title !== undefined ? title : thread && (thread.title || "New chat");
    document.title = state.threadId !== null && name ? `${name} — Verity` : "Verity";
  }

  function showThreadError(error) {
    ui.threads.before(el("p", { className: "thread-error", role: "alert", text: error.message }));
  }

  function startRename(item, thread) {
    const input = el("input", {
      type: "text", className: "thread-rename", maxlength: "200",
      "aria-label": "Conversation name",
    });
    input.value = thread.title;
    let done = false;
    // The row is kept as it is while renamed (renderThreads), until this is done.
    const render = () => {
      item.classList.remove("renaming");
      renderThreads();
    };
    const finish = async (save, leaving) => {
      if (done) return;
      const title = input.value.trim();
      // A cleared name was saved as none, and listed as "New chat": Enter says a name is
      // needed; leaving the field keeps the old name, shown again in the list.
      if (save && !title) {
        if (!leaving) return needName(item, input);
        save = false;
      }
      done = true;
      if (save && title !== thread.title) {
        try {
          const saved = await api(`/api/threads/${thread.id}`, { method: "PATCH", body: { title } });
          // The list may have been loaded again meanwhile: its own entry is named.
          for (const listed of state.threads) if (listed.id === thread.id) listed.title = saved.title;
          thread.title = saved.title;
          if (thread.id === state.threadId) showTitle();
        } catch (error) {
          render();
          showThreadError(error);
          return;
        }
      }
      // The focus, if still in the field, goes to the conversation (renderThreads).
      render();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); finish(true); }
      if (event.key === "Escape") { event.preventDefault(); finish(false); }
    });
    input.addEventListener("blur", () => finish(true, true));
    item.classList.add("renaming");
    item.replaceChildren(threadCell(input, "thread-main"));
    input.focus();
    input.select();
  }

  function needName(item, input) {
    let note = item.querySelector(".rename-note");
    if (!note) {
      note = el("span", {
        id: "rename-note", className: "rename-note", role: "alert",
        text: "A name is needed (Escape keeps the old one).",
      });
      input.after(note);
    }
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", note.id);
    input.addEventListener("input", () => {
      if (!input.value.trim()) return;
      input.removeAttribute("aria-invalid");
      note.remove();
    }, { once: true });
  }

  function confirmDelete(item, thread) {
    const asked = `Delete “${thread.title || "New chat"}” and its messages?`;
    const question = el("span", {
      id: `thread-confirm-${thread.id}`, className: "thread-confirm", text: asked, dir: "auto",
    });
    const yes = el("button", { type: "button", className: "thread-delete", text: "Delete" });
    const no = el("button", { type: "button", className: "thread-more", text: "Cancel" });
    const cancel = () => {
      item.classList.remove("confirming");
      renderThreads();
      const row = ui.threads.querySelector(`.thread[data-id="${thread.id}"]`);
      if (!row) return;
      // Its Delete is shown while the row holds the focus: the row's first, then Delete.
      row.querySelector(".thread-link").focus();
      [...row.querySelectorAll(".thread-action")].pop().focus();
    };
    yes.addEventListener("click", () => deleteThread(item, thread));
    no.addEventListener("click", cancel);
    item.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation(); // closes this question, not the phone's drawer
        cancel();
      }
    });
    item.classList.add("confirming");
    // A group named by its question: moving to Cancel says what is being cancelled.
    item.replaceChildren(threadCell(el("div", {
      className: "thread-confirm-group", role: "group", "aria-labelledby": question.id,
    }, [question, yes, no]), "thread-main"));
    no.focus();
  }

  async function deleteThread(item, thread) {
    // Its messages are no longer asked for: asked after the DELETE, they would be a 404
    // the browser reports as a failed load.
    state.deleting.add(thread.id);
    for (const controller of state.polls.get(thread.id) || []) controller.abort();
    try {
      await api(`/api/threads/${thread.id}`, { method: "DELETE" });
    } catch (error) {
      state.deleting.delete(thread.id);
      item.classList.remove("confirming");
      renderThreads();
      showThreadError(error);
      return;
    }
    // The keyboard goes on from where it was (renderThreads): to the conversation that
    // took the deleted one's place; deleting the open one opens a new chat, at its question box.
    state.threads = state.threads.filter((t) => t.id !== thread.id);
    if (state.threadId === thread.id) blankChat();
    else renderThreads();
  }

  /* Arrow keys within the list: Up and Down (Home, End) between conversations, Right and
   * Left along a row's conversation, Rename and Delete. The conversation last reached
   * is the list's Tab stop. */
  function threadKeys(event) {
    const target = event.target;
    // (A row F2 or Delete just replaced is no longer in the list.)
    const item = target.closest && target.closest(".thread");
    if (!item || !target.matches(".thread-link, .thread-action")) return;
    const row = [...item.querySelectorAll(".thread-link, .thread-action")];
    const links = [...ui.threads.querySelectorAll(".thread-link")];
    const at = links.indexOf(row[0]);
    const moves = {
      ArrowDown: links[at + 1], ArrowUp: links[at - 1], Home: links[0],
      End: links[links.length - 1],
      ArrowRight: row[row.indexOf(target) + 1], ArrowLeft: row[row.indexOf(target) - 1],
    };
    if (!(event.key in moves)) return;
    event.preventDefault();
    if (moves[event.key]) moves[event.key].focus();
  }

  function rememberThreadFocus(event) {
    const item = event.target.closest && event.target.closest(".thread");
    const link = item && item.querySelector(".thread-link");
    if (!link) return; // renaming, or asking whether to delete
    state.threadStop = Number(item.dataset.id);
    for (const other of ui.threads.querySelectorAll(".thread-link")) {
      other.tabIndex = other === link ? 0 : -1;
    }
  }

  // --- Workspaces ------------------------------------------------------------------

  function inWorkspace(path) {
    if (!state.workspace) return path;
    return `${path}${path.includes("?") ? "&" : "?"}workspace=${encodeURIComponent(state.workspace)}`;
  }

  async function loadWorkspaces() {
    // A member of several workspaces picks one; the choice is remembered in this browser.
    const workspaces = [];
    // Pages of 200 (the most a page holds), followed to the last.
    for (let path = "/api/workspaces?page_size=200"; path;) {
      const page = await api(path);
      workspaces.push(...((page && page.results) || []));
      path = page && page.next ? new URL(page.next, location.href).toString() : null;
    }
    if (workspaces.length < 2) return;
    const saved = localStorage.getItem("verity.workspace");
    state.workspace = workspaces.some((w) => w.slug === saved) ? saved : workspaces[0].slug;
    ui.workspace.replaceChildren(...workspaces.map((w) => el("option", { value: w.slug, text: w.name })));
    ui.workspace.value = state.workspace;
    ui.workspace.hidden = false;
  }

  async function switchWorkspace(slug) {
    state.workspace = slug;
    localStorage.setItem("verity.workspace", slug);
    state.folders = null;
    state.documentMatches.clear();
    state.pendingMentions = [];
    renderPendingMentions();
    state.threads = [];
    blankChat("replace", { keepFocus: true }); // the keyboard stays on the picker
    try {
      await loadThreads();
    } catch (error) {
      showThreadError(error);
    }
  }

  function showThreadList(open) {
    document.body.classList.toggle("threads-open", open);
    ui.threadsToggle.setAttribute("aria-expanded", String(open));
  }

  // A conversation the user picked: on a phone, the drawer it was picked from closes. It
  // is a new entry in the browser's history, so Back returns to the one before.
  function selectThread(id, how) {
    showThreadList(false);
    return showThread(id, how || "push");
  }

  function showThread(id, how) {
    state.loading = loadThread(id, how || "replace");
    return state.loading;
  }

  /* The address names the conversation shown (#thread-N): "push" adds a history entry,
   * "replace" rewrites the current one, "keep" leaves it (Back/Forward already moved). */
  function setLocation(url, how) {
    if (how === "push" && new URL(url, location.href).href !== location.href) {
      history.pushState(null, "", url);
    } else if (how === "replace") {
      history.replaceState(null, "", url);
    }
  }

  /* Back, Forward, or #thread-N typed in the address bar: show what it names. */
  function followLocation() {
    const wanted = /^#thread-(\d+)$/.exec(location.hash);
    if (!wanted) {
      if (state.threadId !== null) blankChat("keep");
    } else if (Number(wanted[1]) !== state.threadId) {
      showThreadList(false);
      showThread(Number(wanted[1]), "keep");
    }
  }

  async function loadThread(id, how) {
    state.threadId = id;
    state.shown++;
    state.citations = new Map();
    closePanel();
    renderThreads();
    setLocation(`#thread-${id}`, how);
    showTitle();
    if (!state.threads.some((t) => t.id === id)) {
      // Not among the listed (an older one typed in the address bar): asked for its name.
      api(`/api/threads/${id}`).then((thread) => {
        if (state.threadId === id) showTitle(thread.title || "New chat");
      }).catch(() => {});
    }
    updateComposer();
    clearMessages("Loading…");
    try {
      const shown = state.shown;
      const pages = [await messagePage(id, "last")];
      // A newest page just begun (a message or two) would show little: the one before
      // it comes too.
      if (pages[0].results.length < MESSAGE_PAGE_MIN_SHOWN && pages[0].previous) {
        if (state.threadId !== id || state.shown !== shown) return;
        pages.unshift(await messagePage(id, pages[0].number - 1));
      }
      if (state.threadId !== id || state.shown !== shown) return;
      for (const page of pages) {
        for (const message of page.results) rememberCitations(message.citations);
      }
      clearMessages(pages[0].count ? "" : "Ask a question about your documents.");
      for (const page of pages) ui.messages.append(...renderPage(id, page));
      placeRegenerate();
      showEarlier(id, pages[0]);
      scrollToEnd();
    } catch (error) {
      clearMessages(`Could not load this conversation: ${error.message}`);
    }
    ui.input.focus();
  }

  /* A conversation's messages come in pages, oldest first (so a page keeps its messages
   * as the conversation grows); it opens on the newest page, and "Show earlier messages"
   * loads the page before, as often as asked: a long conversation is never one response. */
  const MESSAGE_PAGE_SIZE = 50;
  const MESSAGE_PAGE_MIN_SHOWN = 10;

  async function messagePage(threadId, number) {
    const path = (n) => `/api/threads/${threadId}/messages?page=${n}&page_size=${MESSAGE_PAGE_SIZE}`;
    const page = (await api(path(number))) || {};
    const count = page.count || 0;
    // "last" is named by its number from here on (what watchPending asks again).
    const resolved = number === "last" ? Math.max(1, Math.ceil(count / MESSAGE_PAGE_SIZE)) : number;
    return {
      number: resolved, path: path(resolved), count,
      results: page.results || [], previous: Boolean(page.previous),
    };
  }

  function renderPage(threadId, page) {
    const bubbles = [];
    const pending = [];
    let question = null;
    for (const message of page.results) {
      // An answer this tab is still streaming is shown live, not as "not finished".
      const live = liveBubble(threadId, message);
      const bubble = live || renderMessage(message);
      if (!live && message.role === "assistant" && message.status === "pending") {
        pending.push(bubble);
      }
      if (message.role === "user") question = message;
      else if (question) questions.set(bubble, { content: question.content, mentions: question.mentions || [] });
      bubbles.push(bubble);
    }
    if (pending.length) watchPending(threadId, page.path, pending);
    return bubbles;
  }

  function showEarlier(threadId, page) {
    if (!page.previous) return;
    const shown = state.shown;
    const button = el("button", { type: "button", className: "messages-earlier", text: "Show earlier messages" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const earlier = await messagePage(threadId, page.number - 1);
        if (state.threadId !== threadId || state.shown !== shown) return;
        for (const message of [...earlier.results].reverse()) {
          rememberCitations(message.citations, true); // the newest use of a number stays
        }
        // Kept where the reader was: the page goes above what they were reading.
        const fromEnd = ui.messages.scrollHeight - ui.messages.scrollTop;
        button.replaceWith(...renderPage(threadId, earlier));
        showEarlier(threadId, earlier);
        ui.messages.scrollTop = ui.messages.scrollHeight - fromEnd;
      } catch (error) {
        button.disabled = false;
        button.textContent = `Could not load earlier messages (${error.message}); try again`;
      }
    });
    ui.messages.prepend(button);
  }

  function blankChat(how, { keepFocus = false } = {}) {
    // `how`: the history entry (push, replace, keep); keepFocus leaves the focus where it is.
    showThreadList(false);
    // The conversation is created with its first question (send): a "New chat" left
    // unused leaves nothing behind in the list.
    state.threadId = null;
    state.shown++;
    state.citations = new Map();
    state.loading = Promise.resolve();
    closePanel();
    renderThreads();
    setLocation(location.pathname + location.search, typeof how === "string" ? how : "replace");
    showTitle();
    updateComposer();
    clearMessages("Ask a question about your documents.");
    if (!keepFocus) ui.input.focus();
  }

  async function newChat() {
    const body = state.workspace ? { workspace: state.workspace } : {};
    const thread = await api("/api/threads", { method: "POST", body });
    state.threads.unshift(thread);
    await selectThread(thread.id, "replace"); // the blank chat it was asked from becomes it
    return thread;
  }

  // --- Sending and the SSE stream --------------------------------------------------

  function parseBlock(block) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return null;
    try {
      return { event, data: JSON.parse(data.join("\n")) };
    } catch (_) {
      return null;
    }
  }

  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      buffer = buffer.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) !== -1) {
        const parsed = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (parsed) onEvent(parsed.event, parsed.data);
      }
      if (done) break;
    }
    if (buffer.trim()) {
      const parsed = parseBlock(buffer);
      if (parsed) onEvent(parsed.event, parsed.data);
    }
  }

  // The answers this tab is streaming, by conversation: another conversation can be
  // asked meanwhile, and one returned to shows its answer live.
  const streams = new Map(); // thread id -> stream (see startStream)
  const questions = new WeakMap(); // answer bubble -> {content, mentions} it answers
  let starting = false; // Send pressed, its conversation not known yet: a double click sends once

  const BUSY_HINT = "Verity is still answering here. Wait for the answer, or press Stop to ask now.";

  const stopButton = el("button", { type: "button", id: "stop", className: "stop-button", hidden: "", text: "Stop" });
  ui.send.after(stopButton);
  const composerHint = el("p", { id: "composer-hint", className: "composer-hint", "aria-live": "polite", hidden: "" });
  ui.composer.append(composerHint);

  /* The composer of the conversation shown: Stop while its own answer streams. */
  function updateComposer() {
    const live = state.threadId !== null && streams.has(state.threadId);
    ui.send.hidden = live;
    stopButton.hidden = !live;
    ui.send.disabled = starting;
    ui.send.textContent = starting ? "Sending…" : "Send";
    if (!live) showComposerHint("");
  }

  function showComposerHint(text) {
    composerHint.textContent = text;
    composerHint.hidden = !text;
  }

  function liveBubble(threadId, message) {
    const stream = streams.get(threadId);
    const mine = stream && message.role === "assistant" && stream.messageId === message.id;
    return mine ? stream.bubble : null;
  }

  /* `again`: {content, mentions} of a question asked before (Retry, Regenerate), or
   * edited (Edit: `replacing` {id, bubbles}, the last question and what answers it, hidden
   * while the server is asked, removed once it accepts the edit, shown again if not). */
  async function send(again) {
    const typed = ui.input.value;
    const content = again ? again.content : typed.trim();
    if (!content) return;
    if (state.threadId !== null && streams.has(state.threadId)) {
      showComposerHint(BUSY_HINT); // Enter used to do nothing, silently
      return;
    }
    if (starting) return;
    starting = true;
    updateComposer();
    closePicker();
    const shown = again ? again.mentions.map((m) => ({ ...m })) : state.pendingMentions.map((m) => ({ ...m }));
    let question = null;
    let stream = null;
    try {
      if (state.threadId === null) await newChat();
      await state.loading; // never append to a list that is about to be replaced
      const threadId = state.threadId;
      const mentions = shown.map((m) => ({ kind: m.kind, id: m.id }));

      const empty = ui.messages.querySelector(".empty-state");
      if (empty) empty.remove();
      question = renderMessage({ role: "user", content, mentions: shown });
      ui.messages.append(question);
      if (!again) {
        ui.input.value = "";
        state.pendingMentions = [];
        renderPendingMentions();
      }
      stream = startStream(threadId, { content, mentions: shown });
      stream.question = question;
      if (again && again.replacing) {
        stream.replacing = again.replacing;
        for (const old of again.replacing.bubbles) old.hidden = true;
        placeRegenerate();
      }
      starting = false;
      updateComposer();
      ui.input.focus();
      await streamAnswer(stream, mentions);
      if (state.threadId === threadId) loadThreads().catch(() => {});
    } catch (error) {
      if (stream) endStream(stream);
      if (error.name === "AbortError") {
        // Stopped before the server answered: whatever it stored is what a reload shows.
        if (stream && state.threadId === stream.threadId) showThread(stream.threadId, "keep");
        return;
      }
      // The turn was refused or never reached the server, so nothing was stored: the
      // question goes back into the composer, with its mentions, to be sent again.
      if (question) question.remove();
      if (stream) stream.bubble.remove();
      if (again && again.replacing) {
        for (const old of again.replacing.bubbles) if (old.isConnected) old.hidden = false;
        placeRegenerate();
      }
      if (!ui.input.value.trim()) {
        ui.input.value = typed.trim() ? typed : content;
        state.pendingMentions = shown;
        renderPendingMentions();
      }
      // A session that ended says so once, above the conversation.
      if (!(error instanceof SessionEnded)) ui.messages.append(errorBubble(error.message));
    } finally {
      starting = false;
      updateComposer();
      if (!document.activeElement || document.activeElement === document.body) ui.input.focus();
    }
  }

  function errorBubble(text) {
    const { bubble, body } = messageBubble("assistant");
    bubble.classList.add("is-error");
    body.append(el("p", { text }));
    announce(text); // shown in place of the question, which went back into the composer
    return bubble;
  }

  /* A streaming answer is busy (assistive technology waits for it rather than reading each
   * re-render) and is said to have started; its end is said in one line. */
  function answerStarted(bubble) {
    bubble.setAttribute("aria-busy", "true");
    announce("Answering…");
  }

  function answerEnded(bubble, failure) {
    bubble.removeAttribute("aria-busy");
    if (!bubble.isConnected) return; // another conversation is shown: nothing to say
    if (failure) {
      announce(`The answer failed: ${failure}`);
      return;
    }
    const sources = new Set([...bubble.querySelectorAll(".citation-pill")].map((p) => p.dataset.n));
    const summary = bubble.querySelector(".grounding-summary");
    const count = `${sources.size} source${sources.size === 1 ? "" : "s"}`;
    announce(`Answer complete, ${count}.${summary ? ` ${summary.textContent}.` : ""}`);
  }

  /* A pending answer's bubble, and what its stream needs: an AbortController for Stop,
   * the answer's id and page once the server names them (the `started` event). */
  function startStream(threadId, asked) {
    const { bubble, body } = messageBubble("assistant");
    bubble.classList.add("is-pending");
    const status = el("div", { className: "status-line", text: "Thinking…" });
    bubble.append(status);
    ui.messages.append(bubble);
    questions.set(bubble, asked);
    placeRegenerate(); // the answer before this one is no longer the last
    answerStarted(bubble);
    scrollToEnd();
    const stream = {
      threadId, bubble, body, status, view: null, asked,
      controller: new AbortController(), messageId: null, pagePath: null,
      stopping: false, ended: false,
    };
    streams.set(threadId, stream);
    return stream;
  }

  function endStream(stream) {
    stream.ended = true;
    if (streams.get(stream.threadId) === stream) streams.delete(stream.threadId);
    updateComposer();
    if (state.threadId === stream.threadId) placeRegenerate();
  }

  /* Stop: the server is asked to stop the turn (it stores what was written, marked
   * stopped), and the fetch is aborted so the page stops reading at once. Hanging up
   * alone would not stop it (a reload must not cost the answer), so a Stop pressed
   * before the server named the answer waits for its name (the `started` event). */
  function stopStream(stream) {
    if (!stream || stream.stopping || stream.ended) return;
    stream.stopping = true;
    ui.input.focus();
    if (stream.messageId === null) {
      stream.status.textContent = "Stopping…";
      return;
    }
    askToStop(stream);
  }

  function askToStop(stream) {
    api(`/api/threads/${stream.threadId}/messages/${stream.messageId}/stop`, { method: "POST" })
      .catch(() => {}); // gone already: the stored answer is shown all the same
    stream.controller.abort();
  }

  async function streamAnswer(stream, mentions) {
    const { threadId, bubble, body, status } = stream;
    // An edit of the last question replaces it and its answer on the server.
    const path = stream.replacing ? `/api/threads/${threadId}/messages/${stream.replacing.id}/edit`
      : `/api/threads/${threadId}/messages`;
    const response = await api(path, {
      method: "POST",
      body: { content: stream.asked.content, mentions },
      headers: { Accept: "text/event-stream" },
      raw: true,
      signal: stream.controller.signal,
    });
    if (!response.ok) {
      throw new Error(await errorText(response));
    }
    if (stream.replacing) for (const old of stream.replacing.bubbles) old.remove();
    const view = assistantView(bubble, body);
    stream.view = view;
    let finished = false;
    const finish = () => {
      finished = true;
      bubble.classList.remove("is-pending");
      status.remove();
    };
    const fail = (text, data) => {
      finish();
      renderNow(view);
      if (view.text.trim()) {
        // What was written stays readable; why it ended goes under it.
        bubble.classList.add("has-error");
        body.append(el("p", { className: "answer-error", text }));
      } else {
        views.delete(bubble);
        bubble.classList.add("is-error");
        body.replaceChildren(el("p", { text }));
      }
      answerEnded(bubble, text);
      if (data && data.message_id && !data.stopped) {
        bubble.dataset.id = String(data.message_id);
        rateFailure(bubble, null, threadId);
      }
      endStream(stream);
    };

    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      // A server that answered with JSON instead: show the stored message, and say so as
      // a streamed answer's end is said (its bubble is gone: "Answering…" was the last word).
      const message = await response.json();
      rememberCitations(message.citations);
      const stored = renderMessage(message);
      questions.set(stored, stream.asked);
      bubble.replaceWith(stored);
      const failure = message.status === "error"
        ? (message.resolved_content || "The answer could not be completed.") : null;
      answerEnded(stored, failure);
      endStream(stream);
      return;
    }

    // From here on the turn is stored: a dropped connection ends this bubble, not the turn.
    // Events keep coming while another conversation is shown: the bubble is updated
    // off-screen, and put back when its conversation is opened again.
    const reading = readEvents(response, (event, data) => {
      if (finished) return;
      if (event === "started") {
        stream.messageId = data && data.message_id;
        bubble.dataset.id = String(stream.messageId);
        if (stream.question && data && data.question_id) {
          stream.question.dataset.id = String(data.question_id); // what Edit sends
        }
        if (stream.question && data && typeof data.question === "string" && data.question) {
          // As stored, as a reload shows it: without the "@Title" its mention chips say.
          stream.question.querySelector(".bubble-body")
            .replaceChildren(...questionParagraphs(data.question));
        }
        const page = Math.max(1, Math.ceil(((data && data.seq) || 1) / MESSAGE_PAGE_SIZE));
        stream.pagePath = `/api/threads/${threadId}/messages?page=${page}&page_size=${MESSAGE_PAGE_SIZE}`;
        if (stream.stopping) askToStop(stream); // Stop was pressed before this
      } else if (event === "progress") {
        status.textContent = (data && data.label) || "Working…";
      } else if (event === "token") {
        view.text += (data && data.text) || "";
        scheduleRender(view);
      } else if (event === "citations") {
        const list = Array.isArray(data) ? data : [];
        rememberCitations(list);
        setViewCitations(view, list);
        scheduleRender(view);
      } else if (event === "grounding") {
        view.grounding = data || null;
        if (data && Array.isArray(data.citations)) setViewCitations(view, data.citations);
      } else if (event === "done") {
        if (data && data.message_id) bubble.dataset.id = String(data.message_id);
        finish();
        view.truncated = Boolean(data && data.truncated);
        view.stopped = Boolean(data && data.stopped);
        view.final = true;
        renderNow(view);
        if (!view.text.trim()) body.append(el("p", { className: "muted", text: "(no answer)" }));
        answerEnded(bubble);
        addAnswerActions(bubble, view, null, threadId);
        endStream(stream);
      } else if (event === "error") {
        fail((data && data.message) || "The answer could not be completed.", data);
      }
      if (state.threadId === threadId) followLatest();
    });
    await reading.catch(() => {});
    if (finished) return;
    if (stream.stopping) stoppedHere(stream);
    else connectionLost(stream);
  }

  /* Stopped from this page: what arrived stays, and the answer as the server stored it
   * (its pills' sources, its own "stopped" note) replaces it once it is settled. */
  function stoppedHere(stream) {
    const { bubble, status, view } = stream;
    bubble.classList.remove("is-pending");
    status.remove();
    renderNow(view);
    stream.body.append(el("p", { className: "muted answer-cut", text: "(Stopped.)" }));
    bubble.removeAttribute("aria-busy");
    announce("Answer stopped.");
    endStream(stream);
    if (stream.pagePath && state.threadId === stream.threadId) {
      watchPending(stream.threadId, stream.pagePath, [bubble]);
    }
  }

  /* The stream broke (the network, a proxy, a restarted server): the turn may still be
   * running or stored, so the answer is looked up again instead of called failed. */
  function connectionLost(stream) {
    const { bubble, status, view } = stream;
    renderNow(view);
    bubble.removeAttribute("aria-busy");
    announce("Connection lost; checking whether the answer was finished.");
    endStream(stream);
    if (!stream.pagePath || state.threadId !== stream.threadId) {
      bubble.classList.remove("is-pending");
      status.remove();
      bubble.classList.add(view.text.trim() ? "has-error" : "is-error");
      stream.body.append(el("p", { className: "answer-error", text: OFFLINE_TEXT }));
      return;
    }
    status.textContent = "Connection lost — checking…";
    watchPending(stream.threadId, stream.pagePath, [bubble]);
  }

  // --- Actions under an answer: Copy, Helpful / Not helpful, Retry / Regenerate ------

  function addAnswerActions(bubble, view, feedback, threadId = state.threadId) {
    const copy = el("button", { type: "button", className: "answer-action answer-copy", text: "Copy" });
    copy.addEventListener("click", () => copyAnswer(view, copy));
    const row = el("div", { className: "answer-actions" }, [copy]);
    bubble.append(row);
    addFeedback(bubble, row, feedback || null, threadId);
  }

  /* A failed answer is rated too (not copied): "it failed" is what curators most need
   * to hear. Not one stopped before it said anything. */
  function rateFailure(bubble, feedback, threadId = state.threadId) {
    const row = el("div", { className: "answer-actions" });
    bubble.append(row);
    addFeedback(bubble, row, feedback || null, threadId);
  }

  /* Thumbs up or down on a stored answer (PUT / DELETE .../feedback): two toggle buttons
   * (aria-pressed), at most one pressed; pressing the pressed one withdraws the rating.
   * A rating opens a short comment form (optional: Escape or "Skip" closes it). */
  const FEEDBACK_COMMENT_MAX = 1000;
  // Geometric shapes every text font has: 👍/👎 were boxes where no emoji font is installed.
  const RATINGS = {
    up: { icon: "▲", text: "Helpful", said: "Rated helpful." },
    down: { icon: "▼", text: "Not helpful", said: "Rated not helpful." },
  };

  function addFeedback(bubble, row, feedback, threadId) {
    const rated = { rating: feedback ? feedback.rating : null, comment: feedback ? feedback.comment || "" : "" };
    const buttons = {};
    const group = el("span", { className: "answer-feedback", role: "group", "aria-label": "Rate this answer" });
    for (const [rating, words] of Object.entries(RATINGS)) {
      const button = el("button", {
        type: "button", className: `answer-action feedback-${rating}`, "aria-pressed": "false",
      }, [el("span", { "aria-hidden": "true", text: words.icon }), ` ${words.text}`]);
      button.addEventListener("click", () => rate(rating));
      buttons[rating] = button;
      group.append(button);
    }
    const commentButton = el("button", { type: "button", className: "answer-action feedback-comment-open" });
    commentButton.addEventListener("click", () => openComment());
    group.append(commentButton);
    const error = el("span", { className: "feedback-error", role: "alert" });
    group.append(error);
    row.append(group);
    let form = null;

    const url = () => `/api/threads/${threadId}/messages/${bubble.dataset.id}/feedback`;
    const show = () => {
      for (const [rating, button] of Object.entries(buttons)) {
        button.setAttribute("aria-pressed", String(rated.rating === rating));
      }
      commentButton.hidden = !rated.rating;
      commentButton.textContent = rated.comment ? "Edit comment" : "Add a comment";
    };
    // Not disabled while saving: a disabled button would drop the keyboard focus.
    let saving = false;
    const busy = (on) => {
      saving = on;
      if (on) group.setAttribute("aria-busy", "true");
      else group.removeAttribute("aria-busy");
    };
    const save = async (rating, comment) => {
      if (saving) return false;
      error.textContent = "";
      busy(true);
      try {
        if (rating === null) {
          await api(url(), { method: "DELETE" });
        } else {
          const given = await api(url(), { method: "PUT", body: { rating, comment } });
          comment = given.comment;
        }
        rated.rating = rating;
        rated.comment = rating === null ? "" : comment;
        return true;
      } catch (failure) {
        if (!(failure instanceof SessionEnded)) error.textContent = `Not saved: ${failure.message}`;
        return false;
      } finally {
        busy(false);
        show();
      }
    };
    const rate = async (rating) => {
      const withdraw = rated.rating === rating;
      closeComment(false);
      if (!(await save(withdraw ? null : rating, rated.comment))) return;
      announce(withdraw ? "Rating removed." : RATINGS[rating].said);
      if (!withdraw) openComment();
    };

    function openComment() {
      if (form) {
        form.querySelector("textarea").focus();
        return;
      }
      const fieldId = `feedback-comment-${++messageCounter}`;
      const area = el("textarea", {
        id: fieldId, rows: "2", maxlength: String(FEEDBACK_COMMENT_MAX),
        placeholder: rated.rating === "down" ? "What was wrong or missing?" : "What helped?",
      });
      area.value = rated.comment;
      const send = el("button", { type: "submit", className: "answer-action", text: "Save comment" });
      const skip = el("button", { type: "button", className: "answer-action", text: "Skip" });
      form = el("form", { className: "feedback-comment" }, [
        el("label", { for: fieldId, text: "Comment (optional)" }), area,
        el("div", { className: "feedback-comment-actions" }, [send, skip]),
      ]);
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        send.disabled = true;
        const saved = await save(rated.rating, area.value.trim());
        send.disabled = false;
        if (!saved) return;
        announce("Comment saved.");
        closeComment(true);
      });
      skip.addEventListener("click", () => closeComment(true));
      form.addEventListener("keydown", (event) => {
        if (event.key === "Escape") {
          event.preventDefault();
          event.stopPropagation();
          closeComment(true);
        }
      });
      row.after(form);
      area.focus();
    }

    function closeComment(refocus) {
      if (!form) return;
      form.remove();
      form = null;
      if (refocus) (rated.rating ? buttons[rated.rating] : commentButton).focus();
    }

    show();
  }

  /* The answer as text to paste elsewhere: its Markdown with [n] markers, then the titles
   * of the sources it cites, in the order it first cites them. */
  function answerAsText(view) {
    const cited = [];
    const text = view.text.replace(CITATION_TOKEN, (_, n) => {
      if (!cited.includes(Number(n))) cited.push(Number(n));
      return `[${n}]`;
    }).trim();
    if (!cited.length) return text;
    const sources = cited.map((n) => {
      const citation = citationFor(view, n);
      const doc = citation && citation.document;
      // Where in it ("page 3", "Travel policy"): two passages of one document differ.
      const where = citation && citation.label && citation.label !== (doc && doc.title)
        ? `, ${citation.label}` : "";
      return `[${n}] ${sourceName(doc) || `Source ${n}`}${where}`;
    });
    return `${text}\n\nSources:\n${sources.join("\n")}`;
  }

  async function copyAnswer(view, button) {
    const text = answerAsText(view);
    let copied = true;
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      copied = copyBySelection(text); // no Clipboard API: a page served over plain http
    }
    button.textContent = copied ? "Copied" : "Copy failed";
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  }

  function copyBySelection(text) {
    const area = el("textarea", { "aria-hidden": "true", className: "copy-buffer" });
    area.value = text;
    document.body.append(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (_) {
      copied = false;
    }
    area.remove();
    ui.input.focus({ preventScroll: true });
    return copied;
  }

  /* Regenerate (Retry, when it failed) belongs to the conversation's last answer only:
   * it asks that answer's question again, as a new turn at the end. Edit goes with it,
   * on that answer's question (placeEdit). */
  function placeRegenerate() {
    for (const old of ui.messages.querySelectorAll(".answer-regenerate")) old.remove();
    for (const old of ui.messages.querySelectorAll(".question-actions")) old.remove();
    const answers = ui.messages.querySelectorAll(".message.role-assistant");
    const last = answers[answers.length - 1];
    if (!last || last.classList.contains("is-pending") || !questions.has(last)) return;
    const failed = last.classList.contains("is-error") || last.classList.contains("has-error");
    const button = el("button", {
      type: "button", className: "answer-action answer-regenerate",
      text: failed ? "Retry" : "Regenerate",
    });
    button.addEventListener("click", () => send(questions.get(last)));
    let row = last.querySelector(".answer-actions");
    if (!row) {
      row = el("div", { className: "answer-actions" });
      last.append(row);
    }
    row.append(button);
    placeEdit(last);
  }

  /* Edit belongs to the conversation's last question, once its answer (`answer`, the
   * last shown) is finished and no answer of this conversation is being written: the
   * question becomes a form, and sending it replaces the question and its answer. */
  function placeEdit(answer) {
    for (const old of ui.messages.querySelectorAll(".question-actions")) old.remove();
    if (state.threadId === null || streams.has(state.threadId)) return;
    const question = answer.previousElementSibling;
    // A question sent from this page has its id once the server names it (`started`).
    if (!question || !question.matches(".message.role-user") || !/^\d+$/.test(question.dataset.id || "")) return;
    const button = el("button", { type: "button", className: "answer-action question-edit", text: "Edit" });
    button.setAttribute("aria-label", "Edit your question");
    button.addEventListener("click", () => editQuestion(question, answer, questions.get(answer)));
    question.append(el("div", { className: "question-actions" }, [button]));
  }

  function editQuestion(question, answer, asked) {
    if (question.querySelector(".question-edit-form")) return;
    const body = question.querySelector(".bubble-body");
    const actions = question.querySelector(".question-actions");
    const fieldId = `question-edit-${++messageCounter}`;
    const area = el("textarea", { id: fieldId, rows: "3", maxlength: "20000", dir: "auto" });
    area.value = asked.content;
    const save = el("button", { type: "submit", className: "primary", text: "Send" });
    const cancel = el("button", { type: "button", className: "answer-action", text: "Cancel" });
    const form = el("form", { className: "question-edit-form" }, [
      el("label", { for: fieldId, className: "visually-hidden", text: "Edit your question" }), area,
      el("div", { className: "question-edit-actions" }, [save, cancel]),
    ]);
    const close = () => {
      form.remove();
      body.hidden = false;
      if (actions) actions.hidden = false;
    };
    body.hidden = true;
    if (actions) actions.hidden = true;
    body.after(form);
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
    cancel.addEventListener("click", () => {
      close();
      const edit = question.querySelector(".question-edit");
      if (edit) edit.focus();
    });
    form.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        cancel.click();
      } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault(); // like the question box: Enter sends, Shift+Enter a new line
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const content = area.value.trim();
      if (!content) {
        area.focus();
        return;
      }
      close();
      send({
        content, mentions: asked.mentions || [],
        replacing: { id: question.dataset.id, bubbles: [question, answer] },
      });
    });
  }

  // --- Citation panel --------------------------------------------------------------

  function closePanel() {
    ui.panel.hidden = true;
    document.body.classList.remove("panel-open");
    setPanelModal(false);
    closePageView();
    for (const pill of document.querySelectorAll(".citation-pill.selected")) {
      pill.classList.remove("selected");
    }
  }

  /* The user closed the panel (× or Escape): the keyboard goes back to the pill that
   * opened it (or the one its answer, re-rendered, put in its place; or to the composer,
   * if that answer is gone meanwhile). */
  function dismissPanel() {
    const opener = state.panelOpener;
    state.panelOpener = null;
    closePanel();
    if (opener && opener.isConnected) opener.focus();
    else ui.input.focus();
  }

  // Below 900 px the panel covers the conversation: it is a modal dialog then, and what
  // is behind it can be neither reached nor read until it closes.
  const narrowScreen = window.matchMedia("(max-width: 900px)");

  function setPanelModal(open) {
    const modal = open && narrowScreen.matches;
    if (modal) {
      ui.panel.setAttribute("role", "dialog");
      ui.panel.setAttribute("aria-modal", "true");
      ui.panel.setAttribute("aria-labelledby", "citation-title");
      ui.panel.removeAttribute("aria-label");
    } else {
      ui.panel.removeAttribute("role");
      ui.panel.removeAttribute("aria-modal");
      ui.panel.removeAttribute("aria-labelledby");
      ui.panel.setAttribute("aria-label", "Source");
    }
    for (const region of ui.background) {
      if (region) region.inert = modal;
    }
  }

  /* A modal panel keeps the keyboard: Tab past its last control comes back to its first,
   * Shift+Tab before its first goes to its last (what is behind it is inert, so the focus
   * would otherwise leave the page for the browser's own controls). */
  const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), " +
    "select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

  function panelIsModal() {
    return !ui.panel.hidden && ui.panel.getAttribute("aria-modal") === "true";
  }

  function panelControls() {
    return [...ui.panel.querySelectorAll(FOCUSABLE)]
      .filter((item) => item.getClientRects().length && !item.closest("[hidden], [inert]"));
  }

  function trapPanelFocus(event) {
    if (event.key !== "Tab" || event.altKey || event.ctrlKey || event.metaKey) return;
    if (!panelIsModal()) return;
    const controls = panelControls();
    const active = document.activeElement;
    if (!controls.length) {
      event.preventDefault();
      ui.panelTitle.focus();
      return;
    }
    const [first, last] = [controls[0], controls[controls.length - 1]];
    const inside = ui.panel.contains(active);
    const follows = (a, b) => Boolean(b.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (event.shiftKey && (!inside || active === first || follows(first, active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (!inside || active === last || follows(active, last))) {
      event.preventDefault();
      first.focus();
    }
  }

  async function openCitation(n, pill) {
    if (state.threadId === null) return;
    const request = ++state.panelRequest;
    for (const other of document.querySelectorAll(".citation-pill.selected")) {
      other.classList.remove("selected");
    }
    if (pill) pill.classList.add("selected");
    // What the grounding check found for this pill's own use of its passage (the API's
    // registry entry is per thread; support is per message, sentence and number).
    const support = (pill && pillSupports.get(pill)) || null;

    closePageView();
    ui.panel.hidden = false;
    document.body.classList.add("panel-open");
    setPanelModal(true);
    ui.panelTitle.textContent = `Source ${n}`;
    // Into the panel, at its title (read out); closing it comes back to this pill.
    state.panelOpener = pill || null;
    ui.panelTitle.focus();
    ui.panelMeta.replaceChildren();
    ui.panelStatus.hidden = true;
    ui.panelSupport.hidden = true;
    ui.panelBody.replaceChildren(el("p", { className: "muted", text: "Loading…" }));
    let citation;
    try {
      citation = await api(`/api/threads/${state.threadId}/citations/${n}`);
    } catch (error) {
      if (request !== state.panelRequest) return;
      ui.panelBody.replaceChildren(el("p", { className: "muted", text: error.message }));
      return;
    }
    if (request !== state.panelRequest) return;
    renderCitation(citation, support, state.threadId);
  }

  function renderCitation(citation, support, threadId) {
    const doc = citation.document || {};
    ui.panelTitle.textContent = doc.title || `Source ${citation.n}`;

    const meta = [el("span", { className: "source-number", text: `[${citation.n}]` })];
    // Which folder it is in: two "report.pdf" of different folders look alike otherwise.
    const where = inFolder(doc.folder_path);
    if (where) meta.push(el("span", { className: "source-folder", text: where, dir: "auto" }));
    if (citation.label) meta.push(el("span", { className: "source-label", text: citation.label }));
    // A web page by its address (a link); a file by its path from where it was ingested,
    // never by a server's file:// URI (an answer stored before the API stopped sending one).
    const url = [citation.locator && citation.locator.url, doc.uri]
      .find((u) => typeof u === "string" && /^https?:\/\//i.test(u));
    const path = doc.path || (doc.uri && !/^file:/i.test(doc.uri) ? doc.uri : "");
    if (url) {
      meta.push(el("a", {
        className: "source-url", href: url, target: "_blank", rel: "noopener noreferrer",
        text: url,
      }));
    } else if (path) {
      meta.push(el("span", { className: "source-url source-path", text: path }));
    }
    // A repository's passage: its lines on the forge, at the commit indexed.
    if (citation.permalink && /^https?:\/\//i.test(citation.permalink)) {
      meta.push(el("a", {
        className: "source-permalink", href: citation.permalink, target: "_blank",
        rel: "noopener noreferrer", text: "View on the forge",
      }));
    }
    ui.panelMeta.replaceChildren(...meta);

    if (citation.status === "changed" || citation.status === "missing") {
      ui.panelStatus.textContent = citation.status === "missing"
        ? "This document has been deleted since it was cited. " +
          "Shown below is the text as it was cited."
        : "This document has been edited since it was cited: the passage may no longer " +
          "say this. Shown below is the text as it was cited.";
      ui.panelStatus.hidden = false;
    } else {
      ui.panelStatus.hidden = true;
    }

    const verdict = support && VERDICT_WORDS[support.verdict] ? support.verdict : null;
    if (verdict) {
      ui.panelSupport.textContent = verdict === "unsupported"
        ? `${supportText(support)}. Nothing in the passage is marked: it does not back the claim.`
        : supportText(support);
      ui.panelSupport.className = `panel-note panel-support support-${verdict}`;
      ui.panelSupport.hidden = false;
    } else {
      ui.panelSupport.hidden = true;
    }

    // An unsupported claim has no supporting sentence: its best guess (often a heading)
    // would mark text that does not say it, and the passage as a whole is no support
    // either. `spans` is null then: the passage is shown in the faint "cited" style only.
    // [] is a passage never checked (marked whole, as cited); otherwise the supporting
    // sentences. Spans stay in the server's code points: the PDF view compares them with
    // bbox_chars (code points too); the text view converts them where it slices.
    const spans = verdict === "unsupported" ? null
      : supportSpans(support, codePointLength(citation.text || ""));
    const pdf = citation.pdf;
    if (pdf && Number.isInteger(pdf.page) && pdf.page > 0) {
      renderPageView(citation, spans, threadId);
      if (!Array.isArray(pdf.bbox) || !pdf.bbox.length) {
        // A scanned page, or text pdfium reads differently: show the page unmarked.
        ui.panelStatus.textContent =
          "The passage could not be located on the page, so it is not highlighted. " +
          "The Text button shows it.";
        ui.panelStatus.hidden = false;
      }
    } else {
      renderTextView(citation, spans);
    }
  }

  /* The supporting sentences' [start, end) in the passage (code points), sorted, merged,
   * in range. */
  function supportSpans(support, length) {
    const raw = (support && Array.isArray(support.spans) ? support.spans : [])
      .filter((s) => Array.isArray(s) && s.length === 2)
      .map(([start, end]) => [clamp(start, length), clamp(end, length)])
      .filter(([start, end]) => end > start)
      .sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const span of raw) {
      const last = merged[merged.length - 1];
      if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
      else merged.push([...span]);
    }
    return merged;
  }

  /* `header`: a toolbar above the passage (the PDF's "Page" button). */
  function renderTextView(citation, spans, header) {
    if (citation.format === "markdown") {
      renderMarkdownPassage(citation, spans, header);
      return;
    }
    const context = citation.context || {};
    // Code's locator names its file's path (a text file's has lines, but is prose).
    const isCode = citation.locator && "path" in citation.locator;
    // unwrapLines keeps lengths, so support offsets still index the tidied text.
    const tidy = isCode ? (text) => text : unwrapLines;
    const text = tidy(citation.text || "");
    const toUnits = codeUnitIndexer(text);
    const passage = el("div", { className: isCode ? "passage is-code" : "passage" });
    if (context.before && context.before.trim()) {
      passage.append(document.createTextNode(`…${tidy(context.before)}`));
    }
    let first;
    if (spans === null) {
      // Cited, but not support: the pale chunk style, nothing marked.
      first = el("span", { className: "cited-chunk", text });
      passage.append(first);
    } else if (spans.length) {
      // The cited chunk stays visible; only the sentences that support the claim are marked.
      const chunk = el("span", { className: "cited-chunk" });
      let done = 0; // UTF-16 index: how much of the text is in the chunk so far
      for (const [from, to] of spans) {
        const [start, end] = [toUnits(from), toUnits(to)];
        if (start > done) chunk.append(document.createTextNode(text.slice(done, start)));
        const mark = el("mark", { className: "support-span", text: text.slice(start, end) });
        first = first || mark;
        chunk.append(mark);
        done = end;
      }
      if (done < text.length) chunk.append(document.createTextNode(text.slice(done)));
      passage.append(chunk);
    } else {
      first = el("mark", { text });
      passage.append(first);
    }
    if (context.after && context.after.trim()) {
      passage.append(document.createTextNode(`${tidy(context.after)}…`));
    }
    passage.setAttribute("dir", isCode ? "ltr" : "auto");
    ui.panelBody.replaceChildren(...(header ? [header] : []), passage);
    // Scroll the passage (not the page or the panel's header) to the highlight.
    ui.panelBody.scrollTop = Math.max(0, first.offsetTop - 48);
  }

  /* The text before (or after) a Markdown passage, rendered too, an ellipsis where it is
   * cut; plain, as cut, when it opens or closes more code fences than it closes or opens:
   * a closing fence read as an opening one would show the rest as code. */
  function markdownContext(text, before) {
    const fences = (text.match(/^ {0,3}(`{3,}|~{3,})/gm) || []).length;
    if (fences % 2) {
      return el("span", { className: "passage-context",
        text: before ? `…${unwrapLines(text)}` : `${unwrapLines(text)}…` });
    }
    const shown = passageMarkdown(text, "passage-context passage-markdown");
    const cut = el("span", { className: "muted", text: "…", "aria-hidden": "true" });
    if (before) shown.prepend(cut);
    else shown.append(cut);
    return shown;
  }

  function passageMarkdown(text, className) {
    const rendered = el("div", { className });
    rendered.append(DOMPurify.sanitize(passageMd.render(text), PURIFY));
    for (const link of rendered.querySelectorAll("a[href]")) {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer nofollow");
    }
    return rendered;
  }

  /* A Markdown passage rendered as the answers are (markdown-it without raw HTML, then
   * DOMPurify), its highlight kept exact: the support spans index the Markdown source,
   * which is aligned character by character with the rendered text (as the answers'
   * uncited claims are), and each piece of text a span covers is marked where it is.
   * The text around it is rendered by whole blocks (markdownContext). */
  function renderMarkdownPassage(citation, spans, header) {
    const context = citation.context || {};
    const text = citation.text || "";
    const rendered = passageMarkdown(text, "passage-markdown");
    const atoms = [];
    collectAtoms(rendered, atoms);
    const map = alignToAtoms(text, atoms);
    const toUnits = codeUnitIndexer(text);
    const at = (offset) => map[toUnits(offset)];
    // The cited chunk (all of it) in its pale style, each piece of text of a supporting
    // sentence marked; a passage never checked is marked whole, as cited.
    const end = atoms.length;
    const marked = spans === null ? [] : spans.length
      ? spans.map(([from, to]) => [at(from), at(to), "support-span"]) : [[0, end, ""]];
    if (spans === null || spans.length) rendered.classList.add("cited-chunk");
    // Last range first, last piece first: splitting a text node keeps the nodes and
    // offsets of everything before the split valid.
    let first = null;
    for (const [start, stop, className] of marked.reverse()) {
      for (const segment of textSegments(atoms, start, stop, true).reverse()) {
        first = el("mark", className ? { className } : {});
        const wrapper = first;
        wrapText(segment, () => wrapper);
      }
    }
    const passage = el("div", { className: "passage is-markdown" });
    if (context.before && context.before.trim()) passage.append(markdownContext(context.before, true));
    passage.append(rendered);
    if (context.after && context.after.trim()) passage.append(markdownContext(context.after, false));
    passage.setAttribute("dir", "auto");
    ui.panelBody.replaceChildren(...(header ? [header] : []), passage);
    // The highlight may sit in a table cell or a list (another offsetParent): measured on
    // the screen, not by offsetTop.
    const target = first || rendered;
    const top = target.getBoundingClientRect().top - ui.panelBody.getBoundingClientRect().top;
    ui.panelBody.scrollTop = Math.max(0, ui.panelBody.scrollTop + top - 48);
  }

  /* Prose hard-wrapped in its source reads better re-flowed: a single newline
   * becomes a space unless the next line starts a list item, heading, quote or table. */
  function unwrapLines(text) {
    return text.replace(/([^\n])\n(?![\n\s]|[-*+#>|]|\d+[.)]\s)/g, "$1 ");
  }

  // --- The PDF page view: the cited page rendered, its neighbours a scroll away ---------

  const ZOOMS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3];
  const A4 = 595 / 842;

  function pageImageUrl(threadId, n, page, zoom) {
    const scale = zoom > 1.5 ? 3 : 2; // sharp at every zoom, two cached sizes
    return `/api/threads/${threadId}/citations/${n}/pages/${page}?scale=${scale}`;
  }

  /* `focusToggle`: the user switched here from the text view, so the keyboard goes to
   * the "Text" button that switches back (the one they pressed is gone). */
  function renderPageView(citation, spans, threadId, focusToggle) {
    const pdf = citation.pdf;
    const count = Math.max(pdf.page, Number(pdf.page_count) || pdf.page);
    const view = {
      citation, threadId, zoom: 1, pages: new Map(), observer: null, aspect: A4,
    };
    state.pageView = view;

    const zoomLabel = el("span", { className: "zoom-label", text: "100%" });
    const zoomOut = el("button", {
      type: "button", className: "page-tool", "aria-label": "Zoom out", text: "−",
    });
    const zoomIn = el("button", {
      type: "button", className: "page-tool", "aria-label": "Zoom in", text: "+",
    });
    const asText = el("button", { type: "button", className: "page-tool text-toggle", text: "Text" });
    zoomOut.addEventListener("click", () => setZoom(view, -1));
    zoomIn.addEventListener("click", () => setZoom(view, +1));
    asText.addEventListener("click", () => {
      closePageView();
      showPdfText(citation, spans, threadId);
    });
    view.zoomLabel = zoomLabel;
    const toolbar = el("div", { className: "page-toolbar" }, [
      zoomOut, zoomLabel, zoomIn, el("span", { className: "page-count", text: `page ${pdf.page} of ${count}` }), asText,
    ]);

    const pages = el("div", { className: "pdf-pages" });
    view.container = pages;
    for (let number = 1; number <= count; number++) {
      const image = el("img", {
        className: "pdf-page-image", alt: `Page ${number}`, draggable: "false",
      });
      const box = el("div", { className: "pdf-page", dataset: { page: String(number) } }, [image]);
      box.style.aspectRatio = String(view.aspect);
      view.pages.set(number, { box, image, loaded: false });
      pages.append(box);
    }
    const cited = view.pages.get(pdf.page);
    cited.box.classList.add("is-cited");
    for (const [index, rect] of (pdf.bbox || []).entries()) {
      if (!Array.isArray(rect) || rect.length !== 4 || !rect.every(Number.isFinite)) continue;
      const [x0, y0, x1, y1] = rect.map((v) => Math.max(0, Math.min(1, v)));
      const chars = (pdf.bbox_chars || [])[index];
      // With grounding, the lines of the supporting sentences stand out; the rest
      // of the cited chunk is shown faintly.
      // An unsupported citation (spans null) has no line that supports it.
      const supports = spans !== null && (!spans.length || (Array.isArray(chars) &&
        spans.some(([start, end]) => start < chars[1] && chars[0] < end)));
      const highlight = el("div", {
        className: supports ? "pdf-highlight" : "pdf-highlight is-context",
      });
      highlight.style.left = `${x0 * 100}%`;
      highlight.style.top = `${y0 * 100}%`;
      highlight.style.width = `${(x1 - x0) * 100}%`;
      highlight.style.height = `${(y1 - y0) * 100}%`;
      cited.box.append(highlight);
    }

    cited.image.addEventListener("load", () => {
      if (state.pageView !== view) return;
      // Neighbours not yet loaded take the cited page's shape, so scrolling is stable.
      view.aspect = cited.image.naturalWidth / cited.image.naturalHeight || A4;
      for (const page of view.pages.values()) {
        if (!page.loaded) page.box.style.aspectRatio = String(view.aspect);
      }
      scrollToHighlight(view);
    }, { once: true });
    cited.image.addEventListener("error", () => {
      if (state.pageView !== view) return;
      closePageView();
      renderTextView(citation, spans);
      ui.panelStatus.textContent = "The page could not be shown; this is the cited text.";
      ui.panelStatus.hidden = false;
    }, { once: true });
    loadPage(view, pdf.page);

    ui.panelBody.replaceChildren(el("div", { className: "page-view" }, [toolbar, pages]));
    ui.panelBody.classList.add("has-pages");
    view.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (entry.isIntersecting) loadPage(view, Number(entry.target.dataset.page));
      }
    }, { root: ui.panelBody, rootMargin: "600px 0px" });
    for (const page of view.pages.values()) view.observer.observe(page.box);
    scrollToHighlight(view);
    if (focusToggle) asText.focus();
  }

  /* A PDF passage as text, with a "Page" button back to the page view; the keyboard
   * goes to it (the "Text" button it replaces is gone). */
  function showPdfText(citation, spans, threadId) {
    const toPage = el("button", { type: "button", className: "page-tool page-toggle", text: "Page" });
    toPage.addEventListener("click", () => renderPageView(citation, spans, threadId, true));
    renderTextView(citation, spans, el("div", { className: "page-toolbar" }, [toPage]));
    toPage.focus();
  }

  function loadPage(view, number) {
    const page = view.pages.get(number);
    if (!page || page.loaded) return;
    page.loaded = true;
    page.image.addEventListener("load", () => {
      page.box.style.aspectRatio = String(page.image.naturalWidth / page.image.naturalHeight);
    }, { once: true });
    page.image.src = pageImageUrl(view.threadId, view.citation.n, number, view.zoom);
  }

  function scrollToHighlight(view) {
    const highlight = view.container.querySelector(".pdf-highlight:not(.is-context)") ||
      view.container.querySelector(".pdf-highlight");
    if (!highlight) {
      ui.panelBody.scrollTop = view.container.querySelector(".pdf-page.is-cited").offsetTop - 48;
      return;
    }
    const box = highlight.parentElement;
    ui.panelBody.scrollTop = Math.max(0, box.offsetTop + highlight.offsetTop - 80);
    ui.panelBody.scrollLeft = Math.max(0, box.offsetLeft + highlight.offsetLeft - 24);
  }

  function setZoom(view, step) {
    const index = ZOOMS.indexOf(view.zoom);
    const next = ZOOMS[Math.max(0, Math.min(ZOOMS.length - 1, index + step))];
    if (next === view.zoom) return;
    // Keep what is in the middle of the panel in the middle.
    const body = ui.panelBody;
    const middle = (body.scrollTop + body.clientHeight / 2) / (body.scrollHeight || 1);
    const wasSharp = view.zoom > 1.5;
    view.zoom = next;
    view.container.style.width = `${next * 100}%`;
    view.zoomLabel.textContent = `${Math.round(next * 100)}%`;
    body.scrollTop = middle * body.scrollHeight - body.clientHeight / 2;
    if (wasSharp !== next > 1.5) {
      for (const [number, page] of view.pages) {
        if (page.loaded) page.image.src = pageImageUrl(view.threadId, view.citation.n, number, next);
      }
    }
  }

  function closePageView() {
    const view = state.pageView;
    if (view && view.observer) view.observer.disconnect();
    state.pageView = null;
    ui.panelBody.classList.remove("has-pages");
  }

  // --- @ mentions ------------------------------------------------------------------

  // A workspace may hold more documents than the page could load, so the server
  // filters them by title as the user types; folders are few and loaded once.
  const MENTION_DEBOUNCE_MS = 150;
  const MENTION_PAGE_SIZE = 50; // documents asked per query: the best MENTION_SHOWN are shown
  const MENTION_SHOWN = 8;
  let pickerTimer = null;
  let pickerGeneration = 0; // bumped when the picker closes: updates begun before it are dropped

  /* "in Finance / 2024": where a document is, which tells two "report.pdf" apart ("" at
   * the top level). `folderPath` as the API gives it, "Finance/2024". */
  function inFolder(folderPath) {
    return folderPath ? `in ${folderPath.split("/").join(" / ")}` : "";
  }

  /* A cited document's name with its folder: two "report.pdf" of different folders differ. */
  function sourceName(doc) {
    if (!doc || !doc.title) return "";
    const where = inFolder(doc.folder_path);
    return where ? `${doc.title} (${where})` : doc.title;
  }

  function documentCandidate(d) {
    return {
      kind: "document", id: d.id, label: d.title || d.uri || `Document ${d.id}`,
      where: inFolder(d.folder_path),
    };
  }

  /* The documents whose title contains `query` (all, for ""): the server's first page,
   * asked once per query while the picker is open. A failure lists none. */
  function matchingDocuments(query) {
    if (!state.documentMatches.has(query)) {
      const params = new URLSearchParams({ page_size: String(MENTION_PAGE_SIZE) });
      if (query) params.set("q", query);
      state.documentMatches.set(query, api(inWorkspace(`/api/documents?${params}`))
        .then((body) => ((body && body.results) || []).map(documentCandidate))
        .catch(() => []));
    }
    return state.documentMatches.get(query);
  }

  function workspaceFolders() {
    if (state.folders === null) {
      state.folders = api(inWorkspace("/api/folders"))
        .then((body) => (Array.isArray(body) ? body : (body && body.results) || []))
        .then((folders) => folders.map((f) => ({ kind: "folder", id: f.id, label: f.path || f.name })))
        .catch(() => []);
    }
    return state.folders;
  }

  /* The "@query" being typed just before the caret, if any. */
  function mentionQuery() {
    const caret = ui.input.selectionStart;
    if (caret !== ui.input.selectionEnd) return null;
    const before = ui.input.value.slice(0, caret);
    const match = /(^|\s)@([^@\n]{0,60})$/.exec(before);
    if (!match) return null;
    return { start: caret - match[2].length - 1, query: match[2] };
  }

  function normalizedQuery(found) {
    return found.query.toLowerCase().trim();
  }

  /* Whether the listed options are those of the "@query" now typed (a debounced or
   * loading update may be on its way). */
  function pickerIsCurrent() {
    const found = mentionQuery();
    return Boolean(found) && found.start === state.picker.start &&
      normalizedQuery(found) === state.picker.query;
  }

  /* A space typed after a query none of the open list's options match: the user moved
   * on (closed at once, so that Enter sends rather than waits for the server). */
  function endsUnmatchedMention(found) {
    if (!state.picker.open || !/\s/.test(found.query)) return false;
    const query = normalizedQuery(found);
    return !state.picker.items.some((item) => item.label.toLowerCase().includes(query));
  }

  /* Typing: the picker closes at once when no mention is being typed, and asks the
   * server only once the typing pauses. */
  function schedulePicker() {
    clearTimeout(pickerTimer);
    const found = mentionQuery();
    if (!found || endsUnmatchedMention(found)) return closePicker();
    pickerTimer = setTimeout(() => {
      pickerTimer = null;
      updatePicker();
    }, MENTION_DEBOUNCE_MS);
  }

  async function updatePicker() {
    const found = mentionQuery();
    if (!found) return closePicker();
    const generation = pickerGeneration;
    const query = normalizedQuery(found);
    const [documents, folders] = await Promise.all([matchingDocuments(query), workspaceFolders()]);
    if (generation !== pickerGeneration) return; // closed meanwhile (Escape, blur, a choice)
    const again = mentionQuery(); // the text may have moved on while loading
    if (!again) return closePicker();
    // Typed on meanwhile: the update for the new text shows it (a late answer must not).
    if (normalizedQuery(again) !== query) return schedulePicker();
    const items = [...documents, ...folders.filter((f) => !query || f.label.toLowerCase().includes(query))]
      .sort((a, b) => {
        const pa = a.label.toLowerCase().startsWith(query) ? 0 : 1;
        const pb = b.label.toLowerCase().startsWith(query) ? 0 : 1;
        return pa - pb || a.label.localeCompare(b.label);
      })
      .slice(0, MENTION_SHOWN);
    // A space after a query that matches nothing means the user moved on.
    if (!items.length && /\s/.test(again.query)) return closePicker();
    state.picker = { open: true, start: again.start, query, items, active: 0 };
    renderPicker();
  }

  function renderPicker() {
    const { items, active } = state.picker;
    ui.picker.replaceChildren();
    if (!items.length) {
      ui.picker.append(el("li", { className: "picker-empty", text: "No matching documents or folders" }));
    }
    items.forEach((item, index) => {
      const option = el("li", {
        id: `mention-option-${index}`,
        className: index === active ? "picker-option active" : "picker-option",
        role: "option",
        "aria-selected": index === active ? "true" : "false",
        "aria-label": `${item.label}, ${item.kind === "folder" ? "folder" : "document"}` +
          (item.where ? `, ${item.where}` : ""),
        dataset: { kind: item.kind, id: String(item.id) },
      }, [
        el("span", { className: "chip-kind", text: item.kind === "folder" ? "folder" : "doc" }),
        el("span", { className: "picker-label", text: item.label, dir: "auto" }),
        ...(item.where ? [el("span", { className: "picker-folder", text: item.where, dir: "auto" })] : []),
      ]);
      option.addEventListener("mousedown", (event) => {
        event.preventDefault(); // keep the textarea's focus and caret
        choose(index);
      });
      ui.picker.append(option);
    });
    ui.picker.hidden = false;
    // The textarea keeps the focus; the active option is what screen readers read.
    ui.input.setAttribute("aria-expanded", "true");
    if (items.length) ui.input.setAttribute("aria-activedescendant", `mention-option-${active}`);
    else ui.input.removeAttribute("aria-activedescendant");
  }

  function closePicker() {
    clearTimeout(pickerTimer);
    pickerTimer = null;
    pickerGeneration++;
    state.picker.open = false;
    ui.picker.hidden = true;
    ui.input.setAttribute("aria-expanded", "false");
    ui.input.removeAttribute("aria-activedescendant");
    // The next mention asks again: documents may have been added or renamed meanwhile.
    state.documentMatches.clear();
  }

  function choose(index) {
    const item = state.picker.items[index];
    if (!item) return;
    const caret = ui.input.selectionStart;
    const value = ui.input.value;
    const inserted = `@${item.label} `;
    ui.input.value = value.slice(0, state.picker.start) + inserted + value.slice(caret);
    const position = state.picker.start + inserted.length;
    ui.input.setSelectionRange(position, position);
    if (!state.pendingMentions.some((m) => m.kind === item.kind && m.id === item.id)) {
      state.pendingMentions.push({ kind: item.kind, id: item.id, label: item.label, where: item.where });
    }
    renderPendingMentions();
    closePicker();
    ui.input.focus();
    announce(`${item.label} added`);
  }

  function renderPendingMentions() {
    ui.chips.replaceChildren();
    for (const mention of state.pendingMentions) {
      ui.chips.append(mentionChip(mention, () => {
        state.pendingMentions = state.pendingMentions.filter((m) => m !== mention);
        renderPendingMentions();
        ui.input.focus();
      }));
    }
    ui.chips.hidden = !state.pendingMentions.length;
  }

  // --- Wiring ----------------------------------------------------------------------

  ui.input.addEventListener("input", schedulePicker);
  ui.input.addEventListener("click", () => { updatePicker(); });
  ui.input.addEventListener("blur", () => setTimeout(closePicker, 150));
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && pickerTimer !== null && !state.picker.open) {
      closePicker(); // the list about to open for what was just typed: it stays closed
    }
    if (state.picker.open) {
      const count = state.picker.items.length;
      if (event.key === "ArrowDown" && count) {
        event.preventDefault();
        state.picker.active = (state.picker.active + 1) % count;
        return renderPicker();
      }
      if (event.key === "ArrowUp" && count) {
        event.preventDefault();
        state.picker.active = (state.picker.active - 1 + count) % count;
        return renderPicker();
      }
      if ((event.key === "Enter" || event.key === "Tab") && count) {
        event.preventDefault();
        // Options still of an earlier query would insert a document not asked for; the
        // key is swallowed (not sent as the question) until the list catches up.
        return pickerIsCurrent() ? choose(state.picker.active) : undefined;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        return closePicker();
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  stopButton.addEventListener("click", () => stopStream(streams.get(state.threadId)));
  window.addEventListener("popstate", followLocation);
  window.addEventListener("hashchange", followLocation);
  ui.newChat.addEventListener("click", () => blankChat("push"));
  ui.threads.addEventListener("keydown", threadKeys);
  ui.threads.addEventListener("focusin", rememberThreadFocus);
  // On a phone the list is a drawer: the header's button opens it, a choice closes it.
  ui.threadsToggle.addEventListener("click", () => showThreadList(!document.body.classList
    .contains("threads-open")));
  ui.messages.addEventListener("click", (event) => {
    const pill = event.target.closest(".citation-pill");
    if (pill) openCitation(Number(pill.dataset.n), pill);
  });
  ui.panelClose.addEventListener("click", dismissPanel);
  document.addEventListener("keydown", trapPanelFocus);
  // Focus moved out of a modal panel by a script (what is behind it is inert to the
  // keyboard and the pointer, not to focus() calls) comes back to it.
  document.addEventListener("focusin", (event) => {
    if (panelIsModal() && !ui.panel.contains(event.target)) ui.panelTitle.focus();
  });
  ui.messages.addEventListener("scroll", () => {
    state.following = atEnd();
    ui.jumpLatest.hidden = state.following;
  });
  ui.jumpLatest.addEventListener("click", () => {
    scrollToEnd();
    ui.input.focus({ preventScroll: true }); // the button goes: the keyboard goes to the end
  });
  // Ctrl + wheel (and a trackpad pinch, which browsers report as one) zooms the page view.
  ui.panelBody.addEventListener("wheel", (event) => {
    if (!state.pageView || !event.ctrlKey) return;
    event.preventDefault();
    setZoom(state.pageView, event.deltaY < 0 ? +1 : -1);
  }, { passive: false });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    const tipped = shownTooltipPill();
    if (tipped) {
      // A shown tooltip goes first, and alone (WCAG 1.4.13); the next Escape closes more.
      tipped.classList.add("tip-dismissed");
      event.preventDefault();
    } else if (document.body.classList.contains("threads-open")) {
      showThreadList(false);
      ui.threadsToggle.focus();
    } else if (!ui.panel.hidden && !state.picker.open) dismissPanel();
  });

  // Chromium changes a closed <select> (and fires "change") on every arrow key: a keyboard
  // user would switch workspace, and reload the list, at each step. A change by key waits
  // until it is committed: Enter, or leaving the picker; Escape puts the current one back.
  // A choice made in the open list (mouse or keys) switches at once.
  const WORKSPACE_KEYS = ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End",
    "PageUp", "PageDown"];
  ui.workspace.addEventListener("keydown", (event) => {
    // The key's "change" comes right after its keydown, before its keyup.
    if (WORKSPACE_KEYS.includes(event.key) || (event.key.length === 1 && event.key !== " ")) {
      state.workspaceKeyed = true;
    } else if (event.key === "Enter") {
      commitWorkspace();
    } else if (event.key === "Escape" && ui.workspace.value !== state.workspace) {
      ui.workspace.value = state.workspace;
      event.preventDefault();
    }
  });
  ui.workspace.addEventListener("keyup", () => { state.workspaceKeyed = false; });
  ui.workspace.addEventListener("change", () => {
    if (!state.workspaceKeyed) commitWorkspace(); // else kept pending
  });
  ui.workspace.addEventListener("blur", commitWorkspace);
  narrowScreen.addEventListener("change", () => setPanelModal(!ui.panel.hidden));

  function commitWorkspace() {
    state.workspaceKeyed = false;
    if (ui.workspace.value && ui.workspace.value !== state.workspace) {
      switchWorkspace(ui.workspace.value);
    }
  }

  async function start() {
    renderPendingMentions();
    restoreDraft();
    // A conversation the user opens (or a New chat) before the list has loaded wins.
    const shown = state.shown;
    try {
      await loadWorkspaces();
      await loadThreads();
    } catch (error) {
      clearMessages(`Could not load conversations: ${error.message}`);
      return;
    }
    if (state.shown !== shown) return;
    const wanted = /^#thread-(\d+)$/.exec(location.hash);
    const id = wanted ? Number(wanted[1]) : null;
    // Opened for the user, not by them: a drawer they opened meanwhile stays open.
    if (id !== null && state.threads.some((t) => t.id === id)) await showThread(id);
    else if (state.threads.length) await showThread(state.threads[0].id);
  }

  start();
})();
