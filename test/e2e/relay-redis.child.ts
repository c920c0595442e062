// One relay process of the multi-process Redis tests (issue 13):
// `node --import tsx relay-redis.child.ts <redis url> <key prefix>`. Prints {"url"} once listening, then one
// `info …` or `warn …` line per line of its logger. RESPONSE_TIMEOUT_MS sets responseTimeoutMs.
import { createRelayServer } from '../../src/index.js';

const line = (text: string) => process.stdout.write(`${text.replace(/\n/g, ' ')}\n`);
const relay = createRelayServer({
  redisUrl: process.argv[2]!,
  redisPrefix: process.argv[3]!,
  responseTimeoutMs: Number(process.env.RESPONSE_TIMEOUT_MS ?? 9_000),
  logger: { info: (message) => line(`info ${message}`), warn: (message) => line(`warn ${message}`) },
});
const { url } = await relay.listen(0, '127.0.0.1');
line(JSON.stringify({ url }));
process.on('SIGTERM', () => void relay.close().then(() => process.exit(0)));
