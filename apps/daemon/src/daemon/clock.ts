/**
 * The daemon's clock, for the rules that are about time (how long a REST session may sit idle,
 * when an idle server is stopped): injectable, so a test moves time instead of waiting for it.
 * It is the gateway's idle clock: one clock for every such rule.
 */
import { SYSTEM_IDLE_CLOCK, type IdleClock } from '@mcpool/gateway';

/** `now()` in milliseconds since the epoch, and an unref'd `every(ms, tick)`. */
export type DaemonClock = IdleClock;

export const SYSTEM_CLOCK: DaemonClock = SYSTEM_IDLE_CLOCK;
