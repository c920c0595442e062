// cliphook inspector: the page. Plain JavaScript modules, no framework, nothing loaded from elsewhere.
// Data comes from this server's JSON API; changes arrive as server-sent events (nothing polls).
// Lists are windowed: rows have one fixed height and only the visible ones are in the DOM.
import { api, h } from './dom.js';
import { listenPage } from './listen-page.js';
import { setLive } from './live.js';
import { servicePage } from './service-page.js';

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
