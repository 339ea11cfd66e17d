#!/usr/bin/env node
// The "client under test" of the conformance suite's client scenarios
// (`conformance client --command "node test/conformance/client.mjs"`, see runNext.mjs). The suite
// starts a test MCP server per scenario and runs this with its URL as the last argument (and the
// scenario's name in $MCP_CONFORMANCE_SCENARIO). In mcpool the MCP client of an upstream server is
// the daemon, so this:
//   1. starts the real daemon (daemon.mjs) whose only server is that URL (Streamable HTTP);
//   2. connects an SDK client through `mcpool bridge --url <daemon>/mcp/upstream` (stdio), the
//      way a stdio-only MCP client uses the pool;
//   3. does what a user would: lists the tools and calls each one with arguments built from its
//      input schema — or, when the scenario names the calls to make ($MCP_CONFORMANCE_CONTEXT
//      `toolCalls`: name and arguments), exactly those — answering elicitation (with the
//      schema's defaults), sampling and roots requests the upstream sends during a call;
//   4. closes the bridge and stops the daemon (SIGTERM).
// The suite then judges what reached its test server. Exit code: 0 when the steps ran, 1 when the
// daemon or the bridge failed, or an authorization the driver ran did not complete (the suite
// records it; the scenario's checks decide).
//
// The `auth/*` scenarios test the daemon's OAuth client (apps/daemon/src/oauth). The driver is its
// user: it configures what an operator would (the pre-registered client id and secret a scenario
// hands out, as the server's `oauth` block; mcpool's client ID metadata document URL as
// `daemon.oauthClientMetadataUrl`), runs `mcpool auth upstream` when `mcpool status` or a call's
// MCPOOL_AUTH_REQUIRED says to, and approves in the "browser" (user.mjs: the suite's authorization
// server approves at once, so following its redirect reaches the daemon's loopback callback).
// Everything OAuth — discovery, registration, PKCE, the token, step-up, refusals — is the daemon's.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN, startDaemon } from './daemon.mjs';
import { authorizeAsUser } from './user.mjs';

const CALL_TIMEOUT_MS = 20_000;
/** How many times the driver, as a user, runs `mcpool auth` before giving up. */
const MAX_AUTHORIZATIONS = 5;
// mcpool's client ID metadata document, as its operator would configure it
// (`daemon.oauthClientMetadataUrl`). The suite's authorization server takes this one URL without
// fetching it (it is not on the network), so it is the one every scenario is given.
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';
const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '(no scenario)';

const started = performance.now();
function log(line) {
  process.stderr.write(`[conformance client ${scenario} +${Math.round(performance.now() - started)} ms] ${line}\n`);
}

/** An argument value for a JSON Schema: its default or first enum value, else a plain value of its type. */
function sample(schema, index) {
  if (!schema || typeof schema !== 'object') return 'test';
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'number':
    case 'integer':
      return index + 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return argumentsFor(schema);
    default:
      return 'test';
  }
}

/** Arguments for a tool's input schema: every property (required or not) gets a sample value. */
function argumentsFor(schema) {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([name, prop], i) => [name, sample(prop, i)]));
}


let daemon;
let client;
let exitCode = 0;
let authorizations = 0;

/**
 * Runs `operation` the way a user would: when it fails for authorization (a message saying to run
 * `mcpool auth <server>`, or on `/mcp` an `MCPOOL_AUTH_REQUIRED` error naming the server), run
 * `mcpool auth <server>` (approving in the "browser", user.mjs) and try again. A patient user,
 * but not an endless one: at most MAX_AUTHORIZATIONS in all. How often the daemon asks is what the scenarios judge.
 */
