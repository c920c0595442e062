/**
 * Waits for `promise`, or fails after `ms` real milliseconds with an error saying what did not happen.
 * The bound only turns a hang into a clear failure: a test that passes never waits it out.
 * @example
 * await within(arrived, 5_000, 'the webhook to arrive once writes work again');
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Waited ${ms} ms for ${what}; it did not happen.`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
