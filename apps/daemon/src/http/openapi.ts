/**
 * `/openapi.json`, built from the same route table that registers the routes, so every route is
 * described (a test checks the two lists are equal) with the zod schemas that validate it.
 */
import { z } from 'zod';
import type { Right } from '@mcpool/client';
import { errorBodySchema } from './schemas.js';

export interface RouteResponseDoc {
  description: string;
  schema?: z.ZodType;
  /** @default 'application/json' */
  contentType?: string;
}

export interface RouteDoc {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  summary: string;
  right: Right;
  /** Answers without a token (Host and Origin are still checked). */
  public?: boolean;
  body?: z.ZodType;
  query?: z.ZodObject;
  /** Success responses by status. */
  responses: Record<number, RouteResponseDoc>;
  /** Error statuses the route may answer besides 401/403 (every route). */
  errors?: number[];
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed input (`MCPOOL_BAD_REQUEST`, `MCPOOL_CONFIG_INVALID`)',
  401: 'Missing or unknown bearer token (`MCPOOL_UNAUTHORIZED`)',
  403: 'Missing right, or Host / Origin not allowed (`MCPOOL_FORBIDDEN`)',
  404: 'Unknown server, entry or session (`MCPOOL_NOT_FOUND`)',
  409: 'Conflict (`MCPOOL_CONFIG_REJECTED`: the config file cannot be read as a whole, nothing was applied; a bad server entry alone is reported in `rejected`)',
  413: 'Body too large (`MCPOOL_PAYLOAD_TOO_LARGE`)',
  415: 'Body is not application/json (`MCPOOL_UNSUPPORTED_MEDIA_TYPE`)',
  501: 'Not supported by this daemon (`MCPOOL_NOT_IMPLEMENTED`: no config source to reload)',
  502: 'An upstream MCP server failed (`MCPOOL_UPSTREAM_ERROR`, `MCPOOL_SPAWN_FAILED`, …)',
  503: 'Shutting down, not ready, or a server that cannot run (`MCPOOL_SHUTTING_DOWN`, `MCPOOL_NOT_READY`, `MCPOOL_BUDGET_EXHAUSTED`, `MCPOOL_SERVER_UNAVAILABLE`)',
  504: 'An upstream call or start timed out',
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

export function buildOpenApi(routes: readonly RouteDoc[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:([A-Za-z]+)/g, '{$1}');
    const parameters: Record<string, unknown>[] = [...route.url.matchAll(/:([A-Za-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (route.query) {
      for (const [name, schema] of Object.entries(route.query.shape)) {
        parameters.push({ name, in: 'query', required: !(schema as z.ZodType).safeParse(undefined).success, schema: jsonSchema(schema as z.ZodType, 'input') });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, doc] of Object.entries(route.responses)) {
      responses[status] = {
        description: doc.description,
        ...(doc.schema || doc.contentType ? { content: { [doc.contentType ?? 'application/json']: doc.schema ? { schema: jsonSchema(doc.schema, 'output') } : {} } } : {}),
      };
    }
    for (const status of [...(route.public ? [] : [401]), 403, ...(route.errors ?? [])]) {
      responses[String(status)] ??= { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      description: route.public ? 'No token needed.' : `Needs the \`${route.right}\` right.`,
      ...(route.public ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: false, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'mcpool daemon control API',
      version,
      description:
        'REST control API of the mcpool daemon. Every route but `/healthz` needs a bearer token; GETs need the `read` right, sessions `write`, restart, reload and shutdown `admin` (each right includes the ones before it). Requests with a Host other than loopback (or daemon.allowedHosts) or a foreign Origin get 403.',
    },
    servers: [{ url: 'http://127.0.0.1:7070' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: jsonSchema(errorBodySchema, 'output') },
    },
  };
}
