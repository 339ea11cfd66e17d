/**
 * The `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1): where the
 * resource's metadata is, the scope it wants, the error. One parser for the pool (which names the
 * scope a refused request needs) and the daemon's OAuth client (which discovers and steps up).
 */

/** The parameters of a `Bearer` challenge that mcpool uses. */
export interface BearerChallenge {
  resourceMetadata?: string;
  scope?: string;
  error?: string;
  errorDescription?: string;
}

/**
 * The `Bearer` challenge of a `WWW-Authenticate` header (auth-params per RFC 9110 §11.2: token
 * or quoted-string values), or undefined when it has none.
 */
export function parseBearerChallenge(header: string | undefined): BearerChallenge | undefined {
  if (header === undefined) return undefined;
  const start = /(?:^|,)\s*Bearer(?:\s+|$)/i.exec(header);
  if (start === null) return undefined;
  const params: Record<string, string> = {};
  const pattern = /\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/y;
  pattern.lastIndex = start.index + start[0].length;
  // Bounded: each match consumes at least one character of the header.
  for (let i = 0; i < 64; i++) {
    const match = pattern.exec(header);
    if (match === null) break;
    params[match[1]!.toLowerCase()] = match[2] === undefined ? (match[3] ?? '') : match[2].replaceAll(/\\(.)/g, '$1');
  }
  return {
    ...(params.resource_metadata ? { resourceMetadata: params.resource_metadata } : {}),
    ...(params.scope ? { scope: params.scope } : {}),
    ...(params.error ? { error: params.error } : {}),
    ...(params.error_description ? { errorDescription: params.error_description } : {}),
  };
}
