/**
 * `<server>__<name>` naming on the aggregating endpoint, and URI-template routing of resources.
 */
import { describe, expect, it } from 'vitest';
import { qualify, splitQualified, templateMatches } from '../src/aggregate/naming.js';

describe('naming', () => {
  it('splits <server>__<name> on the longest server name that fits', () => {
    expect(qualify('echo', 'add')).toBe('echo__add');
    expect(splitQualified('echo__add', ['echo', 'files'])).toEqual({ server: 'echo', name: 'add' });
    expect(splitQualified('my__srv__tool__x', ['my', 'my__srv'])).toEqual({ server: 'my__srv', name: 'tool__x' });
    expect(splitQualified('echo__', ['echo'])).toBeUndefined();
    expect(splitQualified('add', ['echo'])).toBeUndefined();
    expect(splitQualified('other__add', ['echo'])).toBeUndefined();
  });

  it('matches URIs against RFC 6570 templates for routing', () => {
    expect(templateMatches('test://template/{id}/data', 'test://template/123/data')).toBe(true);
    expect(templateMatches('test://template/{id}/data', 'test://template/1/2/data')).toBe(false);
    expect(templateMatches('file:///{+path}', 'file:///a/b/c.txt')).toBe(true);
    expect(templateMatches('db://rows{?limit,offset}', 'db://rows?limit=5')).toBe(true);
    expect(templateMatches('db://rows{?limit,offset}', 'db://rows')).toBe(true);
    expect(templateMatches('a.b://x{', 'a.b://x')).toBe(false);
    expect(templateMatches('a.b://{x}', 'aXb://y')).toBe(false);
    // What the SDK's UriTemplate adds: all query variables in any order, prefixed segments, no query on a plain template.
    expect(templateMatches('db://rows{?limit,offset}', 'db://rows?limit=5&offset=2')).toBe(true);
    expect(templateMatches('x://{a}{?q}', 'x://v?q=1')).toBe(true);
    expect(templateMatches('x://{/seg}', 'x:///a')).toBe(true);
    expect(templateMatches('test://template/{id}/data', 'test://template/1/data?x=1')).toBe(false);
    expect(templateMatches('file:///{+path}', `file:///${'a'.repeat(2_000_000)}`)).toBe(false);
  });
});
