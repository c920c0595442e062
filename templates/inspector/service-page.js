import { api, clock, dateTime, fill, h, plural, post, span } from './dom.js';
import { connect, Loader, perFrame } from './live.js';
import { WindowedList } from './windowed-list.js';

export function servicePage(main, info) {
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
  // The time itself (the service's clock), which stays true while the row waits for its next update.
  const next = item.nextAttemptAt === null ? '—' : item.nextAttemptAt <= now ? 'due' : clock(item.nextAttemptAt);
  // Hidden words say what the bare numbers are (the column heads are not read out).
  const say = (text) => h('span', { class: 'sr-only' }, text);
  return [
    h('span', {}, say('created '), clock(item.createdAt)),
    h('span', { title: item.url }, item.event),
    h('span', { class: 'mono', title: item.id }, say('delivery '), item.id),
    h('span', {}, say('video '), item.videoId ?? '—'),
    h('span', { class: `st-${item.state}` }, item.state),
    h('span', {}, say('attempts '), item.attempts),
    h('span', { class: item.last ? (item.last.status !== null && item.last.status < 300 ? 'ok' : 'bad') : '' }, say('last status '), last),
    h('span', {}, say('next attempt '), next),
  ];
}

