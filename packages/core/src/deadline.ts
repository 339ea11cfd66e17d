/**
 * One way to bound a wait: `promise`'s value, or `'timeout'` once `ms` passed first. The timer is
 * cleared either way; `unref` lets a host exit meanwhile (for waits nobody needs the answer of).
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, options: { unref?: boolean } = {}): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
    if (options.unref === true) timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
