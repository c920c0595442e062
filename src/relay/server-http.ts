import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { problem, problemHeaders, type ProblemCode } from '../protocol/problem.js';
import { sendProblem } from './ingress.js';

/* The relay server's small HTTP helpers: who is asking, and the answers that are not an ingress reply. */

export function bearer(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function sameHash(expected: Buffer, given: string | undefined): boolean {
  return given !== undefined && timingSafeEqual(expected, sha256(given));
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendNotAllowed(res: ServerResponse, allow: string): void {
  res.setHeader('allow', allow);
  sendProblem(res, 'method_not_allowed', { detail: `Use ${allow}.` });
}

export function refuseUpgrade(socket: Duplex, code: ProblemCode, detail: string): void {
  const body = problem(code, { detail });
  const text = JSON.stringify(body);
  const headers = Object.entries({ ...problemHeaders(body), 'content-length': String(Buffer.byteLength(text)), connection: 'close' })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${body.status} ${body.title}\r\n${headers}\r\n${text}`);
}
