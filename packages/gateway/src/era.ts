/**
 * Which era one inbound HTTP POST belongs to, decided by its body first, with the 2026-07-28
 * revision's refusals (status, JSON-RPC code, message and `data` as the v2 SDK's own dual-era
 * entry words them, so a caller sees one wording whichever server it meets):
 *
 * - A batch is legacy; an empty one, one holding an element that claims the per-request
 *   envelope, or one holding an element that is not a JSON-RPC message is refused (-32600).
 * - A posted response (result or error) is legacy.
 * - A request: `initialize` without a valid modern envelope is the legacy handshake (refused
 *   with -32020 when a modern `MCP-Protocol-Version` header came with it). A request that claims
 *   the envelope (its `_meta` has the protocol-version key) is modern once the envelope is valid
 *   (else -32602 naming the first problem) and the version and `Mcp-Method` headers, when sent,
 *   agree with the body (else -32020). A modern version header without a claim is -32602 naming
 *   the missing keys. Anything else is legacy.
 * - A notification: a claim must name a version as a string (-32602); headers that disagree are
 *   -32020; a claim, or a modern version header, makes it modern; else legacy.
 * - Anything else is not a JSON-RPC message (-32600).
 *
 * The shapes are the SDK's JSON-RPC schemas, checked by hand: every request goes through here,
 * and a zod parse of the whole message (four of them for a request) cost more than routing the
 * call. The envelope's own problems are worded by zod inside the SDK (its client-capability and
 * client-info schemas), so a `clientInfo` + `clientCapabilities` pair is validated once through
 * the SDK's classifier and remembered; a caller sends the same pair with every request.
 */
import { ErrorCode, JsonRpcCode } from '@mcpool/protocol/errorCodes';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { classifyInboundRequest } from '@modelcontextprotocol/server';

/** HTTP request headers, names lower-case (as `node:http` gives them). */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The classifier's verdict; a refusal carries its HTTP status and the JSON-RPC error it answers with. */
export type EraOutcome =
  | { kind: 'legacy' }
  | { kind: 'modern' }
  | { kind: 'reject'; status: number; code: number; message: string; data?: Record<string, unknown> };

type Params = Record<string, unknown>;

const PROTOCOL_VERSION = MODERN_META.protocolVersion;
const CLIENT_CAPABILITIES = MODERN_META.clientCapabilities;
/** Keys a 2026-07-28 envelope must have, in the order their absence is reported. */
const REQUIRED_ENVELOPE_KEYS = [PROTOCOL_VERSION, CLIENT_CAPABILITIES] as const;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** Revision identifiers are ISO dates: this one and every later one are the modern era. */
const FIRST_MODERN_VERSION = '2026-07-28';
const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);
const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const NOTIFICATION_KEYS = new Set(['jsonrpc', 'method', 'params']);
const RESULT_KEYS = new Set(['jsonrpc', 'id', 'result']);
const ERROR_KEYS = new Set(['jsonrpc', 'id', 'error']);
/** Envelope pairs (`clientInfo`, `clientCapabilities`, as JSON) the SDK found valid; cleared when full. */
const VALID_PAIRS = new Set<string>();
const VALID_PAIRS_MAX = 256;

const isRecord = (value: unknown): value is Params => typeof value === 'object' && value !== null && !Array.isArray(value);
/** A JSON-RPC id, and a progress token: a string or an integer a double holds exactly. */
const isId = (value: unknown): boolean => typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
const isModern = (version: string): boolean => version >= FIRST_MODERN_VERSION;
const onlyKeys = (value: Params, allowed: ReadonlySet<string>): boolean => {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
};

