#!/usr/bin/env node
// The floor of forwarding a request to another process on this machine: a Node process that does
// nothing but relay each request (method, path, headers, body streamed) to one target over a
// keep-alive agent and stream the answer back — no parsing, no seal to open, no auth. A replica
// that forwards a legacy call to its owner does this and more, so the ratio this hop costs
// against the call landing on the owner is what no forwarder on this machine can beat.
// `node bareForwarder.mjs <target base URL> <marker>`; binds 127.0.0.1 on a free port and prints
// `LISTENING <port>` once it does.
import http from 'node:http';

const target = new URL(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const endToEnd = (headers) => Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

const server = http.createServer((req, res) => {
  const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...endToEnd(req.headers), host: target.host }, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  // A client that went away ends the relay; a finished one leaves the socket to the agent.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
process.once('SIGTERM', () => {
  agent.destroy();
  server.close();
  server.closeAllConnections();
});
