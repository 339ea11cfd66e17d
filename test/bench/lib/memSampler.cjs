// Preloaded into the daemon by `test/bench/flood.mjs --mem`: every second, one line on stderr with
// the main thread's process.memoryUsage() (MB) and its event-loop delay over that second, so a
// bench can see where RSS goes (V8 heap vs external vs array buffers; the rest is the actor threads)
// and whether the main thread is what delays calls.
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const mb = (n) => Math.round(n / 1048576);
  // The daemon's own event-loop delay since the last sample: whether its main thread is what delays calls.
  const loop = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let n = 0;
  const timer = setInterval(() => {
    // With --expose-gc, every fifth sample follows a full collection: what is retained, not garbage.
    const collected = typeof globalThis.gc === 'function' && ++n % 5 === 0;
    if (collected) globalThis.gc();
    const m = process.memoryUsage();
    const line = `MEMSAMPLE ${JSON.stringify({ t: Date.now(), rss: mb(m.rss), heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), loopP99: +(loop.percentile(99) / 1e6).toFixed(1), loopMax: +(loop.max / 1e6).toFixed(1), ...(collected ? { afterGc: true } : {}) })}\n`;
    loop.reset();
    process.stderr.write(line);
  }, 1000);
  timer.unref();
  // Each stall of the loop past 100 ms, with when it ended (wall clock): lined up against slow calls.
  let last = Date.now();
  const watch = setInterval(() => {
    const now = Date.now();
    if (now - last > 110) process.stderr.write(`LOOPSTALL ${JSON.stringify({ end: now, ms: now - last - 10 })}\n`);
    last = now;
  }, 10);
  watch.unref();
}
