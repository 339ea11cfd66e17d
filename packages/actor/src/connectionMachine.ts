/**
 * The connection actor's machine: one pooled MCP connection from spawn to close.
 *
 * It owns: the live connection, its transport incarnation (`clientGeneration`), the reconnect
 * backoff, the drain grace and the hard idle cap. It never decides whether a failed entry is
 * replaced, or how often (that is the supervisor's, as in OTP), and it never counts refs: the
 * supervisor says `control.idle` when refs fall to 0 and `control.busy` when they rise again.
 *
 * States (reported to the supervisor as the entry status): spawning → active ⇄ draining → closed,
 * and failed. `active` has the sub-states serving / waiting (reconnect backoff) / reconnecting.
 */
import { assign, setup } from 'xstate';
import type { ActorStartArgs, ReconnectPolicy, WireError } from '@mcpool/protocol';
import { ErrorCode, errorToWire } from '@mcpool/protocol/rpc';
import { connectServer } from './actors/connectServer.js';
import { shutdownConnection } from './actors/shutdownConnection.js';
import { watchConnection } from './actors/watchConnection.js';
import type { ServerConnection } from './serverConnection.js';

/** What the machine tells its host (the worker) about. */
export interface ConnectionHooks {
  open(signal: AbortSignal): Promise<ServerConnection>;
  connected(connection: ServerConnection, clientGeneration: number, reconnect: boolean): void;
  disconnected(error: string | undefined): void;
  failed(error: WireError): void;
  /** A lost connection is handed over for teardown (its process group may still have members). */
  retire(connection: ServerConnection): void;
}

export type { ReconnectPolicy } from '@mcpool/protocol';

export interface ConnectionInput {
  args: Pick<ActorStartArgs, 'spawnTimeoutMs' | 'drainDelayMs' | 'maxIdleMs'>;
  reconnect: ReconnectPolicy;
  hooks: ConnectionHooks;
  /** The clock used for idle-cap arithmetic; pass the SimulatedClock's `now` in tests. @default Date.now */
  now?: () => number;
}

export interface ConnectionContext {
  args: ConnectionInput['args'];
  reconnect: ReconnectPolicy;
  hooks: ConnectionHooks;
  now: () => number;
  connection: ServerConnection | undefined;
  clientGeneration: number;
  reconnectAttempt: number;
  /** The first idle moment since the cap last fired; not reset by attach/detach flapping. */
  firstIdleAt: number | undefined;
  lastError: WireError | undefined;
  closeReason: string;
}

export type ConnectionEvent =
  | { type: 'control.idle' }
  | { type: 'control.busy' }
  | { type: 'control.close'; reason: string }
  | { type: 'control.restart' }
  | { type: 'control.fail'; error: WireError }
  | { type: 'transport.closed'; error?: string | undefined };

