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
// daemon or the bridge failed (the suite records it; the scenario's checks decide).
// The `auth/*` scenarios test an OAuth client flow. mcpool has none (a remote server gets the
// static `headers` of its config), so for those this exits 1 at once, saying so, instead of
// starting a daemon that could only fail its connect; they are listed as expected failures.
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN, startDaemon } from './daemon.mjs';

const CALL_TIMEOUT_MS = 20_000;
const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '(no scenario)';

function log(line) {
  process.stderr.write(`[conformance client ${scenario}] ${line}\n`);
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

if (scenario.startsWith('auth/')) {
  log('not applicable: mcpool does no OAuth to an upstream server (only the static headers of its config)');
  process.exit(1);
}

let daemon;
let client;
let exitCode = 0;
try {
  if (!/^https?:\/\//.test(url ?? '')) throw new Error(`expected the test server's URL as the last argument, got ${url}`);
  daemon = await startDaemon({ mcpServers: { upstream: { url } }, allowFailed: true, stderr: process.stderr });
  log(`daemon pid ${daemon.pid} at ${daemon.base}, upstream ${url}`);

  client = new Client({ name: 'mcpool-conformance-client', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } } });
  client.setRequestHandler(ElicitRequestSchema, (request) => ({
    action: 'accept',
    content: argumentsFor(request.params.requestedSchema),
  }));
  client.setRequestHandler(CreateMessageRequestSchema, () => ({
    role: 'assistant',
    content: { type: 'text', text: 'a sampled answer' },
    model: 'conformance-client',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///tmp/conformance-root', name: 'root' }] }));

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'bridge', '--url', `${daemon.base}/mcp/upstream`],
    env: { ...process.env, MCPOOL_STATE_DIR: `${daemon.dir}/state`, MCPOOL_TOKEN: '' },
    stderr: 'inherit',
  });
  await client.connect(transport);
  // An upstream's errors are part of what the scenario judges, not failures of this driver.
  const tools = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS }).then(
    (result) => result.tools,
    (error) => (log(`tools/list → error ${error.message}`), []),
  );
  log(`tools: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
  const calls = Array.isArray(context.toolCalls)
    ? context.toolCalls.map((call) => ({ name: call.name, arguments: call.arguments ?? {} }))
    : tools.map((tool) => ({ name: tool.name, arguments: argumentsFor(tool.inputSchema) }));
  for (const call of calls) {
    try {
      const result = await client.callTool(call, undefined, { timeout: CALL_TIMEOUT_MS });
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
    if (code !== 0) {
      log(`the daemon exited with code ${code}${signal ? `, signal ${signal}` : ''}`);
      exitCode = 1;
    }
  }
}
process.exit(exitCode);
