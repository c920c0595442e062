import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { createTestWebhook, type WebhookReceiver } from '../../../src/index.js';
import { webhooksModule } from './nest/webhooks.module.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post, type Mounted } from './suite.js';

// Issue 32 item 3: the NestJS recipe (on Express, rawBody: true) in NestJS itself.

async function start(receiver: WebhookReceiver, rawBody = true): Promise<Mounted> {
  const app = await NestFactory.create<NestExpressApplication>(webhooksModule(receiver), { rawBody, logger: false });
  await app.listen(0, '127.0.0.1');
  return { url: `${baseUrl(app.getHttpServer() as Server)}/webhooks`, close: () => app.close() };
}

describe('receiver.express() in a NestJS controller', () => {
  // Nest's body parser (rawBody: true) reads the body before the controller calls the receiver, so the
  // receiver's bodyTimeout never starts there: Node's server.requestTimeout bounds that read (docs/receiver.md).
  frameworkChecks((receiver) => start(receiver), { stall: false });

  it('fails with 500 body_already_parsed naming rawBody: true, logged once, when the app was created without it', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { url, close } = await start(receiver, false);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
      expect(String(res.body?.detail)).toContain('rawBody: true');
      expect(handler).not.toHaveBeenCalled();
      expect(logged).toHaveBeenCalledTimes(1);
    } finally {
      logged.mockRestore();
      await close();
    }
  });
});
