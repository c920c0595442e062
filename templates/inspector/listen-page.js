import { api, bodyBlock, clock, dateTime, fill, h, headerTable, pathOf, plural, post } from './dom.js';
import { connect, Loader, perFrame } from './live.js';
import { WindowedList } from './windowed-list.js';

export function listenPage(main, info) {
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
    // The box shows text: a body kept in part, or one that is not UTF-8, would be sent changed without a
    // word, so it is not offered for editing.
    const editable = !item.request.body.truncated && item.request.body.text !== null;
    const editButton = h(
      'button',
      {
        type: 'button',
        id: 'replay-edit',
        'aria-expanded': 'false',
        'aria-controls': 'editor',
        disabled: !editable,
        title: editable ? undefined : 'Only part of this body was kept, or it is not UTF-8 text: it cannot be edited',
        onclick: editable ? () => toggleEditor(editor.hidden) : undefined,
      },
      'Replay with edits…',
    );
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
  // Hidden words say what the bare numbers are (the column heads are not read out).
  const say = (text) => h('span', { class: 'sr-only' }, text);
  return [
    h('span', {}, clock(item.at)),
    h('span', { class: 'event', title: event }, h('span', { class: 'name' }, event), tags),
    h('span', { class: 'mono', title: item.deliveryId ?? '' }, say('delivery '), item.deliveryId ?? '—'),
    h('span', {}, say('video '), item.videoId ?? '—'),
    h('span', { class: `st-${item.outcome}` }, say('status '), status, item.errorCode ? ` ${item.errorCode}` : ''),
    h('span', {}, item.durationMs === null ? '—' : `${item.durationMs} ms`),
    sig,
  ];
}

