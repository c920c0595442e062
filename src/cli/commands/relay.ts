import { createRelayServer, type RelayLogger } from '../../relay/server.js';
import { ExitError } from '../errors.js';

export interface RelayCommandOptions {
  port: string;
  host: string;
  publicUrl?: string;
  data: string;
  adminToken?: string;
}

/** Where the command writes, and what stops it: injectable for tests. */
export interface RelayIo {
  out(line: string): void;
  logger: RelayLogger;
  signal: AbortSignal;
}

/**
 * `cliphook relay`: serves channels, the `/in/<channel>` ingress and the listener endpoint until
 * SIGINT/SIGTERM, then closes the listeners and saves the buffer.
 */
export async function relay(options: RelayCommandOptions, io: RelayIo = processIo()): Promise<void> {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ExitError(`--port must be 0-65535, got ${options.port}.`, 2);
  let server;
  try {
    server = createRelayServer({
      file: options.data,
      logger: io.logger,
      ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
    });
  } catch (error) {
    if (error instanceof TypeError) throw new ExitError(error.message, 2);
    throw error;
  }
  try {
    await server.open();
  } catch (error) {
    throw new ExitError(`cannot load ${options.data}: ${(error as Error).message}`, 1);
  }
  let url: string;
  try {
    ({ url } = await server.listen(port, options.host));
  } catch (error) {
    throw new ExitError(`cannot listen on ${options.host}:${port}: ${(error as Error).message}`, 1);
  }
  const guard = options.adminToken ? 'channel creation needs the admin token' : 'anyone can create channels (set --admin-token on a public address)';
  io.out(`relay listening on ${url} (data: ${options.data}; ${guard})`);
  if (options.publicUrl) io.out(`channel URLs start with ${options.publicUrl.replace(/\/+$/, '')}/in/`);
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.close();
  io.out('relay stopped');
}

function processIo(): RelayIo {
  const controller = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
  const line = (prefix: string) => (message: string) => process.stderr.write(`${new Date().toISOString()} ${prefix}${message}\n`);
  return { out: (text) => process.stdout.write(`${text}\n`), logger: { info: line(''), warn: line('warning: ') }, signal: controller.signal };
}
