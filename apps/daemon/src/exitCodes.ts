/**
 * Exit codes of the `mcpool` command. In a module of their own: every command needs them, and
 * importing them must not load the daemon (`serve` and its graph load only for `mcpool serve`).
 */
export const ExitCode = {
  OK: 0,
  /** A request failed, a forced shutdown, or an unexpected error. */
  FAILURE: 1,
  /** Bad usage, a bad config, no token. */
  CONFIG: 2,
  /** Cannot listen (port in use, address not available) or cannot reach the daemon. */
  UNAVAILABLE: 3,
} as const;
