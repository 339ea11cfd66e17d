/**
 * How much V8 heap an actor thread needs to take one message of `maxMessageBytes` from its
 * server: the line decoded (up to two bytes a character for text beyond Latin-1), the message
 * parsed from it (as much again), and what an actor holds at rest with room for the collector.
 * The cap stops a runaway thread; a message the pool accepts must never reach it. A limit costs
 * nothing until the heap grows to it: an idle thread's memory is the same under 128 MB or 320 MB.
 */

const MIB = 1024 * 1024;

/** What an actor holds besides the message, with room for the collector to work. */
const AT_REST_MB = 64;

/** The least a thread gets, whatever its messages: the limit actor threads had before messages were sized. */
const FLOOR_MB = 128;

/** The old-generation limit (MB) of a thread that takes messages up to `maxMessageBytes`: 320 for 64 MiB. */
export function actorHeapMb(maxMessageBytes: number): number {
  return Math.max(FLOOR_MB, Math.ceil((4 * maxMessageBytes) / MIB) + AT_REST_MB);
}
