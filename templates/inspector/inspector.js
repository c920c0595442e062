// cliphook inspector: the page. Plain JavaScript, no framework, nothing loaded from elsewhere.
// Data comes from this server's JSON API; changes arrive as server-sent events (nothing polls).
// Lists are windowed: rows have one fixed height and only the visible ones are in the DOM.

const ROW = 32;

// ---------- small helpers ----------

/** Makes an element: h('span', { class: 'x' }, 'text', child). Text is always set as text, never as HTML. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) el.append(child instanceof Node ? child : String(child));
  return el;
}

/** Replaces `el`'s children, flattening arrays and dropping null/false, as `h` does. */
function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
}

async function api(path, options) {
  const res = await fetch(path, options);
  const body = await res.json().catch((error) => {
    // A newer selection aborted this one while its body was read: that is no answer at all.
    if (error.name === 'AbortError') throw error;
    return null;
  });
  if (!res.ok || body === null) throw Object.assign(new Error(body?.detail ?? `HTTP ${res.status}`), { status: res.status, body });
  return body;
}

function post(path, body = {}) {
  return api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

const pad = (n, w = 2) => String(n).padStart(w, '0');
function clock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function dateTime(ms) {
  if (ms === null || ms === undefined) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(ms)}.${pad(d.getMilliseconds(), 3)}`;
}
function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
}
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
function bytes(n) {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
function pathOf(url) {
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return url;
  }
}

/**
 * JSON re-indented token by token, so numbers (ints above 2^53), escapes and key order stay exactly as
 * sent; `null` when the text is not JSON.
 */
function prettyJson(text) {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  let out = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '{' || c === '[') {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      if (text[j] === (c === '{' ? '}' : ']')) {
        out += c + text[j];
        i = j;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += `,${newline()}`;
    else if (c === ':') out += ': ';
    else if (!/\s/.test(c)) out += c;
  }
  return out;
}

function headerTable(headers, caption) {
  const rows = [];
  for (let i = 0; i < headers.length; i += 2) rows.push(h('tr', {}, h('td', {}, headers[i]), h('td', {}, headers[i + 1])));
  if (rows.length === 0) return h('p', { class: 'note' }, 'No headers.');
  return h('table', { class: 'headers' }, h('caption', { class: 'sr-only' }, caption), h('thead', { class: 'sr-only' }, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Value'))), h('tbody', {}, rows));
}

/** A body with Pretty / Raw buttons. `view` is the API's { size, truncated, text, base64 }. */
function bodyBlock(view, id, label) {
  const pretty = view.text === null ? null : prettyJson(view.text);
  const raw = view.text ?? view.base64;
  const pre = h('pre', { class: 'body', id, tabindex: '0', role: 'region', 'aria-label': label });
  const buttons = [];
  const show = (mode) => {
    pre.textContent = mode === 'pretty' && pretty !== null ? pretty : raw;
    pre.dataset.mode = mode;
    for (const button of buttons) button.setAttribute('aria-pressed', String(button.dataset.mode === mode));
  };
  if (pretty !== null) {
    for (const mode of ['pretty', 'raw']) buttons.push(h('button', { type: 'button', 'data-mode': mode, 'aria-controls': id, onclick: () => show(mode) }, mode === 'pretty' ? 'Pretty' : 'Raw'));
  }
  const notes = [bytes(view.size)];
  if (view.text === null) notes.push('not UTF-8: shown as base64');
  if (view.truncated) notes.push(`only the first ${bytes(view.base64 ? atob(view.base64).length : 0)} kept`);
  show(pretty !== null ? 'pretty' : 'raw');
  return h('div', {}, h('div', { class: 'body-head', role: 'group', 'aria-label': `${label} view` }, buttons, h('p', { class: 'note' }, notes.join(' · '))), pre);
}

// ---------- the windowed list ----------

/**
 * A listbox of fixed-height rows over an array of any length: only the rows in view (and the selected one)
 * are in the DOM. Keyboard: arrows, Page Up/Down, Home/End; Enter moves to the detail. New items at the top
 * do not move what is on screen unless the list is scrolled to the top.
 */
class WindowedList {
  constructor({ label, idPrefix, key, renderRow, onSelect, onOpen, emptyText }) {
    this.key = key;
    this.renderRow = renderRow;
    this.onSelect = onSelect;
    this.onOpen = onOpen;
    this.idPrefix = idPrefix;
    this.items = [];
    this.index = new Map();
    this.rows = new Map();
    this.selected = null;
    this.spacer = h('div', { class: 'spacer' });
    this.root = h('div', { class: 'list', role: 'listbox', tabindex: '0', 'aria-label': label, onscroll: () => this.render(), onkeydown: (e) => this.#key(e), onclick: (e) => this.#click(e) }, this.spacer);
    this.empty = h('p', { class: 'empty' }, emptyText);
    this.el = h('div', { class: 'list-wrap' }, this.root, this.empty);
    new ResizeObserver(() => this.render()).observe(this.root);
  }

  setItems(items) {
    const top = this.root.scrollTop;
    let anchor = null;
    if (top > 0 && this.items.length > 0) {
      const first = Math.min(this.items.length - 1, Math.floor(top / ROW));
      anchor = { key: this.key(this.items[first]), offset: top - first * ROW };
    }
    this.items = items;
    this.index = new Map();
    for (let i = 0; i < items.length; i++) this.index.set(this.key(items[i]), i);
    this.spacer.style.height = `${items.length * ROW}px`;
    this.empty.hidden = items.length > 0;
    this.root.setAttribute('aria-busy', 'false');
    if (anchor) {
      const at = this.index.get(anchor.key);
      if (at !== undefined) this.root.scrollTop = at * ROW + anchor.offset;
    }
    this.render();
  }

  /** Re-renders the rows in view; rows whose item did not change are left alone. */
  render() {
    const n = this.items.length;
    const height = this.root.clientHeight || 600;
    const start = Math.max(0, Math.floor(this.root.scrollTop / ROW) - 4);
    const end = Math.min(n, Math.ceil((this.root.scrollTop + height) / ROW) + 4);
    const wanted = new Set();
    for (let i = start; i < end; i++) wanted.add(i);
    const selectedAt = this.selected === null ? undefined : this.index.get(this.selected);
    if (selectedAt !== undefined) wanted.add(selectedAt);
    const keep = new Map();
    for (const i of wanted) {
      const item = this.items[i];
      const k = this.key(item);
      let row = this.rows.get(k);
      if (!row) {
        row = h('div', { class: 'row', role: 'option', id: `${this.idPrefix}${k}` });
        row.dataset.key = String(k);
      }
      if (row._item !== item) {
        row.replaceChildren(...this.renderRow(item));
        row._item = item;
      }
      if (row._at !== i) {
        row.style.transform = `translateY(${i * ROW}px)`;
        row._at = i;
      }
      row.setAttribute('aria-posinset', String(i + 1));
      row.setAttribute('aria-setsize', String(n));
      row.setAttribute('aria-selected', String(k === this.selected));
      if (!row.isConnected) this.spacer.append(row);
      keep.set(k, row);
    }
    for (const [k, row] of this.rows) if (!keep.has(k)) row.remove();
    this.rows = keep;
    if (selectedAt !== undefined) this.root.setAttribute('aria-activedescendant', `${this.idPrefix}${this.selected}`);
    else this.root.removeAttribute('aria-activedescendant');
  }

  select(k, { scroll = true, notify = true } = {}) {
    const at = this.index.get(k);
    if (at === undefined) return;
    this.selected = k;
    if (scroll) {
      const top = at * ROW;
      if (top < this.root.scrollTop) this.root.scrollTop = top;
      else if (top + ROW > this.root.scrollTop + this.root.clientHeight) this.root.scrollTop = top + ROW - this.root.clientHeight;
    }
    this.render();
    if (notify) this.onSelect(this.items[at]);
  }

  #click(event) {
    const row = event.target.closest('[role="option"]');
    if (!row) return;
    const item = row._item;
    if (item) this.select(this.key(item));
  }

  #key(event) {
    const n = this.items.length;
    if (n === 0) return;
    const at = this.selected === null ? -1 : (this.index.get(this.selected) ?? -1);
    const page = Math.max(1, Math.floor(this.root.clientHeight / ROW) - 1);
    let next;
    switch (event.key) {
      case 'ArrowDown': next = Math.min(n - 1, at + 1); break;
      case 'ArrowUp': next = Math.max(0, at - 1); break;
      case 'PageDown': next = Math.min(n - 1, at + page); break;
      case 'PageUp': next = Math.max(0, at - page); break;
      case 'Home': next = 0; break;
      case 'End': next = n - 1; break;
      case 'Enter':
        if (at >= 0) this.onOpen?.();
        event.preventDefault();
        return;
      default: return;
    }
    event.preventDefault();
    this.select(this.key(this.items[next]));
  }
}

// ---------- the live connection ----------

const live = document.getElementById('live');
const liveText = document.getElementById('live-text');
function setLive(state, text) {
  live.dataset.state = state;
  liveText.textContent = text;
}

/** Keeps one EventSource; every (re)connection starts with `hello`, after which the view reloads its lists. */
function connect(handlers) {
  const source = new EventSource('/api/stream');
  source.addEventListener('hello', (e) => {
    setLive('live', 'Live');
    handlers.hello(JSON.parse(e.data));
  });
  for (const type of ['exchange', 'delivery', 'clip', 'image']) source.addEventListener(type, (e) => handlers[type]?.(JSON.parse(e.data)));
  source.addEventListener('error', () => setLive('down', 'Disconnected; retrying…'));
  return source;
}

/** Applies messages that come while a list is loading after the load, in order. */
class Loader {
  constructor(load) {
    this.load = load;
    this.queue = null;
  }
  async reload() {
    this.queue = [];
    try {
      await this.load();
    } finally {
      const queued = this.queue;
      this.queue = null;
      for (const apply of queued) apply();
    }
  }
  run(apply) {
    if (this.queue) this.queue.push(apply);
    else apply();
  }
}

/** Coalesces many changes into one render per animation frame. */
function perFrame(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}

// ---------- the listen page ----------

function listenPage(main, info) {
  const listenInfo = info.listen;
  const all = new Map(); // id -> summary, ids only grow
  let ordered = []; // ids, ascending
  let oldest = null;
  const filters = { event: '', status: '' };
  const eventNames = new Set();
  let detailId = null;
  let detailController = null;

  const eventSelect = h('select', { id: 'f-event', onchange: () => ((filters.event = eventSelect.value), refresh()) }, h('option', { value: '' }, 'All events'));
  const statusSelect = h(
    'select',
    { id: 'f-status', onchange: () => ((filters.status = statusSelect.value), refresh()) },
    h('option', { value: '' }, 'Any status'),
    listenInfo.outcomes.map((outcome) => h('option', { value: outcome }, outcome === 'error' ? 'no reply (error)' : outcome)),
  );
  const count = h('span', { class: 'count', 'aria-live': 'off' }, '0 events');
  const list = new WindowedList({
    label: 'Webhooks received, newest first',
    idPrefix: 'x-',
    key: (item) => item.id,
    renderRow: listenRow,
    onSelect: (item) => showDetail(item.id),
    onOpen: () => detail.focus(),
    emptyText: listenInfo.channelUrl ? `No webhooks yet. Send one to ${listenInfo.channelUrl}` : 'No webhooks yet.',
  });
  const detail = h('section', { class: 'pane detail-pane', id: 'detail', 'aria-labelledby': 'detail-title', tabindex: '-1' }, h('h2', { id: 'detail-title' }, 'Detail'), h('p', { class: 'hint' }, 'Select a webhook to see its request, its reply and Replay.'));
  const where = [`forwarding to ${listenInfo.forwardTo}`];
  if (listenInfo.channelUrl) where.push(`from ${listenInfo.channelUrl}`);
  where.push(listenInfo.secret ? 'signatures checked with --secret' : 'no --secret: signatures not checked');
  main.replaceChildren(
    h(
      'div',
      { class: 'split' },
      h(
        'section',
        { class: 'pane list-pane listen-cols', 'aria-labelledby': 'list-title' },
        h('div', { class: 'pane-head' }, h('h2', { id: 'list-title' }, 'Webhooks received'), h('p', { class: 'sub', title: where.join(' · ') }, where.join(' · ')),
          h('div', { class: 'filters' }, h('label', { for: 'f-event' }, 'Event'), eventSelect, h('label', { for: 'f-status' }, 'Status'), statusSelect, count)),
        h('div', { class: 'cols', 'aria-hidden': 'true' }, ['Time', 'Event', 'Delivery', 'Video', 'Status', 'Latency', 'Sig'].map((name) => h('span', {}, name))),
        list.el,
      ),
      detail,
    ),
  );

  const render = perFrame(() => {
    const filtered = [];
    for (let i = ordered.length - 1; i >= 0; i--) {
      const item = all.get(ordered[i]);
      if (filters.event && item.eventName !== filters.event) continue;
      if (filters.status && item.outcome !== filters.status) continue;
      filtered.push(item);
    }
    list.setItems(filtered);
    count.textContent = filtered.length === all.size ? plural(all.size, 'event', 'events') : `${filtered.length} of ${plural(all.size, 'event', 'events')}`;
  });
  function refresh() {
    render();
  }

  function addName(name) {
    if (!name || eventNames.has(name)) return;
    eventNames.add(name);
    const options = [...eventNames].sort();
    fill(eventSelect, h('option', { value: '' }, 'All events'), options.map((n) => h('option', { value: n }, n)));
    eventSelect.value = filters.event;
  }

  function upsert(summary) {
    if (oldest !== null && summary.id < oldest) return;
    if (!all.has(summary.id)) {
      // Ids grow: a new one goes at the end, unless messages crossed (then it is placed in order).
      if (ordered.length === 0 || ordered[ordered.length - 1] < summary.id) ordered.push(summary.id);
      else {
        ordered.push(summary.id);
        ordered.sort((a, b) => a - b);
      }
    }
    all.set(summary.id, summary);
    addName(summary.eventName);
  }

  function forgetBefore(id) {
    oldest = id;
    if (id === null) return;
    let cut = 0;
    while (cut < ordered.length && ordered[cut] < id) all.delete(ordered[cut++]);
    if (cut > 0) ordered = ordered.slice(cut);
  }

  const loader = new Loader(async () => {
    const { items, oldest: first } = await api('/api/listen/exchanges');
    all.clear();
    ordered = [];
    for (const item of items) upsert(item);
    forgetBefore(first);
    render();
  });

  async function showDetail(id, { keepResult = false } = {}) {
    detailController?.abort();
    detailController = new AbortController();
    const { signal } = detailController;
    let item;
    try {
      item = await api(`/api/listen/exchanges/${id}`, { signal });
    } catch (error) {
      if (error.name === 'AbortError') return;
      detail.replaceChildren(h('h2', { id: 'detail-title' }, `#${id}`), h('p', { class: 'hint' }, error.message));
      return;
    }
    const previousResult = keepResult && detailId === id ? detail.querySelector('.result')?.textContent : '';
    detailId = id;
    renderDetail(item, previousResult);
  }

  function statusText(item) {
    if (item.outcome === 'pending') return 'waiting for your app…';
    if (item.refused) return `${item.status} · answered by listen (${item.refused}), not forwarded`;
    if (item.status === null) return `no reply: ${item.reply?.error?.code ?? item.errorCode}${item.reply?.error ? ` (${item.reply.error.detail})` : ''}`;
    return `${item.status}${item.stale ? ' · stale_delivery, not acknowledged' : ''}`;
  }

  function renderDetail(item, previousResult) {
    const result = h('p', { class: 'result', role: 'status' }, previousResult || '');
    const editorBody = h('textarea', { id: 'edit-body', spellcheck: 'false' }, item.request.body.text ?? '');
    const fresh = h('input', { type: 'checkbox', id: 'edit-fresh', checked: true });
    const editor = h(
      'div',
      { class: 'editor', id: 'editor', hidden: true },
      h('label', { for: 'edit-body' }, 'Body to send'),
      editorBody,
      h('label', { class: 'check', for: 'edit-fresh' }, fresh, 'Set delivered_at to now (a receiver refuses one older than its replay window)'),
      h('p', { class: 'note' }, listenInfo.secret ? 'Signed again with the --secret listen was started with (a fresh X-Service-Signature).' : 'listen has no --secret: the edited body is sent with the old X-Service-Signature, which will not match.'),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary send', id: 'send-edited', onclick: () => replay({ body: editorBody.value, freshDeliveredAt: fresh.checked }) }, 'Send edited'), h('button', { type: 'button', onclick: () => toggleEditor(false) }, 'Cancel')),
    );
    const editButton = h('button', { type: 'button', id: 'replay-edit', 'aria-expanded': 'false', 'aria-controls': 'editor', onclick: () => toggleEditor(editor.hidden) }, 'Replay with edits…');
    function toggleEditor(open) {
      editor.hidden = !open;
      editButton.setAttribute('aria-expanded', String(open));
      if (open) editorBody.focus();
    }
    async function replay(edits) {
      result.textContent = 'Sending…';
      for (const button of detail.querySelectorAll('button.send')) button.disabled = true;
      try {
        const made = await post(`/api/listen/exchanges/${item.id}/replay`, edits ? { edits } : {});
        upsert(made);
        render();
        result.replaceChildren(`Replayed as #${made.id}: ${made.status ?? made.errorCode} in ${made.durationMs} ms. `, h('button', { type: 'button', onclick: () => list.select(made.id) }, `Show #${made.id}`));
        if (edits) toggleEditor(false);
      } catch (error) {
        result.textContent = `Not replayed: ${error.message}`;
      } finally {
        for (const button of detail.querySelectorAll('button.send')) button.disabled = false;
      }
    }
    const flags = [];
    if (item.backlog) flags.push('caught up from the relay’s buffer');
    if (item.replay) flags.push('resent by the relay (--replay)');
    if (item.resigned) flags.push('re-signed with a fresh delivered_at');
    if (item.replayOf !== null) flags.push(`replay of #${item.replayOf}${item.edited ? ', with edits' : ''}`);
    const sig = item.signatureValid === null ? 'not checked (no --secret)' : item.signatureValid ? '✓ verifies' : '✗ does not verify';
    const reply = item.reply;
    fill(
      detail,
      h('div', { class: 'detail-head' }, h('h2', { id: 'detail-title' }, item.eventName ?? `${item.method} ${pathOf(item.url)}`), h('span', { class: `st-${item.outcome}` }, statusText(item))),
      h(
        'dl',
        { class: 'meta' },
        h('dt', {}, 'Received'), h('dd', {}, dateTime(item.at)),
        h('dt', {}, 'Delivery'), h('dd', { class: 'mono' }, item.deliveryId ?? '—'),
        h('dt', {}, 'Video'), h('dd', {}, item.videoId ?? '—'),
        h('dt', {}, 'Sent to'), h('dd', { class: 'mono' }, `${item.method} ${item.url}`),
        h('dt', {}, 'Signature'), h('dd', { class: item.signatureValid === false ? 'bad' : '' }, sig),
        h('dt', {}, 'Latency'), h('dd', {}, item.durationMs === null ? '—' : `${item.durationMs} ms`),
        h('dt', {}, 'Relay'), h('dd', {}, item.seq === null ? 'made here' : `event ${item.seq}, taken ${dateTime(item.receivedAt)}`),
        flags.length ? [h('dt', {}, 'Notes'), h('dd', {}, flags.join('; '))] : null,
      ),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary send', id: 'replay', onclick: () => replay(null) }, 'Replay'), editButton),
      result,
      editor,
      h('h3', {}, 'Request headers'),
      headerTable(item.request.headers, 'Request headers'),
      h('h3', {}, 'Request body'),
      bodyBlock(item.request.body, 'request-body', 'Request body'),
      h('h3', {}, item.refused ? 'Reply (from listen; your app never saw it)' : 'Reply from your app'),
      reply === null
        ? h('p', { class: 'note' }, 'Waiting for the reply…')
        : [
            h('p', { class: 'note', id: 'reply-status' }, reply.status === null ? `No status: ${reply.error?.code} (${reply.error?.detail})` : `Status ${reply.status} in ${reply.durationMs} ms`),
            h('h3', {}, 'Reply headers'),
            headerTable(reply.headers, 'Reply headers'),
            h('h3', {}, 'Reply body'),
            bodyBlock(reply.body, 'reply-body', 'Reply body'),
          ],
    );
  }

  connect({
    hello: () => void loader.reload(),
    exchange: ({ summary, oldest: first }) =>
      loader.run(() => {
        upsert(summary);
        forgetBefore(first);
        render();
        if (summary.id === detailId) void showDetail(summary.id, { keepResult: true });
      }),
  });

  // The list takes the keyboard first: arrows move through events, Enter moves to the detail.
  list.root.focus();
}

