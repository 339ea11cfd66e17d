// Preloaded into the daemon by `test/bench/flood.mjs --mem`: every second, one line on stderr with
// the main thread's process.memoryUsage() (MB) and each worker thread's V8 heap, so a bench can see
// where RSS goes (V8 heap of the main thread vs external vs array buffers vs the actor threads).
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const mb = (n) => Math.round(n / 1048576);
  let n = 0;
  const timer = setInterval(() => {
    // With --expose-gc, every fifth sample follows a full collection: what is retained, not garbage.
    const collected = typeof globalThis.gc === 'function' && ++n % 5 === 0;
    if (collected) globalThis.gc();
    const m = process.memoryUsage();
    process.stderr.write(`MEMSAMPLE ${JSON.stringify({ t: Date.now(), rss: mb(m.rss), heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), ...(collected ? { afterGc: true } : {}) })}\n`);
  }, 1000);
  timer.unref();
}
