// Preloaded into every peer the bench starts (`node --import=<this file> <peer bin> …`): forces
// every TCP listen of the process onto 127.0.0.1. Some peers call `listen(port)` with no host,
// which binds every interface (`::`), and offer no option to change it (mcp-hub 4.2.1,
// supergateway 4.0.0; see shared/reference/peers-baseline.md). This runs before any of the
// peer's code, so no socket is ever bound elsewhere, even for a moment:
// - `listen(port)`, `listen(port, cb)`, `listen()`, `listen({ port })` → host 127.0.0.1;
// - an explicit loopback host (127.x, ::1, localhost) is kept;
// - any other explicit host (`::`, `0.0.0.0`, an interface address) throws instead of listening;
// - Unix sockets and named pipes (`listen(path)`, `listen({ path })`) and handles are left alone.
// The bench also checks the listening sockets of its process tree with `ss` while peers run.
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const isLoopback = (host) => host === 'localhost' || host === '::1' || /^127\./.test(host) || host === '::ffff:127.0.0.1';

function guard(host) {
  if (host === undefined || host === null || host === '') return LOOPBACK;
  if (isLoopback(String(host))) return host;
  throw new Error(`mcpool bench loopback guard: refusing to listen on ${host} (only loopback is allowed)`);
}

const original = net.Server.prototype.listen;
net.Server.prototype.listen = function listen(...args) {
  const [first] = args;
  // listen() / listen(cb): a random port on every interface → a random port on loopback.
  if (first === undefined || typeof first === 'function') return original.call(this, { port: 0, host: LOOPBACK }, ...args.filter((a) => typeof a === 'function'));
  if (typeof first === 'object' && first !== null) {
    // listen(handle) (`_handle` or `fd`) and listen({ path }) are not TCP on an interface.
    if ('_handle' in first || 'fd' in first || first.path !== undefined) return original.apply(this, args);
    return original.call(this, { ...first, host: guard(first.host) }, ...args.slice(1));
  }
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  if (!isPort) return original.apply(this, args); // listen(path): a Unix socket or pipe
  // listen(port, [host], [backlog], [cb])
  if (typeof args[1] === 'string') return original.call(this, first, guard(args[1]), ...args.slice(2));
  return original.call(this, first, LOOPBACK, ...args.slice(1));
};
