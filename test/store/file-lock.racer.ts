// One racer for test/store/file-lock.test.ts: waits until the shared start time argv[3], tries to take
// the lock on argv[2], prints "got" or "locked", and holds a won lock until killed, so a late starter
// cannot take it after.
import { FileLockedError } from '../../src/index.js';
import { FileLock } from '../../src/store/file-lock.js';

const at = Number(process.argv[3]);
while (Date.now() < at) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
try {
  const lock = FileLock.acquire(process.argv[2]!, 'store');
  process.stdout.write('got');
  setTimeout(() => lock.release(), 60_000);
} catch (error) {
  process.stdout.write(error instanceof FileLockedError ? 'locked' : `error: ${(error as Error).message}`);
}
