/**
 * The daemon's event hub: every pool, budget and daemon event gets an id `<epoch>-<seq>` and goes
 * to the SSE subscribers, and the last `capacity` events are kept so a client reconnecting with
 * `Last-Event-ID` gets what it missed. The epoch is new on every daemon start, so an id from a
 * previous daemon is recognised as such (and answered with `events_lost`).
 */
import { randomBytes } from 'node:crypto';
import type { DaemonEventPayload, EventsLostEvent } from '@mcpool/client';

export interface StoredEvent {
  id: string;
  seq: number;
  at: string;
  payload: DaemonEventPayload;
}

export type EventListener = (event: StoredEvent) => void;

/** Where a subscriber that throws is reported (pino fits). */
export interface EventHubLogger {
  error(obj: object, msg?: string): void;
}

export class EventHub {
  readonly epoch = randomBytes(4).toString('hex');
  readonly #capacity: number;
  readonly #buffer: StoredEvent[] = [];
  readonly #listeners = new Set<EventListener>();
  readonly #logger: EventHubLogger | undefined;
  #seq = 0;

  /**
   * @param capacity events kept for replay. @default 1000
   * @param logger where a subscriber that throws is reported. @default silent
   */
  constructor(capacity = 1000, logger?: EventHubLogger) {
    this.#capacity = capacity;
    this.#logger = logger;
  }

  publish(payload: DaemonEventPayload): StoredEvent {
    const seq = ++this.#seq;
    const event: StoredEvent = { id: `${this.epoch}-${seq}`, seq, at: new Date().toISOString(), payload };
    this.#buffer.push(event);
    if (this.#buffer.length > this.#capacity) this.#buffer.shift();
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A broken subscriber must not stop the others, and is never silent: it is a bug.
        this.#logger?.error({ err: error, event: payload.type }, 'an event subscriber threw');
      }
    }
    return event;
  }

  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get subscribers(): number {
    return this.#listeners.size;
  }

  /**
   * What a client that last saw `lastEventId` missed. `lost` is set when that cannot be told
   * exactly: an id from another daemon run, an unreadable id, or one already out of the buffer;
   * `events` is then everything still buffered.
   */
  since(lastEventId: string | undefined): { events: StoredEvent[]; lost?: EventsLostEvent['reason'] } {
    if (lastEventId === undefined || lastEventId === '') return { events: [] };
    const match = /^([0-9a-f]+)-(\d+)$/.exec(lastEventId);
    if (!match) return { events: [...this.#buffer], lost: 'unknown_id' };
    if (match[1] !== this.epoch) return { events: [...this.#buffer], lost: 'daemon_restarted' };
    const seq = Number(match[2]);
    if (seq > this.#seq) return { events: [...this.#buffer], lost: 'unknown_id' };
    const oldest = this.#buffer[0]?.seq ?? this.#seq + 1;
    const events = this.#buffer.filter((event) => event.seq > seq);
    return seq + 1 < oldest ? { events, lost: 'buffer_overflow' } : { events };
  }
}
