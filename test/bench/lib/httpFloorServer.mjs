#!/usr/bin/env node
// Part 2's reference: the SDK's own Streamable HTTP server on plain node:http, answering
// `echo` in-process (no upstream, no pool, no auth). Measured with the same client as the
// gateways, it is the floor of any gateway built on the SDK's HTTP transport on this machine:
// what the HTTP hop and the client cost before anything is forwarded anywhere.
// `node httpFloorServer.mjs <port> <marker>`; binds 127.0.0.1 only.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2]);
const sessions = new Map();

function newSession() {
  const server = new Server({ name: 'mcpool-bench-http-floor', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{ name: 'echo', description: 'Echoes back the input', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => ({ content: [{ type: 'text', text: `Echo: ${request.params.arguments?.message}` }] }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  return { server, transport };
}

http
  .createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? sessions.get(id) : undefined;
      if (transport === undefined) {
        if (typeof id === 'string') {
          res.writeHead(404).end();
          return;
        }
        const session = newSession();
        await session.server.connect(session.transport);
        transport = session.transport;
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error?.message ?? error));
    }
  })
  .listen(port, '127.0.0.1');
