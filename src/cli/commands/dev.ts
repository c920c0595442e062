import { MCP_PATH } from '../../service/assistant/endpoint.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ListenRecorder } from '../../inspector/listen-recorder.js';
import { startInspector } from '../../inspector/server.js';
import { ServiceFeed } from '../../inspector/service-feed.js';
import { FileDeliveryStore } from '../../receiver/file-delivery-store.js';
import { createReceiver } from '../../receiver/node.js';
import { createRelayServer, type RelayServer } from '../../relay/server.js';
import { connectListener } from '../../relay/client.js';
import { createServiceApp } from '../../service/http/app.js';
import { ChannelState, type SavedChannel } from '../channel-state.js';
import { ExitError } from '../errors.js';
import { aborted, parsePort, stopSignal } from '../process.js';
import { palette, type Palette } from '../output.js';

export interface DevCommandOptions {
  port: string;
  relayPort: string;
  receiverPort: string;
  data: string;
  speed: string;
  /** `--inspect <port>`: the inspector on 127.0.0.1 (`'0'`, the CLI's default, a free port); `false` or not given: none. */
  inspect?: string | false;
}

export interface DevIo {
  out(line: string): void;
  signal: AbortSignal;
  palette: Palette;
}

/**
 * `cliphook dev` (what `npm start` runs): the whole toolkit on this machine. The simulated service sends
 * its webhooks to a relay channel; `listen` forwards them to a receiver that verifies and dedupes them.
 * It prints a curl that makes a clip, and one line per hop as its webhook travels
 * service → emitter → relay → listen → receiver. Ctrl-C stops every part and exits 0.
 */
