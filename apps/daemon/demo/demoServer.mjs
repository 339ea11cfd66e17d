#!/usr/bin/env node
// The demo MCP server bundled with mcpool: what `mcpool serve` runs when no config exists, so the
// daemon works out of the box. Stdio, three tools, one prompt, one resource. Exits when stdin ends.
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

const server = new McpServer({ name: 'mcpool-demo', version: '1.0.0' });

server.registerTool(
  'hello',
  { description: 'Says hello to `name`.', inputSchema: { name: z.string().default('world') } },
  ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}! (from the mcpool demo server, pid ${process.pid})` }] }),
);

server.registerTool(
  'add',
  { description: 'Returns a + b.', inputSchema: { a: z.number(), b: z.number() } },
  ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
);

server.registerTool('time', { description: 'The server’s current time (ISO 8601).', inputSchema: {} }, () => ({
  content: [{ type: 'text', text: new Date().toISOString() }],
}));

server.registerPrompt(
  'explain-pooling',
  { description: 'Asks the model to explain MCP connection pooling.', argsSchema: {} },
  () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'Explain in three sentences why several agent sessions should share one MCP server process.' } }] }),
);

server.registerResource('about', 'demo://about', { description: 'About this server', mimeType: 'text/plain' }, (uri) => ({
  contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'The mcpool demo server: replace it with your own servers in .mcp.json.' }],
}));

process.stdin.on('end', () => process.exit(0));
await server.connect(new StdioServerTransport());
