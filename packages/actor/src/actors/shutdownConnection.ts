/** Closes a connection and its child tree; never rejects (teardown is best effort, bounded). */
import { fromPromise } from 'xstate';
import type { ServerConnection } from '../serverConnection.js';

export interface ShutdownConnectionInput {
  connection: ServerConnection | undefined;
}

export const shutdownConnection = fromPromise<void, ShutdownConnectionInput>(async ({ input }) => {
  await input.connection?.close();
});