export async function dev(options: DevCommandOptions, io: DevIo = processIo()): Promise<void> {
  const ports = [parsePort('--port', options.port), parsePort('--relay-port', options.relayPort), parsePort('--receiver-port', options.receiverPort)] as const;
  const inspectPort = options.inspect === undefined || options.inspect === false ? null : parsePort('--inspect', options.inspect);
  if (options.speed !== 'fast' && options.speed !== 'realistic') throw new ExitError(`--speed is fast or realistic, got ${JSON.stringify(options.speed)}.`, 2);
  const p = io.palette;
  const line = (who: string, text: string) => io.out(`${p.dim(new Date().toTimeString().slice(0, 8))}  ${p.bold(who.padEnd(8))} ${text}`);
  const stops: Array<() => Promise<unknown>> = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    const app = await createServiceApp({ file: join(options.data, 'service.json'), speed: options.speed, warn: (message) => line('service', p.yellow(message)) });
    stops.push(() => app.close());
    const service = app.service;
    const serviceUrl = await listenOn(createServer(app), ports[0], stops);
    service.origin = serviceUrl;
    const { apiKey, webhookSecret } = service.first();

    const relay = createRelayServer({ file: join(options.data, 'relay.json'), logger: { info: () => undefined, warn: (message) => line('relay', p.yellow(message)) } });
    const { url: relayUrl } = await relay.listen(ports[1], '127.0.0.1').catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE' || ports[1] === 0) throw error;
      return relay.listen(0, '127.0.0.1');
    });
    stops.push(() => relay.close());

    const receiver = createReceiver({ secret: webhookSecret, store: new FileDeliveryStore({ file: join(options.data, 'dev-deliveries.json') }) });
    receiver.on('video.completed', (event, { deliveryId }) => line('receiver', p.green(`clip ${event.id} is ready: ${event.duration} s, ${event.credits_used} credits [${deliveryId}]`)));
    receiver.on('video.failed', (event, { deliveryId }) => line('receiver', p.red(`clip ${event.id} failed: ${event.error_code} [${deliveryId}]`)));
    receiver.onError((error) => line('receiver', p.red(`refused: ${error.code}`)));
    const handle = receiver.express();
    const receiverServer = createServer((req, res) => {
      if (req.method === 'POST' && req.url === '/webhooks') return handle(req, res, () => undefined);
      req.resume();
      res.writeHead(404).end();
    });
    const receiverUrl = `${await listenOn(receiverServer, ports[2], stops)}/webhooks`;
    stops.push(() => receiver.close());

    const channel = await keptChannel(relay, relayUrl, join(options.data, 'listen.json'));
    // Opened before the listener connects: it must be attached before the caught-up events are released.
    const recorder =
      inspectPort === null
        ? null
        : await ListenRecorder.open({ forwardTo: receiverUrl, secret: webhookSecret, channel: channel.channel, channelUrl: channel.url, log: join(options.data, 'listen.events.jsonl'), onWarning: (message) => line('listen', p.yellow(message)) });
    if (recorder) stops.push(() => recorder.close());
    const listener = await connectListener({ relayUrl, channel: channel.channel, token: channel.token, forwardTo: receiverUrl, secret: webhookSecret });
    stops.push(() => listener.close());
    recorder?.attach(listener);
    let inspectorUrl: string | null = null;
    if (recorder) {
      const feed = new ServiceFeed(service);
      stops.push(async () => feed.close());
      const inspector = await startInspector({ port: inspectPort!, listen: recorder, service: feed });
      stops.push(() => inspector.close());
      inspectorUrl = inspector.url;
    }
    // The relay's hop shows here: listen hears of each event from it.
    listener.on('event', (event) => line('relay', `--> listen: ${event.eventName ?? event.method} [${event.deliveryId ?? '-'}] sig ${event.signatureValid ? '✓' : '✗'}${event.resigned ? ' (re-signed)' : ''}`));
    listener.on('reply', (reply) => line('listen', `<-- [${reply.status ?? 'ERR'}] ${reply.event.url} (${reply.durationMs} ms)`));

    service.state.videos.on('change', (video) => {
      if (video.status === 'generating' && video.progress === '0%') line('service', `clip ${video.id} is rendering`);
    });
    service.state.videos.on('terminal', (video) => line('service', `clip ${video.id} is ${video.status}${video.errorCode ? ` (${video.errorCode})` : ''}; its webhook goes to ${video.callbackUrl ?? 'nowhere (no callback_url)'}`));
    service.emitter.on('attempt', (delivery, attempt) => line('emitter', `${delivery.event} [${delivery.id}] attempt ${delivery.attempts.length} → ${attempt.status ?? attempt.error} (${attempt.latencyMs} ms)`));

    io.out(p.bold('cliphook dev: the service, a relay, listen and a receiver, on this machine'));
    io.out(`  service   ${serviceUrl}/v1   API key ${apiKey}`);
    if (app.assistant) io.out(`  assistant ${serviceUrl}${MCP_PATH}   the MCP endpoint for AI assistants (API key or OAuth sign-in)`);
    io.out(`  relay     ${relayUrl}   channel ${channel.url}`);
    io.out(`  receiver  ${receiverUrl}   webhook secret ${webhookSecret}`);
    if (inspectorUrl) io.out(`  inspector ${inspectorUrl}   the webhooks listen received, and the service's clips, image jobs and deliveries`);
    io.out('');
    io.out('Make a clip whose webhook travels service → emitter → relay → listen → receiver:');
    io.out('');
    io.out(`curl -s -X POST ${serviceUrl}/v1/videos -H 'Authorization: Bearer ${apiKey}' -H 'Content-Type: application/json' -d '{"prompt":"a red fox in the snow","callback_url":"${channel.url}"}'`);
    io.out('');
    io.out(p.dim('Ctrl-C stops every part.'));
    await aborted(io.signal);
  } catch (error) {
    await stopAll();
    if (error instanceof ExitError) throw error;
    throw new ExitError(`cliphook dev could not start: ${(error as Error).message}`, 1);
  }
  await stopAll();
  io.out('cliphook dev stopped');
}

/**
 * The relay channel dev used last time on this relay URL, kept in `file` as `listen` keeps its own, so a
 * callback URL given to the service (or an app's config) on an earlier run still works;
 * a new one when the relay no longer knows it (its data file removed) or the relay's port changed.
 */
async function keptChannel(relay: RelayServer, relayUrl: string, file: string): Promise<SavedChannel> {
  const state = await ChannelState.open(file);
  const saved = state.get(relayUrl);
  if (saved && (await relay.checkChannel(saved.channel, saved.token)) === 'ok') return { ...saved, url: `${relayUrl}/in/${saved.channel}` };
  return state.save(relayUrl, await relay.createChannel(relayUrl));
}

/** Listens on 127.0.0.1:`port`, or on a free port when that one is taken (a second `npm start`). */
async function listenOn(server: Server, port: number, stops: Array<() => Promise<unknown>>): Promise<string> {
  const tryPort = (value: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(value, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  try {
    await tryPort(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error;
    await tryPort(0);
  }
  stops.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function processIo(): DevIo {
  return { out: (text) => process.stdout.write(`${text}\n`), signal: stopSignal(), palette: palette(process.stdout) };
}
