/**
 * Shares of the actor cap between principals, so that one principal cannot take every thread:
 * the entries one principal's acquires started count against its share (`perPrincipal`), and the
 * last `reserved` threads under `maxActors` are kept for exempt principals (a host's operator).
 * Attaching to a live entry never counts; an entry counts against whoever's acquire started it
 * until it ends (a shared entry too: a principal that starts many servers, injected or not, pays
 * for them). A replacement after a death or a restart is not a new start and is not refused here.
 */
import { ErrorCode, PoolError } from '@mcpool/protocol';

/** How `maxActors` is shared between principals (`McpTransportPoolOptions.actorShares`). */
export interface ActorShares {
  /** Live entries the acquires of one principal may have started. */
  perPrincipal: number;
  /** Threads under `maxActors` that only exempt principals may take. @default 0 */
  reserved?: number;
  /** Principals the shares do not hold (they still meet `maxActors`). @default none */
  exempt?: (principal: string) => boolean;
}

/** Checks `shares` once at construction; throws `MCPOOL_INVALID_ARGUMENT`. */
export function resolveActorShares(shares: ActorShares | undefined, maxActors: number): ActorShares | undefined {
  if (shares === undefined) return undefined;
  const { perPrincipal, reserved = 0, exempt } = shares;
  if (!Number.isInteger(perPrincipal) || perPrincipal < 1) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.actorShares.perPrincipal must be an integer ≥ 1, got ${perPrincipal}`);
  if (!Number.isInteger(reserved) || reserved < 0 || reserved >= maxActors) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.actorShares.reserved must be an integer from 0 to maxActors - 1, got ${reserved}`);
  if (exempt !== undefined && typeof exempt !== 'function') throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.actorShares.exempt must be a function');
  return { perPrincipal, reserved, ...(exempt === undefined ? {} : { exempt }) };
}

/**
 * The refusal of a new entry for `principal`, or undefined when it may start one. `started` counts
 * the live entries that principal's acquires started (read only when a share applies).
 */
export function shareRefusal(
  shares: ActorShares | undefined,
  request: { serverName: string; principal: string | undefined; liveActors: number; maxActors: number; started: () => number },
): PoolError | undefined {
  const { serverName, principal, liveActors, maxActors } = request;
  if (shares === undefined || principal === undefined || shares.exempt?.(principal) === true) return undefined;
  const started = request.started();
  if (started >= shares.perPrincipal) {
    return new PoolError(ErrorCode.CLIENT_LIMIT_REACHED, `${serverName} was refused: ${principal} already has ${started} live servers started for it, its share of the actor threads (${shares.perPrincipal}); close sessions first`, {
      data: { serverName, limit: 'actorsPerPrincipal', live: started, max: shares.perPrincipal },
    });
  }
  const open = maxActors - (shares.reserved ?? 0);
  if (liveActors >= open) {
    return new PoolError(ErrorCode.ACTOR_CAP_REACHED, `${serverName} was refused: the pool runs ${liveActors} actor threads, and the last ${shares.reserved} of its cap (maxActors ${maxActors}) are kept for the operator`, {
      data: { serverName, liveActors, maxActors, reserved: shares.reserved },
    });
  }
  return undefined;
}
