/**
 * One connection actor: the state of one upstream connection (its view hub, source throttle,
 * snapshot store, stderr tail, auth waiters, restart and close) served on its control port.
 * Its thread hosts it alone (`./worker.ts`): the thread is its failure domain.
 * It never logs with console (relayed through the main thread, late) nor to a file descriptor:
 * its log lines go to the supervisor as records (`./log.ts`), at the level the supervisor sets.
 */
import { threadId, type MessagePort } from 'node:worker_threads';
import { createActor, type Actor } from 'xstate';
import type { ActorEvents, ActorStartArgs, ActorStartResult, AttachArgs, ControlOps, RestartOutcome, EntryStatus, ViewEvents, WireError } from '@mcpool/protocol';
import { ErrorCode, MCPCallInterruptedError, PoolError, RpcChannel, errorFromWire } from '@mcpool/protocol/rpc';
import { upstreamUnavailable } from '@mcpool/protocol/refusals';
import { SecretSet, secretSetOf } from '@mcpool/protocol/secrets';
import { connectionMachine, statusOf, type ReconnectPolicy } from './connectionMachine.js';
import { ServerConnection, authRequired, scrubbedError } from './serverConnection.js';
import { TransportLostError, signalGroup } from './transports/processGroupStdioTransport.js';
import { spawnThroughSupervisor } from './transports/supervisedChild.js';
import { UpstreamHttpError, UpstreamNetworkError, UpstreamStreamError } from './transports/upstreamTransport.js';
import { jsonRpcErrorIn } from './transports/jsonRpcErrorBody.js';
import { UpstreamClosedError, UpstreamRpcError, callCancelled } from './upstreamClient.js';
import { SnapshotStore } from './snapshotStore.js';
import { ViewHub } from './viewHub.js';
import { SourceThrottle } from './sourceThrottle.js';
import { createActorLogger, type ActorLogger } from './log.js';

/** What the hosting thread gives its connection. */
export interface HostingThread {
  /** Ends the whole thread: the last resort for an error the connection's machine cannot handle. */
  fatal(error: unknown): void;
  /** The connection ended (closed or disposed) and its port is closed: the thread stops hosting it. */
  ended(): void;
}

/** One hosted connection, seen from its thread. */
export interface ConnectionActor {
  /** Ends it now, without graceful steps (its tree was ended by the supervisor). */
  dispose(reason: string): void;
  /** Kills its child's group now and resolves once the child has exited, bounded (the thread is dying). */
  abandon(error: unknown): Promise<void>;
}