async function asUser(operation) {
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      const asked = /run `mcpool auth ([^`\s]+)`/.exec(error.message) ?? (error.data?.code === 'MCPOOL_AUTH_REQUIRED' ? /: (\S+) (?:needs more|requires) authorization/.exec(error.message) : null);
      if (asked === null || authorizations >= MAX_AUTHORIZATIONS) throw error;
      log(`user: told "${error.message.slice(0, 160)}"`);
      // The daemon refused to complete it (it said why): a user stops here.
      if (!(await authorize(asked[1]))) {
        exitCode = 1;
        throw new Error(`mcpool auth ${asked[1]} did not authorize it`);
      }
    }
  }
}

/** `mcpool auth <server>`, approved in the "browser"; true when the daemon then holds a token. */
async function authorize(server) {
  authorizations += 1;
  log(`user: running mcpool auth ${server} (${authorizations})`);
  const { ok } = await authorizeAsUser({ base: daemon.base, stateDir: `${daemon.dir}/state`, server, log });
  return ok;
}

/**
 * What `mcpool status` tells a user first: the servers waiting for authorization (read from the
 * REST API with the operator token in the state directory, as the CLI does, without starting one).
 */
async function waitingForAuthorization() {
  const token = readFileSync(`${daemon.dir}/state/token`, 'utf8').trim();
  const response = await fetch(`${daemon.base}/workspace/mcp`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  const { servers } = await response.json();
  return servers.filter((server) => server.errorKind === 'auth_required').map((server) => server.name);
}

/** An SDK client connected through `mcpool bridge`, answering elicitation, sampling and roots. */
async function connectBridge() {
  const next = new Client({ name: 'mcpool-conformance-client', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } } });
  next.setRequestHandler(ElicitRequestSchema, (request) => ({
    action: 'accept',
    content: argumentsFor(request.params.requestedSchema),
  }));
  next.setRequestHandler(CreateMessageRequestSchema, () => ({
    role: 'assistant',
    content: { type: 'text', text: 'a sampled answer' },
    model: 'conformance-client',
    stopReason: 'endTurn',
  }));
  next.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///tmp/conformance-root', name: 'root' }] }));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'bridge', '--url', `${daemon.base}/mcp/upstream`],
    env: { ...process.env, MCPOOL_STATE_DIR: `${daemon.dir}/state`, MCPOOL_TOKEN: '' },
    stderr: 'inherit',
  });
  try {
    await next.connect(transport);
    return next;
  } catch (error) {
    await next.close().catch(() => {});
    throw error;
  }
}

try {
  if (!/^https?:\/\//.test(url ?? '')) throw new Error(`expected the test server's URL as the last argument, got ${url}`);
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
  // Pre-registered client credentials, when the scenario hands some out: the user puts them in
  // the server's config, as the README says.
  const oauth = typeof context.client_id === 'string' ? { clientId: context.client_id, ...(typeof context.client_secret === 'string' ? { clientSecret: context.client_secret } : {}) } : undefined;
  daemon = await startDaemon({
    mcpServers: { upstream: { url, ...(oauth ? { oauth } : {}) } },
    settings: { oauthClientMetadataUrl: CLIENT_METADATA_URL },
    allowFailed: true,
    stderr: process.stderr,
  });
  log(`daemon pid ${daemon.pid} at ${daemon.base}, upstream ${url}`);

  // A user whose `mcpool auth` failed (it said why) stops there.
  for (const server of await waitingForAuthorization()) if (!(await authorize(server))) throw new Error(`mcpool auth ${server} did not authorize it`);
  client = await asUser(connectBridge);
  // An upstream's errors are part of what the scenario judges, not failures of this driver.
  const tools = await asUser(() => client.listTools(undefined, { timeout: CALL_TIMEOUT_MS })).then(
    (result) => result.tools,
    (error) => (log(`tools/list → error ${error.message}`), []),
  );
  log(`tools: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
  const calls = Array.isArray(context.toolCalls)
    ? context.toolCalls.map((call) => ({ name: call.name, arguments: call.arguments ?? {} }))
    : tools.map((tool) => ({ name: tool.name, arguments: argumentsFor(tool.inputSchema) }));
  for (const call of calls) {
    try {
      const result = await asUser(() => client.callTool(call, undefined, { timeout: CALL_TIMEOUT_MS }));
      log(`${call.name} → ${JSON.stringify(result).slice(0, 300)}`);
    } catch (error) {
      log(`${call.name} → error ${error.message}`);
    }
  }
} catch (error) {
  log(`FAILED: ${error.message}`);
  if (error.daemonLog) process.stderr.write(`${error.daemonLog.slice(-20).join('\n')}\n`);
  exitCode = 1;
} finally {
  await client?.close().catch(() => {});
  if (daemon) {
    const { code, signal } = await daemon.stop();
    // The daemon's own log (JSON lines), for a scenario being looked into: it is long.
    if (process.env.MCPOOL_CONFORMANCE_DAEMON_LOG === '1') process.stderr.write(`${daemon.log.join('\n')}\n`);
    if (code !== 0) {
      log(`the daemon exited with code ${code}${signal ? `, signal ${signal}` : ''}`);
      exitCode = 1;
    }
  }
}
process.exit(exitCode);