/** A request header's value (the first, if repeated); optional whitespace (SP, HTAB) around it is not part of it. */
export function headerValue(headers: RequestHeaders, name: string): string | undefined {
  const raw = headers[name];
  const value = typeof raw === 'string' ? raw : Array.isArray(raw) ? raw[0] : undefined;
  if (value === undefined) return undefined;
  let start = 0;
  let end = value.length;
  while (start < end && (value[start] === ' ' || value[start] === '\t')) start += 1;
  while (end > start && (value[end - 1] === ' ' || value[end - 1] === '\t')) end -= 1;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** `params` of a request or notification: absent, or an object whose `_meta` (if any) is well-formed. */
function paramsWellFormed(params: unknown): boolean {
  if (params === undefined) return true;
  if (!isRecord(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isRecord(meta)) return false;
  if (meta.progressToken !== undefined && !isId(meta.progressToken)) return false;
  const related = meta[RELATED_TASK];
  return related === undefined || (isRecord(related) && typeof related.taskId === 'string');
}

const isRequest = (body: Params): boolean => onlyKeys(body, REQUEST_KEYS) && body.jsonrpc === '2.0' && isId(body.id) && typeof body.method === 'string' && paramsWellFormed(body.params);
const isNotification = (body: Params): boolean => onlyKeys(body, NOTIFICATION_KEYS) && body.jsonrpc === '2.0' && typeof body.method === 'string' && paramsWellFormed(body.params);
const isResponse = (body: Params): boolean => {
  if (body.jsonrpc !== '2.0') return false;
  if ('result' in body) return onlyKeys(body, RESULT_KEYS) && isId(body.id) && isRecord(body.result) && (body.result._meta === undefined || isRecord(body.result._meta));
  const error = body.error;
  return onlyKeys(body, ERROR_KEYS) && (body.id === undefined || isId(body.id)) && isRecord(error) && typeof error.message === 'string' && typeof error.code === 'number' && Number.isSafeInteger(error.code);
};
const isMessage = (value: unknown): boolean => isRecord(value) && (isRequest(value) || isNotification(value) || isResponse(value));

const metaOf = (params: unknown): Params | undefined => (isRecord(params) && isRecord(params._meta) ? params._meta : undefined);
const claims = (params: unknown): boolean => {
  const meta = metaOf(params);
  return meta !== undefined && PROTOCOL_VERSION in meta;
};

const invalidRequest = (message: string): EraOutcome => ({ kind: 'reject', status: 400, code: JsonRpcCode.INVALID_REQUEST, message });
const mismatch = (header: string, body: string): EraOutcome => ({
  kind: 'reject',
  status: 400,
  code: JsonRpcCode.HEADER_MISMATCH,
  message: `Bad Request: the request headers and body disagree: ${body}`,
  data: { mismatch: { header, body } },
});
const envelopeRefusal = (issue: { key: string; problem: string }): EraOutcome => ({
  kind: 'reject',
  status: 400,
  code: JsonRpcCode.INVALID_PARAMS,
  message: `Invalid _meta envelope for protocol revision 2026-07-28: ${issue.key}: ${issue.problem}`,
  data: { envelope: issue },
});

/**
 * The SDK's verdict on a bare message carrying `meta`: the exact wording of an envelope problem
 * (zod's), or undefined when it has none.
 */
function sdkEnvelopeIssue(meta: Params, asNotification: boolean): { key: string; problem: string } | undefined {
  const probe = asNotification ? { jsonrpc: '2.0', method: 'notifications/probe', params: { _meta: meta } } : { jsonrpc: '2.0', id: 0, method: 'probe', params: { _meta: meta } };
  const outcome = classifyInboundRequest({ httpMethod: 'POST', body: probe });
  if (outcome.kind !== 'reject') return undefined;
  const issue = (outcome.data as { envelope?: { key: string; problem: string } } | undefined)?.envelope;
  return issue ?? { key: '_meta', problem: outcome.message };
}

/** The first problem of a request's envelope (a missing key first), or undefined when it is valid. */
function envelopeIssue(meta: Params): { key: string; problem: string } | undefined {
  for (const key of REQUIRED_ENVELOPE_KEYS) if (!(key in meta)) return { key, problem: 'missing' };
  const logLevel = meta[MODERN_META.logLevel];
  // The message's own shape already held the progress token to a string or an integer.
  if (typeof meta[PROTOCOL_VERSION] === 'string' && (logLevel === undefined || (typeof logLevel === 'string' && LOG_LEVELS.has(logLevel)))) {
    // An absent `clientInfo` leaves the key out of the JSON; a `null` one (invalid) keeps it.
    const pair = JSON.stringify({ info: meta[MODERN_META.clientInfo], capabilities: meta[CLIENT_CAPABILITIES] });
    if (VALID_PAIRS.has(pair)) return undefined;
    const issue = sdkEnvelopeIssue(meta, false);
    if (issue === undefined) {
      if (VALID_PAIRS.size >= VALID_PAIRS_MAX) VALID_PAIRS.clear();
      VALID_PAIRS.add(pair);
    }
    return issue;
  }
  return sdkEnvelopeIssue(meta, false);
}

function classifyRequest(body: Params, version: string | undefined, method: string | undefined): EraOutcome {
  const params = body.params;
  const meta = metaOf(params);
  const bodyMethod = body.method as string;
  const versionIsModern = version !== undefined && isModern(version);
  if (bodyMethod === 'initialize') {
    const claimed = meta?.[PROTOCOL_VERSION];
    // Only a valid modern envelope makes `initialize` a modern request (which then has no such method).
    const modernClaim = meta !== undefined && typeof claimed === 'string' && isModern(claimed) && envelopeIssue(meta) === undefined;
    if (!modernClaim) {
      if (versionIsModern) return mismatch(version, 'an initialize request (legacy handshake) was sent with a modern MCP-Protocol-Version header');
      return { kind: 'legacy' };
    }
  }
  if (meta !== undefined && PROTOCOL_VERSION in meta) {
    const issue = envelopeIssue(meta);
    if (issue !== undefined) return envelopeRefusal(issue);
    const claimed = meta[PROTOCOL_VERSION] as string;
    if (version !== undefined && version !== claimed) return mismatch(version, `the body envelope names protocol version ${claimed} but the MCP-Protocol-Version header names ${version}`);
    if (method !== undefined && method !== bodyMethod) return mismatch(method, `the body names method ${bodyMethod} but the Mcp-Method header names ${method}`);
    return { kind: 'modern' };
  }
  if (versionIsModern) {
    const missing = meta === undefined ? ['_meta'] : REQUIRED_ENVELOPE_KEYS.filter((key) => !(key in meta));
    return {
      kind: 'reject',
      status: 400,
      code: JsonRpcCode.INVALID_PARAMS,
      message: `Invalid params: the MCP-Protocol-Version header names protocol revision ${version}, but the request is missing the required per-request envelope key(s): ${missing.join(', ')}`,
      data: { envelope: { missing } },
    };
  }
  return { kind: 'legacy' };
}

function classifyNotification(body: Params, version: string | undefined, method: string | undefined): EraOutcome {
  const meta = metaOf(body.params);
  const bodyMethod = body.method as string;
  const methodDisagrees = method !== undefined && method !== bodyMethod;
  const methodMismatch = (): EraOutcome => mismatch(method!, `the notification body names method ${bodyMethod} but the Mcp-Method header names ${method}`);
  if (meta !== undefined && PROTOCOL_VERSION in meta) {
    const claimed = meta[PROTOCOL_VERSION];
    if (typeof claimed !== 'string') return envelopeRefusal(sdkEnvelopeIssue(meta, true) ?? { key: PROTOCOL_VERSION, problem: 'expected a protocol version string' });
    if (version !== undefined && version !== claimed) return mismatch(version, `the notification envelope names protocol version ${claimed} but the MCP-Protocol-Version header names ${version}`);
    if (isModern(claimed) && methodDisagrees) return methodMismatch();
    return { kind: 'modern' };
  }
  if (version !== undefined && isModern(version)) return methodDisagrees ? methodMismatch() : { kind: 'modern' };
  return { kind: 'legacy' };
}

/** Classifies one inbound HTTP request by era (see the module's rules); never throws. */
export function classifyInbound(httpMethod: string, headers: RequestHeaders, body: unknown): EraOutcome {
  if (httpMethod.toUpperCase() !== 'POST') return { kind: 'legacy' };
  if (Array.isArray(body)) {
    if (body.length === 0) return invalidRequest('Bad Request: empty JSON-RPC batch');
    for (const element of body) {
      if (claims(isRecord(element) ? element.params : undefined)) return invalidRequest('Bad Request: JSON-RPC batches may not contain requests for protocol revision 2026-07-28 or later');
      if (!isMessage(element)) return invalidRequest('Bad Request: JSON-RPC batch contains an invalid message');
    }
    return { kind: 'legacy' };
  }
  if (!isRecord(body)) return invalidRequest('Bad Request: the request body is not a valid JSON-RPC message');
  if (isResponse(body)) return { kind: 'legacy' };
  const version = headerValue(headers, 'mcp-protocol-version');
  const method = headerValue(headers, 'mcp-method');
  if (isRequest(body)) return classifyRequest(body, version, method);
  if (isNotification(body)) return classifyNotification(body, version, method);
  return invalidRequest('Bad Request: the request body is not a valid JSON-RPC message');
}

/** How a message is classified by era before routing (what the host does with each). */
export type EraVerdict = { era: 'legacy' } | { era: 'modern' } | { era: 'reject'; status: number; body: Record<string, unknown> };

/**
 * Legacy or modern, by the body first (`initialize` → legacy; a valid `_meta` envelope → modern;
 * a modern `MCP-Protocol-Version` header without the envelope, or an envelope whose version
 * disagrees with the header → a refusal with the status and JSON-RPC error the revision names,
 * `data.code` the pool's code for it).
 */
export function classifyEra(httpMethod: string, headers: RequestHeaders, body: unknown): EraVerdict {
  const outcome = classifyInbound(httpMethod, headers, body);
  if (outcome.kind === 'legacy') return { era: 'legacy' };
  if (outcome.kind === 'modern') return { era: 'modern' };
  const code = outcome.code === JsonRpcCode.HEADER_MISMATCH ? ErrorCode.HEADER_MISMATCH : outcome.code === JsonRpcCode.INVALID_PARAMS ? ErrorCode.INVALID_ARGUMENT : ErrorCode.BAD_REQUEST;
  const id = isRecord(body) && (typeof body.id === 'string' || typeof body.id === 'number') ? body.id : null;
  return { era: 'reject', status: outcome.status, body: { jsonrpc: '2.0', id, error: { code: outcome.code, message: outcome.message, data: { code, ...outcome.data } } } };
}
