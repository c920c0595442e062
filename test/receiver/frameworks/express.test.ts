import express from 'express';
import { createServer, type Server } from 'node:http';
import { describe } from 'vitest';
import type { WebhookReceiver } from '../../../src/index.js';
import { baseUrl, frameworkChecks, type Mounted } from './suite.js';

// receiver.express() in Express 5 itself and on a bare node:http server, on real sockets (the rest of
// its behaviour is in test/receiver/express.test.ts).

async function listen(server: Server): Promise<Mounted> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `${baseUrl(server)}/webhooks`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('receiver.express() in Express', () => {
  frameworkChecks((receiver: WebhookReceiver) => {
    const app = express();
    app.post('/webhooks', receiver.express()); // before app.use(express.json())
    app.use(express.json());
    return listen(createServer(app));
  });
});

describe('receiver.express() on node:http', () => {
  frameworkChecks((receiver: WebhookReceiver) => {
    const middleware = receiver.express();
    return listen(createServer((req, res) => void middleware(req, res)));
  });
});
