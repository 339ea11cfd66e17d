/**
 * The era classifier, one case per class and per refusal: each verdict is stated here and is
 * also the v2 SDK's own (`classifyInboundRequest`, what the SDK's dual-era entry answers), to the
 * status, JSON-RPC code, message and data, so the hand-written rules cannot drift from its wording.
 */
import { describe, expect, it } from 'vitest';
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { classifyEra, type EraVerdict } from '@mcpool/gateway';

const V = '2026-07-28';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/clientInfo';
const LEVEL = 'io.modelcontextprotocol/logLevel';
const envelope = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ [PV]: V, [CAPS]: {}, [INFO]: { name: 'era-test', version: '1.0.0' }, ...extra });
const request = (method: string, meta?: Record<string, unknown>, id: unknown = 1): Record<string, unknown> => ({ jsonrpc: '2.0', id, method, ...(meta === undefined ? {} : { params: { _meta: meta } }) });
const notification = (method: string, meta?: Record<string, unknown>): Record<string, unknown> => ({ jsonrpc: '2.0', method, ...(meta === undefined ? {} : { params: { _meta: meta } }) });
const modernHeaders = (method: string): Record<string, string> => ({ 'mcp-protocol-version': V, 'mcp-method': method });

/** Ours and the SDK's verdict on one request, in one comparable shape. */
function both(body: unknown, headers: Record<string, string> = {}, httpMethod = 'POST'): { ours: unknown; sdk: unknown } {
  const verdict: EraVerdict = classifyEra(httpMethod, headers, body);
  const ours =
    verdict.era === 'reject'
      ? (() => {
          const { code, message, data } = verdict.body.error as { code: number; message: string; data: Record<string, unknown> };
          const { code: _typed, ...rest } = data;
          return { kind: 'reject', status: verdict.status, code, message, ...(Object.keys(rest).length > 0 ? { data: rest } : {}) };
        })()
      : { kind: verdict.era };
  const outcome = classifyInboundRequest({
    httpMethod,
    body,
    ...(headers['mcp-protocol-version'] === undefined ? {} : { protocolVersionHeader: headers['mcp-protocol-version'] }),
    ...(headers['mcp-method'] === undefined ? {} : { mcpMethodHeader: headers['mcp-method'] }),
  });
  const sdk = outcome.kind === 'reject' ? { kind: 'reject', status: outcome.httpStatus, code: outcome.code, message: outcome.message, ...(outcome.data === undefined ? {} : { data: outcome.data }) } : { kind: outcome.kind };
  return { ours, sdk };
}

function expectVerdict(body: unknown, headers: Record<string, string>, expected: Record<string, unknown>, httpMethod = 'POST'): void {
  const { ours, sdk } = both(body, headers, httpMethod);
  expect(ours).toMatchObject(expected);
  expect(ours).toEqual(sdk);
}

describe('era classes', () => {
  it('legacy: a GET, a batch, posted responses, initialize, requests and notifications that claim nothing', () => {
    expectVerdict(undefined, {}, { kind: 'legacy' }, 'GET');
    expectVerdict([request('tools/list'), notification('notifications/initialized'), { jsonrpc: '2.0', id: 3, result: {} }], {}, { kind: 'legacy' });
    expectVerdict({ jsonrpc: '2.0', id: 4, result: { _meta: { x: 1 } } }, {}, { kind: 'legacy' });
    expectVerdict({ jsonrpc: '2.0', error: { code: -32600, message: 'no id' } }, {}, { kind: 'legacy' });
    expectVerdict({ jsonrpc: '2.0', id: 'a', error: { code: 1, message: 'x', data: [1] } }, {}, { kind: 'legacy' });
    expectVerdict({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, {}, { kind: 'legacy' });
    expectVerdict(request('tools/list'), {}, { kind: 'legacy' });
    expectVerdict(request('tools/list', { progressToken: 'p' }), { 'mcp-protocol-version': '2025-11-25' }, { kind: 'legacy' });
    expectVerdict(notification('notifications/initialized'), {}, { kind: 'legacy' });
  });

  it('modern: a request with a valid envelope (headers or not), a notification that claims or has a modern header, initialize with an envelope', () => {
    expectVerdict(request('tools/list', envelope()), modernHeaders('tools/list'), { kind: 'modern' });
    expectVerdict(request('tools/call', envelope({ progressToken: 7, [LEVEL]: 'debug', 'io.modelcontextprotocol/related-task': { taskId: 't' } }), 'id-1'), {}, { kind: 'modern' });
    expectVerdict(request('tools/list', envelope({ [CAPS]: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true }, extensions: { x: {} } } })), modernHeaders('tools/list'), { kind: 'modern' });
    expectVerdict(request('tools/list', { [PV]: V, [CAPS]: {} }), { 'mcp-protocol-version': ` ${V}\t` }, { kind: 'modern' });
    expectVerdict(notification('notifications/cancelled', { [PV]: V }), { 'mcp-method': 'notifications/cancelled' }, { kind: 'modern' });
    expectVerdict(notification('notifications/cancelled', { [PV]: '2025-11-25' }), { 'mcp-method': 'other' }, { kind: 'modern' });
    expectVerdict(notification('notifications/cancelled'), modernHeaders('notifications/cancelled'), { kind: 'modern' });
    expectVerdict(request('initialize', envelope()), modernHeaders('initialize'), { kind: 'modern' });
  });
});

