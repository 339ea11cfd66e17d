/** Reports the loss of a live connection to the machine as `transport.closed`. */
import { fromCallback } from 'xstate';
import type { ServerConnection } from '../serverConnection.js';

export interface WatchConnectionInput {
  connection: ServerConnection | undefined;
}

export const watchConnection = fromCallback<{ type: 'noop' }, WatchConnectionInput>(({ input, sendBack }) => {
  const { connection } = input;
  if (connection === undefined) return undefined;
  return connection.onClose((error) => {
    sendBack({ type: 'transport.closed', error: error?.message });
  });
});