function listenRow(item) {
  const status = item.outcome === 'pending' ? '…' : item.status === null ? 'ERR' : String(item.status);
  const event = item.eventName ?? `${item.method} ${pathOf(item.url)}`;
  const tags = [];
  if (item.replayOf !== null) tags.push(h('span', { class: 'tag' }, item.edited ? `edit of #${item.replayOf}` : `replay of #${item.replayOf}`));
  if (item.backlog) tags.push(h('span', { class: 'tag' }, 'buffered'));
  if (item.resigned) tags.push(h('span', { class: 'tag' }, 're-signed'));
  if (item.refused) tags.push(h('span', { class: 'tag' }, 'refused'));
  const sig = item.signatureValid === null ? h('span', {}, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'sr-only' }, 'signature not checked'))
    : item.signatureValid ? h('span', { class: 'ok' }, h('span', { 'aria-hidden': 'true' }, '✓'), h('span', { class: 'sr-only' }, 'signature verifies'))
    : h('span', { class: 'bad' }, h('span', { 'aria-hidden': 'true' }, '✗'), h('span', { class: 'sr-only' }, 'signature does not verify'));
  return [
    h('span', {}, clock(item.at)),
    h('span', { title: event }, event, tags),
    h('span', { class: 'mono', title: item.deliveryId ?? '' }, item.deliveryId ?? '—'),
    h('span', {}, item.videoId ?? '—'),
    h('span', { class: `st-${item.outcome}` }, status, item.errorCode ? ` ${item.errorCode}` : ''),
    h('span', {}, item.durationMs === null ? '—' : `${item.durationMs} ms`),
    sig,
  ];
}