describe('era refusals', () => {
  it('batches: empty, with an element that claims the envelope, with an invalid element (-32600)', () => {
    expectVerdict([], {}, { kind: 'reject', status: 400, code: -32600, message: 'Bad Request: empty JSON-RPC batch' });
    expectVerdict([request('tools/list'), request('tools/list', envelope())], {}, { kind: 'reject', status: 400, code: -32600, message: 'Bad Request: JSON-RPC batches may not contain requests for protocol revision 2026-07-28 or later' });
    expectVerdict([request('tools/list'), { jsonrpc: '2.0', id: 1 }], {}, { kind: 'reject', status: 400, code: -32600, message: 'Bad Request: JSON-RPC batch contains an invalid message' });
  });

  it('a body that is no JSON-RPC message (-32600)', () => {
    const invalid = { kind: 'reject', status: 400, code: -32600, message: 'Bad Request: the request body is not a valid JSON-RPC message' };
    for (const body of [
      'text',
      null,
      42,
      { jsonrpc: '1.0', id: 1, method: 'x' },
      { jsonrpc: '2.0', id: 1, method: 'x', extra: true },
      { jsonrpc: '2.0', id: 1.5, method: 'x' },
      { jsonrpc: '2.0', id: 2 ** 53, method: 'x' },
      { jsonrpc: '2.0', id: null, method: 'x' },
      { jsonrpc: '2.0', id: 1, method: 7 },
      { jsonrpc: '2.0', id: 1, method: 'x', params: [] },
      { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: [] } },
      request('x', { progressToken: 1.5 }),
      request('x', { 'io.modelcontextprotocol/related-task': { taskId: 1 } }),
      { jsonrpc: '2.0', id: null, error: { code: 1, message: 'x' } },
      { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } },
      { jsonrpc: '2.0', id: 1, result: [] },
      { jsonrpc: '2.0', id: 1, result: { _meta: 'x' } },
      { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } },
    ]) {
      expectVerdict(body, {}, invalid);
    }
  });

  it('initialize with a modern version header (-32020)', () => {
    expectVerdict(request('initialize'), { 'mcp-protocol-version': V }, {
      kind: 'reject',
      status: 400,
      code: -32020,
      message: 'Bad Request: the request headers and body disagree: an initialize request (legacy handshake) was sent with a modern MCP-Protocol-Version header',
      data: { mismatch: { header: V } },
    });
  });

  it('an invalid envelope names its first problem (-32602)', () => {
    const refused = { kind: 'reject', status: 400, code: -32602 };
    expectVerdict(request('tools/list', { [PV]: V }), {}, { ...refused, message: `Invalid _meta envelope for protocol revision 2026-07-28: ${CAPS}: missing`, data: { envelope: { key: CAPS, problem: 'missing' } } });
    expectVerdict(request('tools/list', envelope({ [PV]: 20260728 })), {}, { ...refused, message: `Invalid _meta envelope for protocol revision 2026-07-28: ${PV}: Invalid input: expected string, received number` });
    expectVerdict(request('tools/list', envelope({ [LEVEL]: 'loud' })), {}, refused);
    expectVerdict(request('tools/list', envelope({ [INFO]: { name: 'no-version' } })), {}, refused);
    expectVerdict(request('tools/list', envelope({ [INFO]: null })), {}, refused);
    expectVerdict(request('tools/list', envelope({ [CAPS]: 'all' })), {}, refused);
    expectVerdict(request('tools/list', envelope({ [CAPS]: { roots: { listChanged: 'yes' } } })), {}, refused);
  });

  it('a valid envelope remembered does not make a later invalid one pass', () => {
    expectVerdict(request('tools/list', { [PV]: V, [CAPS]: {} }), {}, { kind: 'modern' });
    expectVerdict(request('tools/list', { [PV]: V, [CAPS]: {}, [INFO]: null }), {}, { kind: 'reject', code: -32602 });
    expectVerdict(request('tools/list', { [PV]: V, [CAPS]: {}, [LEVEL]: 'loud' }), {}, { kind: 'reject', code: -32602 });
    expectVerdict(request('tools/list', { [PV]: 1, [CAPS]: {} }), {}, { kind: 'reject', code: -32602 });
  });

  it('headers that disagree with the body (-32020)', () => {
    expectVerdict(request('tools/list', envelope()), { 'mcp-protocol-version': '2026-09-01' }, {
      kind: 'reject',
      status: 400,
      code: -32020,
      message: 'Bad Request: the request headers and body disagree: the body envelope names protocol version 2026-07-28 but the MCP-Protocol-Version header names 2026-09-01',
      data: { mismatch: { header: '2026-09-01' } },
    });
    expectVerdict(request('tools/list', envelope()), modernHeaders('tools/call'), { kind: 'reject', status: 400, code: -32020, message: 'Bad Request: the request headers and body disagree: the body names method tools/list but the Mcp-Method header names tools/call' });
  });

  it('a modern version header on a request without the envelope names the missing keys (-32602)', () => {
    const message = (missing: string): string => `Invalid params: the MCP-Protocol-Version header names protocol revision ${V}, but the request is missing the required per-request envelope key(s): ${missing}`;
    expectVerdict(request('tools/list'), { 'mcp-protocol-version': V }, { kind: 'reject', status: 400, code: -32602, message: message('_meta'), data: { envelope: { missing: ['_meta'] } } });
    expectVerdict(request('tools/list', {}), { 'mcp-protocol-version': V }, { kind: 'reject', code: -32602, message: message(`${PV}, ${CAPS}`) });
    expectVerdict(request('tools/list', { [CAPS]: {} }), { 'mcp-protocol-version': V }, { kind: 'reject', code: -32602, message: message(PV) });
  });

  it('notifications: a claim that is no string (-32602), headers that disagree (-32020)', () => {
    expectVerdict(notification('notifications/cancelled', { [PV]: null }), {}, { kind: 'reject', status: 400, code: -32602, message: `Invalid _meta envelope for protocol revision 2026-07-28: ${PV}: Invalid input: expected string, received null` });
    expectVerdict(notification('notifications/cancelled', { [PV]: V }), { 'mcp-protocol-version': '2026-09-01' }, { kind: 'reject', status: 400, code: -32020, message: 'Bad Request: the request headers and body disagree: the notification envelope names protocol version 2026-07-28 but the MCP-Protocol-Version header names 2026-09-01' });
    expectVerdict(notification('notifications/cancelled', { [PV]: V }), { 'mcp-method': 'notifications/progress' }, { kind: 'reject', code: -32020, message: 'Bad Request: the request headers and body disagree: the notification body names method notifications/cancelled but the Mcp-Method header names notifications/progress' });
    expectVerdict(notification('notifications/cancelled'), modernHeaders('notifications/progress'), { kind: 'reject', code: -32020 });
  });

  it('a refusal answers with the request id and the typed code', () => {
    const verdict = classifyEra('POST', { 'mcp-protocol-version': V }, request('tools/list', undefined, 'r-9'));
    expect(verdict).toMatchObject({ era: 'reject', status: 400, body: { jsonrpc: '2.0', id: 'r-9', error: { code: -32602, data: { code: 'MCPOOL_INVALID_ARGUMENT' } } } });
    expect(classifyEra('POST', {}, [])).toMatchObject({ era: 'reject', body: { id: null, error: { data: { code: 'MCPOOL_BAD_REQUEST' } } } });
    expect(classifyEra('POST', { 'mcp-protocol-version': '2026-09-01' }, request('tools/list', envelope()))).toMatchObject({ body: { error: { data: { code: 'MCPOOL_HEADER_MISMATCH' } } } });
  });
});
