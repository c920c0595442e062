import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/** A TCP proxy in front of the relay whose connections the test can cut, as a flaky network would. */
export async function startCuttableProxy(target: URL) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
      from.pipe(to);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut() {
      for (const socket of sockets) socket.destroy();
    },
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

/**
 * A TCP proxy in front of several relay processes, as a load balancer with health checks would be: each
 * connection goes to the first target that accepts it, so once a process dies its listeners reconnect to
 * the next one.
 */
export async function startFailoverProxy(targets: readonly URL[], { roundRobin = false }: { roundRobin?: boolean } = {}) {
  const sockets = new Set<Socket>();
  /** With `roundRobin`, each connection starts at the next target (and fails over to the ones after it). */
  let turn = 0;
  /** Connections taken while held, waiting for `release()`. */
  let waiting: Array<() => void> | null = null;
  const server = createServer((client) => {
    client.pause();
    sockets.add(client);
    client.on('error', () => undefined);
    client.once('close', () => sockets.delete(client));
    const first = roundRobin ? turn++ % targets.length : 0;
    const attempt = (index: number): void => {
      if (waiting) return void waiting.push(() => attempt(index));
      const target = index < targets.length ? targets[(first + index) % targets.length] : undefined;
      if (!target) return void client.destroy();
      const upstream = connect(Number(target.port), target.hostname);
      let connected = false;
      upstream.on('error', () => {
        if (!connected && !client.destroyed) attempt(index + 1);
        else client.destroy();
      });
      upstream.once('connect', () => {
        connected = true;
        sockets.add(upstream);
        upstream.once('close', () => {
          sockets.delete(upstream);
          client.destroy();
        });
        client.once('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** New connections wait (as behind a balancer that has not yet noticed a dead target) until `release()`. */
    hold() {
      waiting ??= [];
    },
    release() {
      const queued = waiting ?? [];
      waiting = null;
      for (const go of queued) go();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
