/* Verity chat page. Plain JavaScript, no build step.
 *
 * Safety rule: everything that comes from the server (answers, titles, passages)
 * is text. It reaches the page only through textContent / createTextNode /
 * setAttribute — never innerHTML.
 */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const ui = {
    threads: $("thread-list"),
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
    panelBody: $("citation-body"),
    panelClose: $("citation-close"),
  };

  const state = {
    threadId: null,
    threads: [],
    citations: new Map(), // n -> citation JSON, for the current thread
    pendingMentions: [], // [{kind, id, label}]
    candidates: null, // [{kind, id, label}] once loaded
    picker: { open: false, start: 0, items: [], active: 0 },
    busy: false,
    loading: Promise.resolve(), // the thread being loaded into the message list
    panelRequest: 0,
  };

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

  async function api(path, options) {
    const opts = options || {};
    const headers = { Accept: "application/json", ...(opts.headers || {}) };
    const init = { method: opts.method || "GET", headers, credentials: "same-origin" };
    if (init.method !== "GET") headers["X-CSRFToken"] = csrfToken();
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    const response = await fetch(path, init);
    if (opts.raw) return response;
    if (!response.ok) throw new Error(await errorText(response));
    return response.status === 204 ? null : response.json();
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body && typeof body.detail === "string") return body.detail;
      return `${response.status} ${JSON.stringify(body)}`;
    } catch (_) {
      return `Request failed (HTTP ${response.status})`;
    }
  }

  function scrollToEnd() {
    ui.messages.scrollTop = ui.messages.scrollHeight;
  }

  // --- Rendering text safely -----------------------------------------------------

  const INLINE = /(\[citation:\d+\]|`[^`\n]+`)/;

  /* Paragraphs on blank lines; [citation:n] -> pill; `code` -> <code>. */
  function renderRichText(container, text) {
    container.replaceChildren();
    const paragraphs = String(text || "").split(/\n[ \t]*\n/);
    for (const paragraph of paragraphs) {
      if (!paragraph.trim()) continue;
      const p = el("p");
      for (const part of paragraph.split(INLINE)) {
        if (!part) continue;
        const marker = /^\[citation:(\d+)\]$/.exec(part);
        if (marker) p.append(citationPill(Number(marker[1])));
        else if (part.length > 2 && part.startsWith("`") && part.endsWith("`")) {
          p.append(el("code", { text: part.slice(1, -1) }));
        } else p.append(document.createTextNode(part));
      }
      container.append(p);
    }
  }

  function citationPill(n) {
    const known = state.citations.get(n);
    const title = known && known.document ? known.document.title : "";
    return el("button", {
      type: "button",
      className: "citation-pill",
      dataset: { n: String(n) },
      title: title || `Source ${n}`,
      "aria-label": title ? `Source ${n}: ${title}` : `Source ${n}`,
      text: String(n),
    });
  }

  function refreshPillTitles(root) {
    for (const pill of root.querySelectorAll(".citation-pill")) {
      const known = state.citations.get(Number(pill.dataset.n));
      if (known && known.document && known.document.title) {
        pill.title = known.document.title;
        pill.setAttribute("aria-label", `Source ${pill.dataset.n}: ${known.document.title}`);
      }
    }
  }

  function rememberCitations(list) {
    for (const citation of list || []) {
      if (citation && Number.isInteger(citation.n)) state.citations.set(citation.n, citation);
    }
  }

  function mentionChip(mention, onRemove) {
    const label = mention.label || mention.title || `${mention.kind} ${mention.id}`;
    const chip = el("span", { className: `mention-chip kind-${mention.kind}` }, [
      el("span", { className: "chip-kind", text: mention.kind === "folder" ? "folder" : "doc" }),
      el("span", { className: "chip-label", text: label }),
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

  function messageBubble(role) {
    const body = el("div", { className: "bubble-body" });
    const bubble = el("div", { className: `message role-${role}` }, [
      el("div", { className: "bubble-role", text: role === "user" ? "You" : "Verity" }),
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
      } else {
        renderRichText(body, text);
      }
    } else {
      for (const paragraph of text.split(/\n[ \t]*\n/)) {
        if (paragraph.trim()) body.append(el("p", { text: paragraph }));
      }
      if (message.mentions && message.mentions.length) {
        const chips = el("div", { className: "message-mentions" });
        for (const mention of message.mentions) chips.append(mentionChip(mention));
        bubble.append(chips);
      }
    }
    return bubble;
  }

  function clearMessages(note) {
    ui.messages.replaceChildren();
    if (note) ui.messages.append(el("p", { className: "empty-state", text: note }));
  }

  // --- Threads -------------------------------------------------------------------

  function renderThreads() {
    ui.threads.replaceChildren();
    for (const thread of state.threads) {
      const button = el("button", {
        type: "button",
        className: "thread-link",
        text: thread.title || "New chat",
        title: thread.title || "New chat",
      });
      button.addEventListener("click", () => selectThread(thread.id));
      const item = el("li", {
        className: thread.id === state.threadId ? "thread active" : "thread",
        dataset: { id: String(thread.id) },
      }, [button]);
      ui.threads.append(item);
    }
    if (!state.threads.length) {
      ui.threads.append(el("li", { className: "thread-empty", text: "No conversations yet." }));
    }
  }

  async function loadThreads() {
    const page = await api("/api/threads");
    state.threads = (page && page.results) || [];
    renderThreads();
  }

  function selectThread(id) {
    state.loading = loadThread(id);
    return state.loading;
  }

  async function loadThread(id) {
    state.threadId = id;
    state.citations = new Map();
    closePanel();
    renderThreads();
    history.replaceState(null, "", `#thread-${id}`);
    clearMessages("Loading…");
    try {
      const messages = await api(`/api/threads/${id}/messages`);
      if (state.threadId !== id) return;
      for (const message of messages) rememberCitations(message.citations);
      clearMessages(messages.length ? "" : "Ask a question about your documents.");
      for (const message of messages) ui.messages.append(renderMessage(message));
      scrollToEnd();
    } catch (error) {
      clearMessages(`Could not load this conversation: ${error.message}`);
    }
    ui.input.focus();
  }

  async function newChat() {
    const thread = await api("/api/threads", { method: "POST", body: {} });
    state.threads.unshift(thread);
    await selectThread(thread.id);
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

  function setBusy(busy) {
    state.busy = busy;
    ui.send.disabled = busy;
    ui.send.textContent = busy ? "Sending…" : "Send";
  }

  async function send() {
    const content = ui.input.value.trim();
    if (!content || state.busy) return;
    setBusy(true);
    closePicker();
    try {
      if (state.threadId === null) await newChat();
      await state.loading; // never append to a list that is about to be replaced
      const threadId = state.threadId;
      const mentions = state.pendingMentions.map((m) => ({ kind: m.kind, id: m.id }));
      const shown = state.pendingMentions.map((m) => ({ ...m }));

      const empty = ui.messages.querySelector(".empty-state");
      if (empty) empty.remove();
      ui.messages.append(renderMessage({ role: "user", content, mentions: shown }));
      ui.input.value = "";
      state.pendingMentions = [];
      renderPendingMentions();

      const { bubble, body } = messageBubble("assistant");
      bubble.classList.add("is-pending");
      const status = el("div", { className: "status-line", text: "Thinking…" });
      bubble.append(status);
      ui.messages.append(bubble);
      scrollToEnd();

      await streamAnswer(threadId, content, mentions, bubble, body, status);
      if (state.threadId === threadId) loadThreads().catch(() => {});
    } catch (error) {
      ui.messages.append(errorBubble(error.message));
    } finally {
      setBusy(false);
      ui.input.focus();
    }
  }

  function errorBubble(text) {
    const { bubble, body } = messageBubble("assistant");
    bubble.classList.add("is-error");
    body.append(el("p", { text }));
    return bubble;
  }

  async function streamAnswer(threadId, content, mentions, bubble, body, status) {
    const response = await api(`/api/threads/${threadId}/messages`, {
      method: "POST",
      body: { content, mentions },
      headers: { Accept: "text/event-stream" },
      raw: true,
    });
    if (!response.ok) {
      throw new Error(await errorText(response));
    }
    let answer = "";
    let finished = false;
    const finish = () => {
      finished = true;
      bubble.classList.remove("is-pending");
      status.remove();
    };
    const fail = (text) => {
      finish();
      bubble.classList.add("is-error");
      body.replaceChildren(el("p", { text }));
    };

    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      // A server that answered with JSON instead: show the stored message.
      const message = await response.json();
      rememberCitations(message.citations);
      bubble.replaceWith(renderMessage(message));
      return;
    }

    await readEvents(response, (event, data) => {
      if (state.threadId !== threadId) return;
      if (event === "progress") {
        status.textContent = (data && data.label) || "Working…";
      } else if (event === "token") {
        answer += (data && data.text) || "";
        renderRichText(body, answer);
      } else if (event === "citations") {
        rememberCitations(Array.isArray(data) ? data : []);
        refreshPillTitles(body);
      } else if (event === "done") {
        if (data && data.message_id) bubble.dataset.id = String(data.message_id);
        finish();
        renderRichText(body, answer);
        if (!answer.trim()) body.append(el("p", { className: "muted", text: "(no answer)" }));
      } else if (event === "error") {
        fail((data && data.message) || "The answer could not be completed.");
      }
      scrollToEnd();
    });
    if (!finished) fail("The connection closed before the answer was complete.");
  }

  // --- Citation panel --------------------------------------------------------------

  function closePanel() {
    ui.panel.hidden = true;
    document.body.classList.remove("panel-open");
    for (const pill of document.querySelectorAll(".citation-pill.selected")) {
      pill.classList.remove("selected");
    }
  }

  async function openCitation(n, pill) {
    if (state.threadId === null) return;
    const request = ++state.panelRequest;
    for (const other of document.querySelectorAll(".citation-pill.selected")) {
      other.classList.remove("selected");
    }
    if (pill) pill.classList.add("selected");
    ui.panel.hidden = false;
    document.body.classList.add("panel-open");
    ui.panelTitle.textContent = `Source ${n}`;
    ui.panelMeta.replaceChildren();
    ui.panelStatus.hidden = true;
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
    renderCitation(citation);
  }

  function renderCitation(citation) {
    const doc = citation.document || {};
    ui.panelTitle.textContent = doc.title || `Source ${citation.n}`;

    const meta = [el("span", { className: "source-number", text: `[${citation.n}]` })];
    if (citation.label) meta.push(el("span", { className: "source-label", text: citation.label }));
    const url = (citation.locator && citation.locator.url) || doc.uri || "";
    if (url) {
      if (/^https?:\/\//i.test(url)) {
        meta.push(el("a", {
          className: "source-url", href: url, target: "_blank", rel: "noopener noreferrer",
          text: url,
        }));
      } else {
        meta.push(el("span", { className: "source-url", text: url }));
      }
    }
    ui.panelMeta.replaceChildren(...meta);

    if (citation.status === "changed" || citation.status === "missing") {
      ui.panelStatus.textContent = citation.status === "missing"
        ? "This source has changed since it was cited: the passage is no longer in it. " +
          "Shown below is the text as it was cited."
        : "This source has changed since it was cited. Shown below is the text as it was cited.";
      ui.panelStatus.hidden = false;
    } else {
      ui.panelStatus.hidden = true;
    }

    const context = citation.context || {};
    const isCode = citation.locator && "line_start" in citation.locator;
    const tidy = isCode ? (text) => text : unwrapLines;
    const passage = el("div", { className: isCode ? "passage is-code" : "passage" });
    if (context.before && context.before.trim()) passage.append(document.createTextNode(`…${tidy(context.before)}`));
    const mark = el("mark", { text: tidy(citation.text || "") });
    passage.append(mark);
    if (context.after && context.after.trim()) passage.append(document.createTextNode(`${tidy(context.after)}…`));
    ui.panelBody.replaceChildren(passage);
    // Scroll the passage (not the page or the panel's header) to the highlight.
    ui.panelBody.scrollTop = Math.max(0, mark.offsetTop - 48);
  }

  /* Prose hard-wrapped in its source reads better re-flowed: a single newline
   * becomes a space unless the next line starts a list item, heading, quote or table. */
  function unwrapLines(text) {
    return text.replace(/([^\n])\n(?![\n\s]|[-*+#>|]|\d+[.)]\s)/g, "$1 ");
  }

  // --- @ mentions ------------------------------------------------------------------

  async function fetchAllDocuments() {
    const documents = [];
    let url = "/api/documents";
    for (let page = 0; url && page < 20; page++) {
      const body = await api(url);
      documents.push(...((body && body.results) || []));
      const next = body && body.next ? new URL(body.next, location.href) : null;
      url = next ? next.pathname + next.search : null; // same origin, whatever host DRF saw
    }
    return documents;
  }

  async function loadCandidates() {
    const [documents, folders] = await Promise.all([
      fetchAllDocuments(),
      api("/api/folders").then((body) => (Array.isArray(body) ? body : body.results || [])),
    ]);
    state.candidates = [
      ...documents.map((d) => ({ kind: "document", id: d.id, label: d.title || d.uri || `Document ${d.id}` })),
      ...folders.map((f) => ({ kind: "folder", id: f.id, label: f.path || f.name })),
    ];
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

  async function updatePicker() {
    const found = mentionQuery();
    if (!found) return closePicker();
    if (state.candidates === null) {
      try {
        await loadCandidates();
      } catch (_) {
        state.candidates = [];
      }
    }
    const again = mentionQuery(); // the text may have moved on while loading
    if (!again) return closePicker();
    const query = again.query.toLowerCase().trim();
    const items = state.candidates
      .filter((c) => !query || c.label.toLowerCase().includes(query))
      .sort((a, b) => {
        const pa = a.label.toLowerCase().startsWith(query) ? 0 : 1;
        const pb = b.label.toLowerCase().startsWith(query) ? 0 : 1;
        return pa - pb || a.label.localeCompare(b.label);
      })
      .slice(0, 8);
    // A space after a query that matches nothing means the user moved on.
    if (!items.length && /\s/.test(again.query)) return closePicker();
    state.picker = { open: true, start: again.start, items, active: 0 };
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
        className: index === active ? "picker-option active" : "picker-option",
        role: "option",
        "aria-selected": index === active ? "true" : "false",
        dataset: { kind: item.kind, id: String(item.id) },
      }, [
        el("span", { className: "chip-kind", text: item.kind === "folder" ? "folder" : "doc" }),
        el("span", { className: "picker-label", text: item.label }),
      ]);
      option.addEventListener("mousedown", (event) => {
        event.preventDefault(); // keep the textarea's focus and caret
        choose(index);
      });
      ui.picker.append(option);
    });
    ui.picker.hidden = false;
  }

  function closePicker() {
    state.picker.open = false;
    ui.picker.hidden = true;
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
      state.pendingMentions.push({ kind: item.kind, id: item.id, label: item.label });
    }
    renderPendingMentions();
    closePicker();
    ui.input.focus();
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

  ui.input.addEventListener("input", () => { updatePicker(); });
  ui.input.addEventListener("click", () => { updatePicker(); });
  ui.input.addEventListener("blur", () => setTimeout(closePicker, 150));
  ui.input.addEventListener("keydown", (event) => {
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
        return choose(state.picker.active);
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
  ui.newChat.addEventListener("click", () => {
    newChat().catch((error) => ui.messages.append(errorBubble(error.message)));
  });
  ui.messages.addEventListener("click", (event) => {
    const pill = event.target.closest(".citation-pill");
    if (pill) openCitation(Number(pill.dataset.n), pill);
  });
  ui.panelClose.addEventListener("click", closePanel);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !ui.panel.hidden && !state.picker.open) closePanel();
  });

  async function start() {
    renderPendingMentions();
    try {
      await loadThreads();
    } catch (error) {
      clearMessages(`Could not load conversations: ${error.message}`);
      return;
    }
    const wanted = /^#thread-(\d+)$/.exec(location.hash);
    const id = wanted ? Number(wanted[1]) : null;
    if (id !== null && state.threads.some((t) => t.id === id)) await selectThread(id);
    else if (state.threads.length) await selectThread(state.threads[0].id);
  }

  start();
})();
