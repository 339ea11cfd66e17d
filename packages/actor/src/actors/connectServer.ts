/** Opens a connection (spawn/connect + initialize + discovery); the machine's `signal` aborts it. */
import { fromPromise } from 'xstate';
import type { ServerConnection } from '../serverConnection.js';

export interface ConnectServerInput {
  open(signal: AbortSignal): Promise<ServerConnection>;
}

export const connectServer = fromPromise<ServerConnection, ConnectServerInput>(({ input, signal }) => input.open(signal));
