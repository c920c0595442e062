import type { IncomingMessage } from 'node:http';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { cspWithFormTarget, escapeHtml, html, isSameOrigin, PAGE_CSP, PAGE_FILES_PATH, pageFileRoute, renderPage, sendPage, unsafeRaw, wantsHtml } from '../../../src/service/pages/page.js';

/** A page and the page files, as the service's router serves them (src/service/http/extras.ts). */
function app() {
  return (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    const query = Object.fromEntries(url.searchParams);
    if (url.pathname === '/page') return sendPage(res, 200, renderPage({ title: query.title ?? 'Hello', main: html`<p>${query.text ?? ''}</p>`, scripts: ['photo-upload.js'] }));
    if (url.pathname.startsWith(`${PAGE_FILES_PATH}/`)) {
      return void pageFileRoute({ params: { file: decodeURIComponent(url.pathname.slice(PAGE_FILES_PATH.length + 1)) } }, res).then((result) => {
        if (result && !res.headersSent) res.writeHead(result.status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(result.body));
      });
    }
    res.writeHead(404).end();
  };
}

const asRequest = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('service pages', () => {
  it('html escapes every interpolated value but keeps html fragments, arrays of them, and unsafeRaw constants', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    const items = ['<b>', 'ok'].map((item) => html`<li>${item}</li>`);
    expect(html`<ul title="${'"x"'}">${items}${null}${false}${unsafeRaw('<hr>')}</ul>`.value).toBe('<ul title="&quot;x&quot;"><li>&lt;b&gt;</li><li>ok</li><hr></ul>');
  });

  it('renderPage escapes the title and refuses a script that is not a page file name', () => {
    const page = renderPage({ title: '</title><script>alert(1)</script>', main: html`<p>x</p>` });
    expect(page).toContain('<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; · cliphook</title>');
    expect(page).toContain(`<link rel="stylesheet" href="${PAGE_FILES_PATH}/page.css">`);
    expect(page).not.toContain('<script>');
    expect(() => renderPage({ title: 't', main: html``, scripts: ['../x.js'] })).toThrow(TypeError);
  });

  it('sendPage sends the document with the security headers', async () => {
    const res = await request(app()).get('/page').query({ text: '<img src=x onerror=alert(1)>' });
    expect(res.status).toBe(200);
    expect(res.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': PAGE_CSP,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
    });
    expect(res.text).toContain('<p>&lt;img src=x onerror=alert(1)&gt;</p>');
    expect(res.text).toContain(`<script type="module" src="${PAGE_FILES_PATH}/photo-upload.js"></script>`);
    expect(PAGE_CSP).toContain("frame-ancestors 'none'");
  });

  it('serves the files of templates/service by name only: no other name, no path traversal', async () => {
    const css = await request(app()).get(`${PAGE_FILES_PATH}/page.css`);
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.text).toContain('prefers-color-scheme: dark');
    for (const path of ['nope.css', '..%2Fpage.css', '..%2F..%2Fpackage.json', 'PAGE.CSS', 'page.css.map']) {
      const res = await request(app()).get(`${PAGE_FILES_PATH}/${path}`);
      expect(res.status, path).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it('isSameOrigin takes a matching Origin, or Sec-Fetch-Site same-origin without one; wantsHtml reads Accept', () => {
    const origin = 'http://127.0.0.1:8080';
    expect(isSameOrigin(asRequest({ origin }), origin)).toBe(true);
    expect(isSameOrigin(asRequest({ origin: 'http://evil.example' }), origin)).toBe(false);
    expect(isSameOrigin(asRequest({ origin: 'null' }), origin)).toBe(false);
    expect(isSameOrigin(asRequest({ origin: 'http://evil.example', 'sec-fetch-site': 'same-origin' }), origin)).toBe(false);
    expect(isSameOrigin(asRequest({ 'sec-fetch-site': 'same-origin' }), origin)).toBe(true);
    expect(isSameOrigin(asRequest({ 'sec-fetch-site': 'cross-site' }), origin)).toBe(false);
    expect(isSameOrigin(asRequest({}), origin)).toBe(false);
    expect(wantsHtml(asRequest({ accept: 'text/html,application/xhtml+xml' }))).toBe(true);
    expect(wantsHtml(asRequest({ accept: 'application/json' }))).toBe(false);
  });
});

describe('form posts and their targets', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  it('takes Origin: null (a no-referrer page) as same-origin only when Sec-Fetch-Site says so', () => {
    expect(isSameOrigin(req({ origin: 'null', 'sec-fetch-site': 'same-origin' }), 'http://127.0.0.1:8080')).toBe(true);
    expect(isSameOrigin(req({ origin: 'null', 'sec-fetch-site': 'cross-site' }), 'http://127.0.0.1:8080')).toBe(false);
    expect(isSameOrigin(req({ origin: 'null' }), 'http://127.0.0.1:8080')).toBe(false);
    expect(isSameOrigin(req({ origin: 'http://127.0.0.1:8080', 'sec-fetch-site': 'cross-site' }), 'http://127.0.0.1:8080')).toBe(true);
    expect(isSameOrigin(req({ origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' }), 'http://127.0.0.1:8080')).toBe(false);
  });

  it('adds a redirect target to form-action: its origin, or a native app scheme, and nothing for a bad URL', () => {
    expect(cspWithFormTarget('http://127.0.0.1:9/callback?x=1')).toContain("form-action 'self' http://127.0.0.1:9;");
    expect(cspWithFormTarget('cursor://anysphere.cursor-mcp/oauth/callback')).toContain("form-action 'self' cursor:;");
    expect(cspWithFormTarget('not a url; script-src *')).toBe(PAGE_CSP);
  });
});
