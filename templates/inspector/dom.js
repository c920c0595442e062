// Small DOM, fetch and formatting helpers of the inspector's page.

/** Makes an element: h('span', { class: 'x' }, 'text', child). Text is always set as text, never as HTML. */
export function h(tag, attrs = {}, ...children) {
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
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
}

export async function api(path, options) {
  const res = await fetch(path, options);
  const body = await res.json().catch((error) => {
    // A newer selection aborted this one while its body was read: that is no answer at all.
    if (error.name === 'AbortError') throw error;
    return null;
  });
  if (!res.ok || body === null) throw Object.assign(new Error(body?.detail ?? `HTTP ${res.status}`), { status: res.status, body });
  return body;
}

export function post(path, body = {}) {
  return api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

const pad = (n, w = 2) => String(n).padStart(w, '0');
export function clock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
export function dateTime(ms) {
  if (ms === null || ms === undefined) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(ms)}.${pad(d.getMilliseconds(), 3)}`;
}
export function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
}
export const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
export function bytes(n) {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
export function pathOf(url) {
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
export function prettyJson(text) {
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

export function headerTable(headers, caption) {
  const rows = [];
  for (let i = 0; i < headers.length; i += 2) rows.push(h('tr', {}, h('td', {}, headers[i]), h('td', {}, headers[i + 1])));
  if (rows.length === 0) return h('p', { class: 'note' }, 'No headers.');
  return h('table', { class: 'headers' }, h('caption', { class: 'sr-only' }, caption), h('thead', { class: 'sr-only' }, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Value'))), h('tbody', {}, rows));
}

/** A body with Pretty / Raw buttons. `view` is the API's { size, truncated, text, base64 }. */
export function bodyBlock(view, id, label) {
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
