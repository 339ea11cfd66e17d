/**
 * A 2025-11-25 client on `/mcp` in front of a modern-only (2026-07-28) server: the server would
 * refuse the legacy version the client negotiated (-32022), so the caller's requests carry the
 * pool's modern version in `_meta`, and the caller's own client info and capabilities with it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURES, marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const mark = marker('legacy-to-modern');
let h: Harness;
let client: Client;
let base: string;

beforeAll(async () => {
  h = await harness({ mcpServers: { modern: { command: process.execPath, args: [`${FIXTURES}v2EraServer.mjs`, '--modern-only', mark], sharing: 'shared' } } }, { marks: [mark] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  ({ client } = await connectClient(`${base}/mcp`, h.token, {}, 'legacy-ide'));
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await h?.close();
});

describe('a legacy caller of a modern-only server', () => {
  it('lists and calls it; each request carries a modern version and the caller’s own client info', async () => {
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toContain('modern__echo');
    expect(textOf(await client.callTool({ name: 'modern__echo', arguments: { text: 'across eras' } }))).toBe('across eras');
    const { envelope } = JSON.parse(textOf(await client.callTool({ name: 'modern__meta', arguments: {} }))) as { envelope: Record<string, unknown> };
    expect(envelope).toMatchObject({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'legacy-ide' },
    });
  });

  it('answers the server’s input_required through the legacy session: its elicitation goes to the client, the answer back with the retry', async () => {
    const { client: asking } = await connectClient(`${base}/mcp`, h.token, { capabilities: { elicitation: {} } }, 'legacy-ide-elicits');
    try {
      const asked: unknown[] = [];
      asking.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        return { action: 'accept', content: { ok: true } };
      });
      const result = await asking.callTool({ name: 'modern__confirm', arguments: { item: 'cup' } });
      expect(asked).toEqual(['Confirm cup?']);
      expect(textOf(result)).toBe('confirmed cup: {"action":"accept","content":{"ok":true}}');
    } finally {
      await asking.close().catch(() => undefined);
    }
  });

  it('a client that takes server requests but not the one asked for gets a clear error naming it, not a hang', async () => {
    const { client: sampler } = await connectClient(`${base}/mcp`, h.token, { capabilities: { sampling: {} } }, 'legacy-ide-samples');
    try {
      const error = await sampler.callTool({ name: 'modern__confirm', arguments: { item: 'cup' } }).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(McpError);
      // The caller's capabilities travel in the request's _meta, so the server itself refuses to
      // ask: the spec's missing-capability error (-32021), naming the request it needed.
      expect((error as McpError).code).toBe(-32021);
      expect((error as McpError).message).toMatch(/elicitation\/create/);
      // The session stays usable.
      expect(textOf(await sampler.callTool({ name: 'modern__echo', arguments: { text: 'still here' } }))).toBe('still here');
    } finally {
      await sampler.close().catch(() => undefined);
    }
  });
});
