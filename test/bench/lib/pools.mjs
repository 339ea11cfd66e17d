// Pools made by the bench: every one counts the events it emits (a `failed` or `disconnected`
// during a benchmark means the numbers around it are suspect), and is drained in a finally.
import { McpTransportPool } from '@mcpool/core';

/** `events` is a plain object counting event types; pass the same one to tally a section. */
export function createPool(events, options = {}) {
  return new McpTransportPool({
    ...options,
    onEvent: (event) => {
      events[event.type] = (events[event.type] ?? 0) + 1;
    },
  });
}

/** "failed ×2, disconnected ×2", or '' when nothing went wrong. Budget warnings are not errors. */
export function describeEvents(events) {
  return Object.entries(events)
    .filter(([type]) => type === 'failed' || type === 'disconnected')
    .map(([type, n]) => `${type} ×${n}`)
    .join(', ');
}
