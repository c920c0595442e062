import { h } from './dom.js';

/** Every row's height in px: fixed, so the list knows where any row is without measuring (windowing). */
export const ROW = 32;

/**
 * A listbox of fixed-height rows over an array of any length: only the rows in view (and the selected one)
 * are in the DOM. Keyboard: arrows, Page Up/Down, Home/End; Enter moves to the detail. New items at the top
 * do not move what is on screen unless the list is scrolled to the top.
 */
export class WindowedList {
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
        // A row's name is its text: hidden commas keep a screen reader from running the cells together
        // (absolutely positioned, so they take no cell of the row's grid).
        const cells = this.renderRow(item);
        row.replaceChildren(...cells.flatMap((cell, i) => (i === 0 ? [cell] : [h('span', { class: 'sr-only' }, ', '), cell])));
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