// ---------- the service page ----------

function servicePage(main, info) {
  const serviceInfo = info.service;
  let now = serviceInfo.now;
  const deliveries = new Map();
  const clips = new Map();
  const images = new Map();
  let stateFilter = '';
  let detailId = null;
  let detailController = null;

  const stateSelect = h('select', { id: 'f-state', onchange: () => ((stateFilter = stateSelect.value), renderDeliveries()) }, h('option', { value: '' }, 'Any state'), ['pending', 'delivering', 'delivered', 'failed'].map((s) => h('option', { value: s }, s)));
  const count = h('span', { class: 'count', 'aria-live': 'off' }, '0 deliveries');
  const list = new WindowedList({
    label: 'Webhook deliveries, newest first',
    idPrefix: 'd-',
    key: (item) => item.id,
    renderRow: (item) => deliveryRow(item, now),
    onSelect: (item) => showDelivery(item.id),
    onOpen: () => detail.focus(),
    emptyText: 'No deliveries yet. A clip made with a callback_url sends its webhook when it finishes.',
  });
  const detail = h('section', { class: 'pane detail-pane', id: 'detail', 'aria-labelledby': 'detail-title', tabindex: '-1' }, h('h2', { id: 'detail-title' }, 'Delivery'), h('p', { class: 'hint' }, 'Select a delivery to see its attempts on the retry schedule, and Redeliver.'));
  const clipTable = h('tbody');
  const imageTable = h('tbody');

  const tabs = [
    { id: 'deliveries', label: 'Deliveries' },
    { id: 'clips', label: 'Clips' },
    { id: 'images', label: 'Image jobs' },
  ];
  const tabButtons = tabs.map((tab, i) =>
    h('button', { type: 'button', role: 'tab', id: `tab-${tab.id}`, 'aria-controls': `panel-${tab.id}`, 'aria-selected': String(i === 0), tabindex: i === 0 ? '0' : '-1', onclick: () => selectTab(i) }, tab.label),
  );
  const tablist = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Service', onkeydown: (e) => {
    const at = tabButtons.indexOf(document.activeElement);
    if (at < 0) return;
    const next = e.key === 'ArrowRight' ? (at + 1) % tabs.length : e.key === 'ArrowLeft' ? (at + tabs.length - 1) % tabs.length : e.key === 'Home' ? 0 : e.key === 'End' ? tabs.length - 1 : null;
    if (next === null) return;
    e.preventDefault();
    selectTab(next);
    tabButtons[next].focus();
  } }, tabButtons);
  const panels = [
    h('div', { role: 'tabpanel', id: 'panel-deliveries', 'aria-labelledby': 'tab-deliveries', class: 'split' },
      h('section', { class: 'pane list-pane delivery-cols', 'aria-labelledby': 'list-title' },
        h('div', { class: 'pane-head' }, h('h2', { id: 'list-title' }, 'Webhook deliveries'), h('p', { class: 'sub' }, `from the service at ${serviceInfo.origin}; retries after 30 s, 2 min, 10 min, 30 min, 2 h`),
          h('div', { class: 'filters' }, h('label', { for: 'f-state' }, 'State'), stateSelect, count)),
        h('div', { class: 'cols', 'aria-hidden': 'true' }, ['Created', 'Event', 'Delivery', 'Video', 'State', '#', 'Last', 'Next'].map((name) => h('span', {}, name))),
        list.el),
      detail),
    h('div', { role: 'tabpanel', id: 'panel-clips', 'aria-labelledby': 'tab-clips', class: 'table-panel', hidden: true, tabindex: '0' },
      h('table', {}, h('caption', {}, 'Clips, newest first (the newest 500)'), h('thead', {}, h('tr', {}, ['Clip', 'Status', 'Progress', 'Model', 'Length', 'Created', 'Finished', 'Error', 'callback_url'].map((name) => h('th', { scope: 'col' }, name)))), clipTable)),
    h('div', { role: 'tabpanel', id: 'panel-images', 'aria-labelledby': 'tab-images', class: 'table-panel', hidden: true, tabindex: '0' },
      h('table', {}, h('caption', {}, 'Image jobs, newest first (the newest 500)'), h('thead', {}, h('tr', {}, ['Job', 'Status', 'Kind', 'Images', 'Created', 'Finished', 'Error', 'Description'].map((name) => h('th', { scope: 'col' }, name)))), imageTable)),
  ];
  main.classList.add('with-tabs');
  main.replaceChildren(tablist, ...panels);

  function selectTab(index) {
    tabButtons.forEach((button, i) => {
      button.setAttribute('aria-selected', String(i === index));
      button.tabIndex = i === index ? 0 : -1;
      panels[i].hidden = i !== index;
    });
    if (index === 0) list.render();
  }

  const renderDeliveries = perFrame(() => {
    const items = [...deliveries.values()].filter((d) => !stateFilter || d.state === stateFilter).sort((a, b) => b.createdAt - a.createdAt || (b.id < a.id ? -1 : 1));
    list.setItems(items);
    count.textContent = items.length === deliveries.size ? plural(deliveries.size, 'delivery', 'deliveries') : `${items.length} of ${plural(deliveries.size, 'delivery', 'deliveries')}`;
  });
  const renderClips = perFrame(() => {
    const rows = [...clips.values()].sort((a, b) => b.id - a.id).slice(0, 500);
    clipTable.replaceChildren(...rows.map((c) => h('tr', {}, h('td', {}, c.id), h('td', { class: c.status === 'done' ? 'ok' : c.status === 'error' ? 'bad' : '' }, c.status), h('td', {}, c.progress ?? '—'), h('td', {}, c.model), h('td', {}, `${c.duration} s`), h('td', {}, dateTime(c.createdAt)), h('td', {}, dateTime(c.completedAt)), h('td', {}, c.errorCode ?? '—'), h('td', { class: 'mono' }, c.callbackUrl ?? '—'))));
  });
  const renderImages = perFrame(() => {
    const rows = [...images.values()].sort((a, b) => b.id - a.id).slice(0, 500);
    imageTable.replaceChildren(...rows.map((j) => h('tr', {}, h('td', {}, j.id), h('td', { class: j.status === 'done' ? 'ok' : j.status === 'failed' ? 'bad' : '' }, j.status), h('td', {}, j.template ?? j.type), h('td', {}, `${j.images} of ${j.count}`), h('td', {}, dateTime(j.createdAt)), h('td', {}, dateTime(j.completedAt)), h('td', {}, j.errorCode ?? '—'), h('td', {}, j.description || '—'))));
  });

  const loader = new Loader(async () => {
    const [d, c, i] = await Promise.all([api('/api/service/deliveries'), api('/api/service/clips'), api('/api/service/images')]);
    now = d.now;
    deliveries.clear();
    for (const item of d.items) deliveries.set(item.id, item);
    clips.clear();
    for (const item of c.items) clips.set(item.id, item);
    images.clear();
    for (const item of i.items) images.set(item.id, item);
    renderDeliveries();
    renderClips();
    renderImages();
  });

  async function showDelivery(id) {
    detailController?.abort();
    detailController = new AbortController();
    let item;
    try {
      item = await api(`/api/service/deliveries/${encodeURIComponent(id)}`, { signal: detailController.signal });
    } catch (error) {
      if (error.name === 'AbortError') return;
      detail.replaceChildren(h('h2', { id: 'detail-title' }, id), h('p', { class: 'hint' }, error.message));
      return;
    }
    const previous = detailId === id ? detail.querySelector('.result')?.textContent ?? '' : '';
    detailId = id;
    renderDelivery(item, previous);
  }

  function renderDelivery(item, previousResult) {
    const result = h('p', { class: 'result', role: 'status' }, previousResult);
    const redeliver = h('button', { type: 'button', class: 'primary', id: 'redeliver', disabled: item.state === 'delivering', onclick: async () => {
      redeliver.disabled = true;
      result.textContent = 'Redelivering…';
      try {
        // The list and the detail follow from the server's events, which carry the latest state.
        const made = await post(`/api/service/deliveries/${encodeURIComponent(item.id)}/redeliver`);
        result.textContent = `Redelivery of ${made.id} queued: it goes out now, with the same delivery id and a fresh delivered_at.`;
      } catch (error) {
        result.textContent = `Not redelivered: ${error.message}`;
      } finally {
        redeliver.disabled = false;
      }
    } }, 'Redeliver');
    const schedule = serviceInfo.schedule;
    const slotName = (slot) => (slot === 1 ? 'at once' : `+${span(schedule[slot - 1])}`);
    const lastSlot = item.attempts.length ? item.attempts[item.attempts.length - 1].slot : 0;
    const nextText = item.next ? `attempt ${item.attempts.length + 1}, slot ${item.next.slot} (${slotName(item.next.slot)}) at ${dateTime(item.next.at)}, ${item.next.at > item.now ? `in ${span(item.next.at - item.now)}` : 'due now'}` : item.state === 'delivering' ? 'in flight now' : 'none: it has ' + (item.state === 'delivered' ? 'been delivered' : 'failed for good');
    fill(
      detail,
      h('div', { class: 'detail-head' }, h('h2', { id: 'detail-title' }, item.event), h('span', { class: `st-${item.state}` }, item.state)),
      h(
        'dl',
        { class: 'meta' },
        h('dt', {}, 'Delivery'), h('dd', { class: 'mono' }, item.id),
        h('dt', {}, 'To'), h('dd', { class: 'mono' }, item.url),
        h('dt', {}, 'Video'), h('dd', {}, item.videoId ?? '—'),
        h('dt', {}, 'Created'), h('dd', {}, dateTime(item.createdAt)),
        h('dt', {}, 'Attempts'), h('dd', {}, `${item.attempts.length}${item.retry ? ` (up to ${serviceInfo.maxAttempts} per round)` : ' (one attempt only)'}`),
        h('dt', {}, 'Next attempt'), h('dd', { id: 'next-slot' }, nextText),
      ),
      h('ol', { class: 'schedule', 'aria-label': 'Retry schedule of the current round' }, schedule.map((_, i) => h('li', { class: item.next?.slot === i + 1 ? 'next' : i + 1 <= lastSlot ? 'done' : '' }, `${i + 1} · ${slotName(i + 1)}`))),
      h('div', { class: 'actions' }, redeliver),
      result,
      h('h3', {}, 'Attempts'),
      item.attempts.length === 0
        ? h('p', { class: 'note' }, 'No attempt has ended yet.')
        : h('table', { id: 'attempts' }, h('caption', { class: 'sr-only' }, 'Attempts, oldest first'),
            h('thead', {}, h('tr', {}, ['#', 'Slot', 'Time', 'Status', 'Latency', 'Reply'].map((name) => h('th', { scope: 'col' }, name)))),
            h('tbody', {}, item.attempts.map((a) => h('tr', {}, h('td', {}, a.n), h('td', {}, `${a.slot} · ${slotName(a.slot)}`), h('td', {}, dateTime(a.at)), h('td', { class: a.status !== null && a.status < 300 ? 'ok' : 'bad' }, a.status ?? a.error ?? 'ERR'), h('td', {}, `${a.latencyMs} ms`), h('td', { class: 'mono' }, a.response === null ? (a.error ?? '—') : a.response.slice(0, 200) || '(empty)'))))),
      h('h3', {}, 'Payload (delivered_at is set per attempt)'),
      h('pre', { class: 'body', tabindex: '0', role: 'region', 'aria-label': 'Payload' }, JSON.stringify(item.payload, null, 2)),
    );
  }

  connect({
    hello: (hello) => {
      now = hello.service?.now ?? now;
      void loader.reload();
    },
    delivery: ({ summary, now: at }) =>
      loader.run(() => {
        now = at;
        deliveries.set(summary.id, summary);
        renderDeliveries();
        if (summary.id === detailId) void showDelivery(summary.id);
      }),
    clip: ({ summary }) => loader.run(() => (clips.set(summary.id, summary), renderClips())),
    image: ({ summary }) => loader.run(() => (images.set(summary.id, summary), renderImages())),
  });
  list.root.focus();
}

