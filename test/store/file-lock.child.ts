// A second process for test/store/file-lock.test.ts: opens a FileDeliveryStore on argv[2], marks one
// delivery processed, prints "ready", then waits to be killed, or with argv[3] === 'exit' leaves at once
// without closing the store (the exit hook must still remove the lock).
import { FileDeliveryStore } from '../../src/index.js';

const store = new FileDeliveryStore({ file: process.argv[2]! });
if ((await store.claim(['d:from-child'], 60_000, 'child')) !== 'claimed') throw new Error('claim failed');
await store.complete(['d:from-child']);
process.stdout.write('ready\n');
if (process.argv[3] === 'exit') process.exit(0);
setInterval(() => undefined, 1_000);