export const connectionMachine = setup({
  types: {
    context: {} as ConnectionContext,
    events: {} as ConnectionEvent,
    input: {} as ConnectionInput,
  },
  actors: { connectServer, watchConnection, shutdownConnection },
  actions: {
    storeConnection: assign({
      connection: (_, params: { connection: ServerConnection }) => params.connection,
      clientGeneration: ({ context }) => context.clientGeneration + 1,
      reconnectAttempt: 0,
    }),
    announceConnected: ({ context }, params: { reconnect: boolean }) => {
      context.hooks.connected(context.connection!, context.clientGeneration, params.reconnect);
    },
    storeError: assign({
      lastError: (_, params: { error: unknown }) => errorToWire(params.error),
    }),
    storeWireError: assign({
      lastError: (_, params: { error: WireError }) => params.error,
    }),
    storeSpawnTimeout: assign({
      lastError: ({ context }) => ({
        code: ErrorCode.SPAWN_TIMEOUT,
        message: `the server did not become ready within ${context.args.spawnTimeoutMs} ms`,
        data: { timeoutMs: context.args.spawnTimeoutMs },
      }),
    }),
    storeLoss: assign({
      lastError: (_, params: { error: string | undefined }) => ({
        code: ErrorCode.CALL_INTERRUPTED,
        message: params.error ? `transport lost: ${params.error}` : 'transport lost',
      }),
    }),
    announceDisconnected: ({ context }, params: { error: string | undefined }) => {
      context.hooks.disconnected(params.error);
    },
    retireConnection: ({ context }) => {
      if (context.connection !== undefined) context.hooks.retire(context.connection);
    },
    dropConnection: assign({ connection: undefined }),
    countAttempt: assign({ reconnectAttempt: ({ context }) => context.reconnectAttempt + 1 }),
    markIdleStart: assign({ firstIdleAt: ({ context }) => context.firstIdleAt ?? context.now() }),
    resetIdleStart: assign({ firstIdleAt: undefined }),
    storeCloseReason: assign({ closeReason: (_, params: { reason: string }) => params.reason }),
    announceFailed: ({ context }) => {
      context.hooks.failed(context.lastError ?? { code: ErrorCode.SPAWN_FAILED, message: 'the connection failed' });
    },
  },
  guards: {
    canReconnect: ({ context }) => context.reconnectAttempt < context.reconnect.attempts,
    isAuthRequired: (_, params: { error: unknown }) => (params.error as { code?: unknown } | undefined)?.code === ErrorCode.AUTH_REQUIRED,
    hasIdleStart: ({ context }) => context.firstIdleAt !== undefined,
    hasConnection: ({ context }) => context.connection !== undefined,
  },
  delays: {
    spawnTimeout: ({ context }) => context.args.spawnTimeoutMs,
    drainDelay: ({ context }) => context.args.drainDelayMs,
    idleCap: ({ context }) => Math.max(0, (context.firstIdleAt ?? context.now()) + context.args.maxIdleMs - context.now()),
    reconnectDelay: ({ context }) => {
      const { initialDelayMs, maxDelayMs, factor, firstDelayMs } = context.reconnect;
      if (context.reconnectAttempt <= 1 && firstDelayMs !== undefined) return firstDelayMs;
      return Math.min(maxDelayMs, initialDelayMs * factor ** Math.max(0, context.reconnectAttempt - 1));
    },
  },
}).createMachine({
  id: 'connection',
  context: ({ input }) => ({
    args: input.args,
    reconnect: input.reconnect,
    hooks: input.hooks,
    now: input.now ?? Date.now,
    connection: undefined,
    clientGeneration: 0,
    reconnectAttempt: 0,
    firstIdleAt: undefined,
    lastError: undefined,
    closeReason: 'closed',
  }),
  initial: 'spawning',
  states: {
    spawning: {
      invoke: {
        src: 'connectServer',
        input: ({ context }) => ({ open: (signal: AbortSignal) => context.hooks.open(signal) }),
        onDone: {
          target: 'active',
          actions: [{ type: 'storeConnection', params: ({ event }) => ({ connection: event.output }) }, { type: 'announceConnected', params: { reconnect: false } }],
        },
        onError: { target: 'failed', actions: { type: 'storeError', params: ({ event }) => ({ error: event.error }) } },
      },
      after: { spawnTimeout: { target: 'failed', actions: 'storeSpawnTimeout' } },
      on: {
        'control.close': { target: 'closed', actions: { type: 'storeCloseReason', params: ({ event }) => ({ reason: event.reason }) } },
      },
    },
    active: {
      initial: 'serving',
      states: {
        serving: {
          invoke: { src: 'watchConnection', input: ({ context }) => ({ connection: context.connection }) },
          on: {
            'transport.closed': [
              {
                guard: 'canReconnect',
                target: 'waiting',
                actions: [
                  { type: 'storeLoss', params: ({ event }) => ({ error: event.error }) },
                  { type: 'announceDisconnected', params: ({ event }) => ({ error: event.error }) },
                  'countAttempt',
                ],
              },
              {
                target: '#connection.failed',
                actions: [
                  { type: 'storeLoss', params: ({ event }) => ({ error: event.error }) },
                  { type: 'announceDisconnected', params: ({ event }) => ({ error: event.error }) },
                ],
              },
            ],
          },
          // The hard idle cap does nothing while refs > 0, except forget the old idle moment.
          after: { idleCap: { guard: 'hasIdleStart', actions: 'resetIdleStart', reenter: true, target: 'serving' } },
        },
        waiting: {
          entry: ['retireConnection', 'dropConnection'],
          after: { reconnectDelay: 'reconnecting' },
        },
        // A manual restart: the old connection is retired (its tree swept), a new one opened.
        restarting: {
          entry: ['retireConnection', 'dropConnection'],
          invoke: {
            src: 'connectServer',
            input: ({ context }) => ({ open: (signal: AbortSignal) => context.hooks.open(signal) }),
            onDone: {
              target: 'serving',
              actions: [{ type: 'storeConnection', params: ({ event }) => ({ connection: event.output }) }, { type: 'announceConnected', params: { reconnect: true } }],
            },
            onError: { target: '#connection.failed', actions: { type: 'storeError', params: ({ event }) => ({ error: event.error }) } },
          },
          after: { spawnTimeout: { target: '#connection.failed', actions: 'storeSpawnTimeout' } },
        },
        reconnecting: {
          invoke: {
            src: 'connectServer',
            input: ({ context }) => ({ open: (signal: AbortSignal) => context.hooks.open(signal) }),
            onDone: {
              target: 'serving',
              actions: [{ type: 'storeConnection', params: ({ event }) => ({ connection: event.output }) }, { type: 'announceConnected', params: { reconnect: true } }],
            },
            onError: [
              // A 401 waits for a token; trying again would only repeat it.
              { guard: { type: 'isAuthRequired', params: ({ event }) => ({ error: event.error }) }, target: '#connection.failed', actions: { type: 'storeError', params: ({ event }) => ({ error: event.error }) } },
              { guard: 'canReconnect', target: 'waiting', actions: ['countAttempt', { type: 'storeError', params: ({ event }) => ({ error: event.error }) }] },
              { target: '#connection.failed', actions: { type: 'storeError', params: ({ event }) => ({ error: event.error }) } },
            ],
          },
          after: { spawnTimeout: [{ guard: 'canReconnect', target: 'waiting', actions: ['countAttempt', 'storeSpawnTimeout'] }, { target: '#connection.failed', actions: 'storeSpawnTimeout' }] },
        },
      },
      on: {
        'control.idle': 'draining',
        'control.restart': '.restarting',
        'control.fail': { target: 'failed', actions: { type: 'storeWireError', params: ({ event }) => ({ error: event.error }) } },
        'control.close': { target: 'closed', actions: { type: 'storeCloseReason', params: ({ event }) => ({ reason: event.reason }) } },
      },
    },
    draining: {
      entry: 'markIdleStart',
      invoke: { src: 'watchConnection', input: ({ context }) => ({ connection: context.connection }) },
      after: {
        drainDelay: { target: 'closed', actions: { type: 'storeCloseReason', params: { reason: 'drained' } } },
        idleCap: { target: 'closed', actions: { type: 'storeCloseReason', params: { reason: 'idle_cap' } } },
      },
      on: {
        'control.busy': [
          { guard: 'hasConnection', target: 'active' },
          // Went idle during a reconnect backoff: the connection is gone, so reconnect now.
          { target: 'active.reconnecting' },
        ],
        // Restarting an idle entry cancels its drain; the supervisor re-arms it afterwards.
        'control.restart': 'active.restarting',
        'control.fail': { target: 'failed', actions: { type: 'storeWireError', params: ({ event }) => ({ error: event.error }) } },
        // Nobody is using it: a lost transport simply ends the entry.
        'transport.closed': { target: 'closed', actions: { type: 'storeCloseReason', params: { reason: 'transport_closed_while_idle' } } },
        'control.close': { target: 'closed', actions: { type: 'storeCloseReason', params: ({ event }) => ({ reason: event.reason }) } },
      },
    },
    closed: {
      initial: 'stopping',
      states: {
        stopping: {
          invoke: { src: 'shutdownConnection', input: ({ context }) => ({ connection: context.connection }), onDone: 'done', onError: 'done' },
        },
        done: { entry: 'dropConnection', type: 'final' },
      },
      onDone: 'terminated',
    },
    failed: {
      initial: 'stopping',
      entry: 'announceFailed',
      on: { 'control.close': { target: 'closed', actions: { type: 'storeCloseReason', params: ({ event }) => ({ reason: event.reason }) } } },
      states: {
        stopping: {
          invoke: { src: 'shutdownConnection', input: ({ context }) => ({ connection: context.connection }), onDone: 'done', onError: 'done' },
        },
        done: { entry: 'dropConnection', type: 'final' },
      },
    },
    terminated: { type: 'final' },
  },
});

/** The entry status a machine state maps to. */
export function statusOf(value: unknown): 'spawning' | 'active' | 'draining' | 'closed' | 'failed' {
  const top = typeof value === 'string' ? value : Object.keys(value as object)[0];
  if (top === 'terminated') return 'closed';
  return top as 'spawning' | 'active' | 'draining' | 'closed' | 'failed';
}