function deliveryRow(item, now) {
  const last = item.last ? (item.last.status ?? 'ERR') : '—';
  const next = item.nextAttemptAt === null ? '—' : item.nextAttemptAt <= now ? 'now' : `in ${span(item.nextAttemptAt - now)}`;
  return [
    h('span', {}, clock(item.createdAt)),
    h('span', { title: item.url }, item.event),
    h('span', { class: 'mono', title: item.id }, item.id),
    h('span', {}, item.videoId ?? '—'),
    h('span', { class: `st-${item.state}` }, item.state),
    h('span', {}, item.attempts),
    h('span', { class: item.last ? (item.last.status !== null && item.last.status < 300 ? 'ok' : 'bad') : '' }, last),
    h('span', {}, next),
  ];
}

// ---------- start ----------

async function start() {
  const info = await api('/api/info');
  const nav = document.getElementById('pages');
  const path = location.pathname === '/' ? `/${info.pages[0]}` : location.pathname;
  const names = { listen: 'Webhooks received', service: 'Service' };
  nav.replaceChildren(...info.pages.map((page) => h('a', { href: `/${page}`, 'aria-current': path === `/${page}` ? 'page' : null }, names[page])));
  const main = document.getElementById('main');
  const page = path.slice(1);
  if (page === 'service' && info.service) servicePage(main, info);
  else if (info.listen) listenPage(main, info);
  else servicePage(main, info);
  document.title = `${names[info.listen && page !== 'service' ? 'listen' : 'service']} · cliphook inspector`;
}

start().catch((error) => {
  setLive('down', 'Failed to start');
  document.getElementById('main').replaceChildren(h('p', { class: 'pad' }, `The inspector could not load: ${error.message}`));
});