/** Serves one connection on `control` (its thread's `parentPort`; closed when the connection ends). */
export function openConnectionActor(control: MessagePort, thread: HostingThread): ConnectionActor {

  // `channel` is read when a line is logged, never before the module has set it up.
  let logger: ActorLogger = createActorLogger((record) => channel.emit('log', record), { threadId });
  let args: ActorStartArgs | undefined;
  let machine: Actor<typeof connectionMachine> | undefined;
  let connection: ServerConnection | undefined;
  /** The connection whose loss the views were already told of (before the machine heard of it). */
  let lossAnnounced: ServerConnection | undefined;
  let clientGeneration = 0;
  let pgid: number | undefined;
  /** The group of a child an open still in flight has spawned (a start or a reconnect), until that open settles. */
  let openingPgid: number | undefined;
  /** Disposed: a child spawned from here on is killed at once, since nothing would ever close it. */
  let disposed = false;
  let lastStatus: EntryStatus | undefined;
  /** The era the last connection settled on. */
  let settledEra: 'legacy' | 'modern' | undefined;
  /**
   * This server's own secrets (its env and header values, the token it was last given): what it
   * returns is scrubbed of them, here, before any view sees it. Another server's secrets are not
   * this connection's business.
   */
  let secrets: SecretSet = SecretSet.EMPTY;
  const hub: ViewHub = new ViewHub({
    live: () => liveConnection(),
    get callTimeoutMs() {
      return args?.callTimeoutMs ?? 60_000;
    },
    mapError: (error, cancellable, signal, generation, conn) => scrubbedError(mapCallError(error, cancellable, signal, generation, conn), secrets),
    relistTools: (conn, generation) => store.refresh('tools', conn, generation),
    reauthorize: (challenge, status) => reauthorize(challenge, status),
    unattributed: (dropped) => emitControl('unattributed', { dropped }),
    learned: (tool, method) => tellAsked({ method, tool }),
    get logger() {
      return logger;
    },
  });
  /**
   * Drops what a flooding server sends past its bound (one per actor, across reconnects): one warning
   * when an episode begins, one with the count dropped when it ends, and the supervisor told both times (status shows it).
   */
  const throttle = new SourceThrottle({
    backedUp: () => hub.backedUp(),
    onEpisodeStart: ({ reason }) => {
      logger.warn({ reason }, 'the server sends notifications faster than its sessions may get: those past the bound are dropped as they are read, so answers are not held behind them');
      emitControl('throttle', { throttled: true, reason });
    },
    onEpisodeEnd: (episode) => {
      logger.warn(episode, 'the server no longer floods: notifications dropped at the source during the burst');
      emitControl('throttle', { throttled: false, ...episode });
    },
  });
  /** Lines of the server's stderr kept for `stderrTail`, and the length a kept line is cut to: bounded whatever the server writes. */
  const STDERR_LINES_KEPT = 100;
  const STDERR_LINE_CHARS = 1000;
  /** The server's last stderr lines (scrubbed), oldest first; kept across reconnects, so a crash loop's story survives it. */
  const stderrLines: string[] = [];

  function keepStderrLine(line: string): void {
    stderrLines.push(line.length > STDERR_LINE_CHARS ? `${line.slice(0, STDERR_LINE_CHARS)}…` : line);
    if (stderrLines.length > STDERR_LINES_KEPT) stderrLines.splice(0, stderrLines.length - STDERR_LINES_KEPT);
  }

  /**
   * A stdio server is spawned by the supervisor, whose loop reaps it whatever becomes of this
   * thread; this thread keeps its stdio. (Windows reaps without a parent's help.)
   */
  const spawner = process.platform === 'win32' ? undefined : spawnThroughSupervisor({ request: (op, opArgs, options) => channel.request(op, opArgs, options) });

  /** Teardowns of lost connections still running; the thread waits for them before it ends. */
  const retiring = new Set<Promise<void>>();

  async function settledWithin(pending: Set<Promise<void>>, ms: number): Promise<void> {
    if (pending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...pending]), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }
  /** The methods the server has asked its client, each told to the supervisor once. */
  const askedMethods = new Set<string>();
  /**
   * What the server asked before the supervisor had its first lists (a server asks for roots
   * during its handshake): told right after them, so the catalog has a record to keep it in.
   */
  let untold: ActorEvents['asked'][] | undefined = [];

  function tellAsked(fact: ActorEvents['asked']): void {
    if (untold === undefined) emitControl('asked', fact);
    else untold.push(fact);
  }

  function serverAsked(method: string): void {
    if (askedMethods.has(method)) return;
    askedMethods.add(method);
    tellAsked({ method });
  }

  const store = new SnapshotStore((snapshot) => {
    broadcast('snapshot', snapshot);
    emitControl('lists', snapshot);
    const facts = untold;
    untold = undefined;
    for (const fact of facts ?? []) emitControl('asked', fact);
  });

  function emitControl<K extends keyof ActorEvents>(ev: K, data: ActorEvents[K]): void {
    channel.emit(ev, data);
  }

  function broadcast<K extends keyof ViewEvents>(ev: K, data: ViewEvents[K]): void {
    hub.broadcast(ev, data);
    // The supervisor hears connection changes too (pool events); it gets snapshots as `lists`.
    if (ev === 'status') emitControl('connection', data as ViewEvents['status']);
  }

  function defaultReconnect(config: ActorStartArgs['config']): ReconnectPolicy {
    return config.transport === 'stdio'
      ? // A dead local child is restarted at once (a crash loop is bounded by the attempts here and
        // by the supervisor's restart intensity), then 500 ms apart.
        { attempts: 3, initialDelayMs: 500, maxDelayMs: 500, factor: 1, firstDelayMs: 0 }
      : { attempts: 5, initialDelayMs: 1000, maxDelayMs: 16_000, factor: 2 };
  }

  /** The config with the host-supplied `Authorization` header (the config itself names none then). */
  function withAuthorization(config: ActorStartArgs['config'], authorization: string | undefined): ActorStartArgs['config'] {
    if (authorization === undefined) return config;
    return { ...config, headers: { ...config.headers, authorization } };
  }

  /** Calls waiting for the supervisor's answer to a refused token (true: a new one is set; an error: fail with it). */
  let authWaiters: ((answer: boolean | PoolError) => void)[] = [];
  /** How long a refused call waits for a refreshed token before it fails. */
  const REAUTHORIZE_WAIT_MS = 15_000;

  function settleAuthWaiters(answer: boolean | PoolError): void {
    const waiters = authWaiters;
    authWaiters = [];
    for (const resolve of waiters) resolve(answer);
  }

  /** Asks the supervisor once for a new token (however many calls were refused meanwhile) and waits for its answer, bounded. */
  function reauthorize(challenge: string | undefined, status: 401 | 403): Promise<boolean | PoolError> {
    return new Promise<boolean | PoolError>((resolve) => {
      const timer = setTimeout(() => {
        authWaiters = authWaiters.filter((waiter) => waiter !== settle);
        resolve(false);
      }, REAUTHORIZE_WAIT_MS);
      timer.unref();
      const settle = (answer: boolean | PoolError): void => {
        clearTimeout(timer);
        resolve(answer);
      };
      authWaiters.push(settle);
      if (authWaiters.length === 1) emitControl('authRejected', { challenge, status });
    });
  }

  /** A refreshed token: later requests of the live connection carry it, and so does every reconnect. */
  function setAuthorization(authorization: string): void {
    if (args === undefined) throw new PoolError(ErrorCode.INTERNAL, 'setAuthorization before start');
    args = { ...args, authorization, config: withAuthorization(args.config, authorization) };
    secrets = secretSetOf(args.config);
    connection?.transport.setHeader?.('authorization', authorization);
    settleAuthWaiters(true);
  }

  function start(startArgs: ActorStartArgs): Promise<ActorStartResult> {
    if (machine !== undefined) throw new PoolError(ErrorCode.INTERNAL, 'actor already started');
    args = { ...startArgs, config: withAuthorization(startArgs.config, startArgs.authorization) };
    secrets = secretSetOf(args.config);
    logger = logger.child({ server: startArgs.serverName, entryIndex: startArgs.entryIndex });
    logger.level = startArgs.logLevel;
    if (startArgs.askingTools !== undefined) hub.seed(startArgs.askingTools);
    const entryArgs = args;
    return new Promise<ActorStartResult>((resolve, reject) => {
      machine = createActor(connectionMachine, {
        input: {
          args: entryArgs,
          reconnect: entryArgs.reconnect ?? defaultReconnect(entryArgs.config),
          hooks: {
            open: async (signal) => {
              // A replacement starts only once the old process tree is gone (bounded).
              await settledWithin(retiring, entryArgs.shutdownStepMs * 2 + 1500);
              const opening = ServerConnection.open({
                // The latest token (setAuthorization replaces `args`) for every reconnect.
                config: args?.config ?? entryArgs.config,
                shutdownStepMs: entryArgs.shutdownStepMs,
                logger,
                signal,
                // A verdict this actor settled itself beats the one it was started with.
                eraHint: settledEra ?? entryArgs.era,
                defaults: entryArgs.client,
                roots: entryArgs.roots,
                onServerRequest: serverAsked,
                // A third of the spawn budget, at most 10 s: a server slow to start under load must
                // still answer the probe in time, a silent legacy server costs this once per config.
                probeTimeoutMs: entryArgs.probeTimeoutMs ?? Math.min(10_000, Math.max(1000, Math.floor(entryArgs.spawnTimeoutMs / 3))),
                onStderrLine: keepStderrLine,
                secrets: () => secrets,
                readGate: throttle,
                maxMessageBytes: entryArgs.maxMessageBytes,
                spawner,
                onSpawned: (pid) => {
                  pgid = pid;
                  openingPgid = pid;
                  emitControl('spawned', { pid, pgid: pid });
                  if (disposed) signalGroup(pid, 'SIGKILL');
                },
              });
              return opening.finally(() => {
                openingPgid = undefined;
              });
            },
            retire: (conn) => {
              const closing = conn.close().then((sweep) => {
                if (sweep && (sweep.killed > 0 || sweep.survivors > 0 || sweep.warning)) logger.warn({ sweep }, 'swept a lost server tree');
                // Its group is gone: the supervisor stops counting it as ours.
                if (conn.pid !== undefined) emitControl('reaped', { pgid: conn.pid });
              });
              retiring.add(closing);
              void closing.finally(() => retiring.delete(closing));
            },
            connected: (conn, generation, reconnect) => {
              settleRestart({ restarted: true });
              connection = conn;
              // A loss is told to the views at once, ahead of the rejections of the calls it
              // failed (a caller that sees the error finds the view disconnected); the machine
              // hears of it a turn later, once those rejections have left.
              conn.onLoss(() => {
                if (connection !== conn || machine?.getSnapshot().matches({ active: 'serving' }) !== true) return;
                lossAnnounced = conn;
                broadcast('status', { status: 'disconnected', generation: store.snapshot.generation, clientGeneration, reason: 'transport_closed' });
              });
              clientGeneration = generation;
              store.reset(conn.lists, generation, { serverInfo: conn.serverInfo, capabilities: conn.capabilities, instructions: conn.instructions, era: conn.era });
              if (conn.era !== settledEra || conn.eraProbed) emitControl('era', { era: conn.era, protocolVersion: conn.protocolVersion, probed: conn.eraProbed });
              settledEra = conn.era;
              conn.onListChanged((kind) => {
                if (connection === conn) void store.refresh(kind, conn, generation);
              });
              conn.onServerMessages({
                request: (method, params, signal) => hub.serverRequest(method, params, signal),
                notification: (notification) => hub.notification(notification),
                resourceUpdated: (uri) => hub.resourceUpdated(uri),
              });
              // A modern server holds no subscription state: every connection opens its listen stream.
              if (reconnect || conn.era === 'modern') void hub.resubscribe(conn);
              if (reconnect) {
                logger.info({ clientGeneration: generation, pid: conn.pid }, 'reconnected');
                broadcast('status', { status: 'reconnected', generation: store.snapshot.generation, clientGeneration: generation });
              }
            },
            disconnected: (error) => {
              logger.warn({ error }, 'transport lost');
              const announced = connection !== undefined && lossAnnounced === connection;
              connection = undefined;
              lossAnnounced = undefined;
              if (!announced) broadcast('status', { status: 'disconnected', generation: store.snapshot.generation, clientGeneration, reason: 'transport_closed' });
            },
            failed: (error) => {
              // The supervisor reports the failure (with its stderr tail) once; this is the actor's detail.
              logger.debug({ error }, 'connection failed');
              connection = undefined;
              broadcast('status', { status: 'failed', generation: store.snapshot.generation, clientGeneration, error });
            },
          },
        },
      });
      let settled = false;
      machine.subscribe({
        next: (snapshot) => {
          const status = statusOf(snapshot.value);
          if (status !== lastStatus) {
            lastStatus = status;
            logger.debug({ status }, 'status');
            const error = snapshot.context.lastError;
            emitControl('status', { status, generation: store.snapshot.generation, ...(status === 'failed' && error ? { error } : {}) });
          }
          if (status === 'failed' || status === 'closed') settleRestart({ restarted: false, reason: status === 'failed' ? 'failed' : 'superseded' });
          if (!settled && status === 'active') {
            settled = true;
            resolve({ snapshot: store.snapshot, pid: connection?.pid, era: settledEra });
          } else if (!settled && (status === 'failed' || status === 'closed')) {
            settled = true;
            reject(new PoolError(snapshot.context.lastError?.code ?? ErrorCode.SPAWN_FAILED, snapshot.context.lastError?.message ?? 'the server closed during spawn', snapshot.context.lastError?.data ? { data: snapshot.context.lastError.data } : {}));
          }
          if (snapshot.status === 'done') finish(snapshot.context.closeReason);
        },
        // Without an error observer xstate rethrows on a timer and the thread dies.
        error: (error) => {
          logger.error({ err: error }, 'machine error');
          thread.fatal(error);
        },
      });
      machine.start();
    });
  }

  function attach({ viewId, sessionId, port, client, principal }: AttachArgs): { generation: number } {
    const status = lastStatus;
    if (status !== 'active' && status !== 'draining') {
      port.close();
      throw new PoolError(ErrorCode.ENTRY_CLOSING, `the entry is ${status ?? 'not started'}`);
    }
    hub.attach(viewId, port, store.snapshot, client, principal);
    logger.debug({ viewId, sessionId }, 'view attached');
    return { generation: store.snapshot.generation };
  }

  function liveConnection(): { conn: ServerConnection; generation: number } {
    if (connection === undefined || connection.closed || (lastStatus !== 'active' && lastStatus !== 'draining')) {
      const code = lastStatus === 'active' ? ErrorCode.NOT_CONNECTED : ErrorCode.ENTRY_CLOSING;
      throw new PoolError(code, lastStatus === 'active' ? 'the server is reconnecting' : `the entry is ${lastStatus}`, { data: { serverName: args?.serverName, entryIndex: args?.entryIndex } });
    }
    return { conn: connection, generation: clientGeneration };
  }

  function mapCallError(error: unknown, cancellable: boolean, signal: AbortSignal, generation: number, conn: ServerConnection): PoolError {
    if (error instanceof PoolError) return error;
    if (cancellable && signal.aborted) return callCancelled();
    if (error instanceof UpstreamRpcError) {
      return new PoolError(ErrorCode.UPSTREAM_ERROR, error.message, { data: { mcpCode: error.code, ...(error.data === undefined ? {} : { mcpData: error.data }) } });
    }
    // A call that raced the server's death (the write failed, or the loss was not reported yet),
    // or whose response stream was lost and could not be resumed: the server may have acted.
    if (error instanceof UpstreamClosedError || error instanceof UpstreamStreamError || conn.closed || error instanceof TransportLostError || conn.stdio?.exited) {
      const lost = error instanceof UpstreamStreamError ? 'the response stream from' : 'the connection to';
      return new MCPCallInterruptedError(`${lost} ${args!.serverName} was lost during the call; its result is unknown`, {
        serverName: args!.serverName,
        entryIndex: args!.entryIndex,
        clientGeneration: generation,
      });
    }
    // The server answered with something that is not a JSON-RPC answer, or could not be reached:
    // its fault or the network's. Anything else thrown here is a bug in mcpool.
    // Refused twice, or nothing to refresh with: the caller learns the server wants authorization.
    if (error instanceof UpstreamHttpError && error.status === 401) return authRequired(error);
    if (error instanceof UpstreamHttpError) {
      // A modern server answers some refusals (a header mismatch, a missing capability) with a
      // 4xx whose body is the JSON-RPC error: the caller gets its code, as for any server error.
      const rpc = jsonRpcErrorIn(error.body);
      if (rpc === undefined) return upstreamUnavailable(args!.serverName, error.message, { httpStatus: error.status, cause: error });
      const data = { httpStatus: error.status, mcpCode: rpc.code, ...(rpc.data === undefined ? {} : { mcpData: rpc.data }) };
      return new PoolError(ErrorCode.UPSTREAM_ERROR, rpc.message, { cause: error, data });
    }
    if (error instanceof UpstreamNetworkError) return upstreamUnavailable(args!.serverName, error.message, { cause: error });
    return new PoolError(ErrorCode.INTERNAL, (error as Error)?.message ?? String(error), { cause: error });
  }

  let restartInFlight: Promise<RestartOutcome> | undefined;
  let resolveRestart: ((outcome: RestartOutcome) => void) | undefined;

  function settleRestart(outcome: RestartOutcome): void {
    const resolve = resolveRestart;
    resolveRestart = undefined;
    restartInFlight = undefined;
    resolve?.(outcome);
  }

  /** Restarts the connection in place; concurrent restarts share one. */
  function restart(): Promise<RestartOutcome> {
    if (restartInFlight !== undefined) return restartInFlight;
    if (machine === undefined || (lastStatus !== 'active' && lastStatus !== 'draining')) {
      return Promise.resolve({ restarted: false, reason: lastStatus ?? 'not_started' });
    }
    restartInFlight = new Promise<RestartOutcome>((resolve) => {
      resolveRestart = resolve;
    });
    const pending = restartInFlight;
    logger.info('restarting');
    connection = undefined;
    broadcast('status', { status: 'disconnected', generation: store.snapshot.generation, clientGeneration, reason: 'restart' });
    machine.send({ type: 'control.restart' });
    return pending;
  }

  function setIdle(idle: boolean): { status: EntryStatus } {
    machine?.send({ type: idle ? 'control.idle' : 'control.busy' });
    return { status: lastStatus ?? 'spawning' };
  }

  let closeWaiters: (() => void)[] = [];
  let finished = false;

  function close(reason: string): Promise<void> {
    if (finished) return Promise.resolve();
    if (machine === undefined) {
      finish(reason);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      closeWaiters.push(resolve);
      machine!.send({ type: 'control.close', reason });
    });
  }

  function finish(reason: string): void {
    if (finished) return;
    finished = true;
    void settledWithin(retiring, (args?.shutdownStepMs ?? 2000) * 2 + 1500).then(() => end(reason));
  }

  function end(reason: string): void {
    throttle.dispose();
    hub.closeAll('the entry closed');
    logger.info({ reason }, 'closed');
    emitControl('closed', { reason });
    for (const resolve of closeWaiters) resolve();
    closeWaiters = [];
    // Let the `close` reply go out, then stop listening so the thread can exit by itself.
    setImmediate(() => {
      machine?.stop();
      channel.close('actor finished');
      logger.flush();
      thread.ended();
    });
  }

  /**
   * Disposes the connection at once, without its graceful steps: the supervisor has ended its tree
   * already (or the thread is going), so nothing is waited for but the teardowns already running.
   */
  function dispose(reason: string): void {
    if (finished) return;
    finished = true;
    disposed = true;
    settleAuthWaiters(false);
    settleRestart({ restarted: false, reason: 'superseded' });
    // The machine stops now, not a turn later: a reconnect it has scheduled (the supervisor's kill
    // of the tree is a loss to it) must not spawn a child after this. A child an open in flight has
    // spawned already goes with the group, without graceful steps: the open's own teardown on abort
    // would outlast a thread that ends next.
    machine?.stop();
    if (openingPgid !== undefined) signalGroup(openingPgid, 'SIGKILL');
    const conn = connection;
    connection = undefined;
    if (conn !== undefined) void conn.close().catch(() => undefined);
    end(reason);
  }

  /**
   * The thread is dying: kill the child's group now (no graceful steps) and resolve once the
   * supervisor, which spawned it, reports it reaped (bounded).
   */
  function abandon(error: unknown): Promise<void> {
    const stdio = connection?.stdio;
    try {
      stdio?.killGroupNow();
      if (pgid !== undefined) process.kill(-pgid, 'SIGKILL');
    } catch {
      // the group may be gone already
    }
    // Posted synchronously: a message sent before the thread exits still reaches the supervisor.
    logger.fatal({ err: error }, 'actor died');
    return stdio === undefined ? Promise.resolve() : stdio.waitForExit(300).then(() => undefined, () => undefined);
  }

  const channel = new RpcChannel(control, {
    handler: (op, opArgs) => {
      switch (op as keyof ControlOps) {
        case 'start':
          return start(opArgs as ActorStartArgs);
        case 'attach':
          return attach(opArgs as AttachArgs);
        case 'detach': {
          hub.detach((opArgs as { viewId: string }).viewId);
          return undefined;
        }
        case 'setIdle':
          return setIdle((opArgs as { idle: boolean }).idle);
        case 'close':
          return close((opArgs as { reason: string }).reason);
        case 'dispose':
          dispose((opArgs as { reason: string }).reason);
          return undefined;
        case 'restart':
          return restart();
        case 'ping':
          return 'pong';
        case 'stderrTail':
          return { lines: [...stderrLines] };
        case 'fail': {
          settleAuthWaiters(false);
          machine?.send({ type: 'control.fail', error: (opArgs as { error: WireError }).error });
          return undefined;
        }
        case 'setAuthorization':
          return setAuthorization((opArgs as { authorization: string }).authorization);
        case 'declineAuthorization': {
          const { error } = opArgs as ControlOps['declineAuthorization']['args'];
          return settleAuthWaiters(error === undefined ? false : errorFromWire(error));
        }
        default:
          throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown control operation ${op}`);
      }
    },
  });



  return { dispose, abandon };
}
