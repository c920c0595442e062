// The live connection: one EventSource, and what keeps the lists consistent while they reload.

const live = document.getElementById('live');
const liveText = document.getElementById('live-text');
export function setLive(state, text) {
  live.dataset.state = state;
  liveText.textContent = text;
}

/** Keeps one EventSource; every (re)connection starts with `hello`, after which the view reloads its lists. */
export function connect(handlers) {
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
export class Loader {
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
export function perFrame(fn) {
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
