/**
 * The daemon's redactor keeps each owner's secrets apart: answers are scrubbed of the daemon's
 * credentials only, log lines of everything held now, and what a session held leaves with it
 * (the set comes back to its size after any churn). Whatever a secret holds, JSON stays JSON.
 */
import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '@mcpool/protocol';
import { SecretRedactor } from 'mcpool';

const injected = (value: string): ServerConfig => ({ transport: 'stdio', command: 'x', env: { V: value } });

describe('SecretRedactor', () => {
  it('scrubs answers of credentials only, log lines of every secret held now; keys and JSON stay', () => {
    const redactor = new SecretRedactor();
    redactor.setCredentials('operator', ['operator-token-0123456789']);
    redactor.setServers('session:a', [injected('"jsonrpc":"2.0"'), injected('protocolVersion')]);
    const answer = { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25', text: 'protocolVersion operator-token-0123456789' } };
    expect(JSON.parse(redactor.answerJson(answer))).toEqual({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25', text: 'protocolVersion [redacted]' } });
    expect(redactor.scrubBody(JSON.stringify(answer))).toBe(redactor.answerJson(answer));
    const line = `${JSON.stringify({ level: 30, msg: 'said "jsonrpc":"2.0" and protocolVersion', protocolVersion: 1 })}\n`;
    expect(JSON.parse(redactor.scrubLine(line))).toEqual({ level: 30, msg: 'said [redacted] and [redacted]', protocolVersion: 1 });
    expect(redactor.scrubLine(line).endsWith('\n')).toBe(true);
  });

  it('drops what a session held when it ends: the set comes back to its size after churn', () => {
    const redactor = new SecretRedactor();
    redactor.setCredentials('operator', ['operator-token-0123456789']);
    redactor.setServers('config:echo', [injected('configured-secret-1')]);
    const base = redactor.size;
    for (let i = 0; i < 500; i++) redactor.setServers(`session:${i}`, [injected(`session-secret-${i}`)]);
    expect(redactor.size).toBe(base + 500);
    for (let i = 0; i < 500; i++) redactor.drop(`session:${i}`);
    expect(redactor.size).toBe(base);
    expect(redactor.scrubLine('{"msg":"session-secret-7"}')).toBe('{"msg":"session-secret-7"}');
    expect(redactor.scrubLine('{"msg":"configured-secret-1"}')).toBe('{"msg":"[redacted]"}');
  });
});
