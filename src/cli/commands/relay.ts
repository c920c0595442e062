import { createRelayServer, type RelayLogger } from '../../relay/server.js';
import { isLoopbackHost } from '../../http/loopback.js';
import { ExitError } from '../errors.js';
import { aborted, flagError, parsePort, stopSignal } from '../process.js';
import { redactRedisUrl } from '../../store/redis-url.js';
import { reachRedis } from '../redis-reach.js';

export interface RelayCommandOptions {
  port: string;
  host: string;
  publicUrl?: string;
  /** @default '.cliphook/relay.json', unless `redis` */
  data?: string;
  /** A redis:// URL (or env CLIPHOOK_REDIS_URL): state in Redis, shared by several relay processes. */
  redis?: string;
  adminToken?: string;
  open?: boolean;
  maxChannels?: string;
  maxTotalBufferedBytes?: string;
}

/** The flag of each library option the command sets, so an error names what the user typed. */
const FLAGS: Record<string, string> = {
  publicUrl: '--public-url',
  adminToken: '--admin-token',
  file: '--data',
  redisUrl: '--redis',
  open: '--open',
  maxChannels: '--max-channels',
  maxTotalBufferedBytes: '--max-total-buffered-bytes',
};

/** Where the command writes, and what stops it: injectable for tests. */
export interface RelayIo {
  out(line: string): void;
  logger: RelayLogger;
  signal: AbortSignal;
}

/**
 * `cliphook relay`: serves channels, the `/in/<channel>` ingress and the listener endpoint until
 * SIGINT/SIGTERM, then closes the listeners and saves the buffer. With `--redis`, channels and buffers are
 * in Redis and several relay processes serve them together.
 */
export async function relay(options: RelayCommandOptions, io: RelayIo = processIo()): Promise<void> {
  const port = parsePort('--port', options.port);
  // A public relay without an admin token lets anyone create channels; only on purpose.
  if (!isLoopbackHost(options.host) && !options.adminToken && !options.open) {
    throw new ExitError(`refusing to listen on ${options.host} without --admin-token (anyone could create channels); set --admin-token, or --open to run an open relay on purpose.`, 2);
  }
  if (options.redis !== undefined && options.data !== undefined) {
    throw new ExitError('--redis and --data are exclusive: the relay keeps its channels and buffers in Redis or in a data file.', 2);
  }
  const data = options.data ?? '.cliphook/relay.json';
  let server;
  try {
    server = createRelayServer({
      ...(options.redis !== undefined ? { redisUrl: options.redis } : { file: data }),
      logger: io.logger,
      open: options.open === true,
      ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
      ...(options.maxChannels !== undefined ? { maxChannels: integer('--max-channels', options.maxChannels) } : {}),
      ...(options.maxTotalBufferedBytes !== undefined ? { maxTotalBufferedBytes: integer('--max-total-buffered-bytes', options.maxTotalBufferedBytes) } : {}),
    });
  } catch (error) {
    // The library names its options (`publicUrl`); the user typed flags (--public-url).
    if (error instanceof TypeError) throw flagError(error, FLAGS);
    throw error;
  }
  const where = options.redis !== undefined ? redactRedisUrl(options.redis) : data;
  if (options.redis !== undefined) await reachRedis(options.redis, '--redis');
  try {
    await server.open();
  } catch (error) {
    throw new ExitError(options.redis !== undefined ? (error as Error).message : `cannot load ${data}: ${(error as Error).message}`, 1);
  }
  let url: string;
  try {
    ({ url } = await server.listen(port, options.host));
  } catch (error) {
    await server.close();
    throw new ExitError(`cannot listen on ${options.host}:${port}: ${(error as Error).message}`, 1);
  }
  const guard = options.adminToken ? 'channel creation needs the admin token' : options.open ? 'anyone can create channels (--open)' : 'anyone on this machine can create channels';
  io.out(`relay listening on ${url} (data: ${where}; ${guard})`);
  if (options.publicUrl) io.out(`channel URLs start with ${options.publicUrl.replace(/\/+$/, '')}/in/`);
  await aborted(io.signal);
  await server.close();
  io.out('relay stopped');
}


/** A flag's text as a whole number, or a usage error naming the flag (the library then checks its range). */
function integer(flag: string, text: string): number {
  if (!/^\d+$/.test(text.trim())) throw new ExitError(`${flag} must be a whole number, got ${JSON.stringify(text)}.`, 2);
  return Number(text);
}

function processIo(): RelayIo {
  const line = (prefix: string) => (message: string) => process.stderr.write(`${new Date().toISOString()} ${prefix}${message}\n`);
  return { out: (text) => process.stdout.write(`${text}\n`), logger: { info: line(''), warn: line('warning: ') }, signal: stopSignal() };
}
