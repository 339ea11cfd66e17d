/**
 * The deploy files agree with the daemon: the Kubernetes manifests' config loads (with the
 * Secret's variables), their port is the daemon's, their probes are routes the daemon answers
 * without a token for the Host they send, every variable they set is one the daemon reads, and the
 * grace period covers the drain and the shutdown; HAProxy and nginx accept their files (checked
 * by the real binaries, the replica addresses swapped for local ones), balance round-robin with no
 * stickiness, check `/readyz`, stream without buffering and never replay a call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ENV_OVERRIDE_NAMES, LOOPBACK_HOSTS, loadConfig, type LoadedConfig } from 'mcpool';
import { harness, type Harness } from './helpers.js';

const DEPLOY = new URL('../../../deploy/', import.meta.url);
const read = (name: string): string => readFileSync(new URL(name, DEPLOY), 'utf8');

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- Kubernetes documents, read by path

const docs: Doc[] = parseAllDocuments(read('kubernetes/mcpool.yaml')).map((doc) => doc.toJS() as Doc);
const ofKind = (kind: string): Doc => {
  const found = docs.filter((doc) => doc.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

let dir: string;
let h: Harness;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-deploy-'));
  h = await harness({ mcpServers: {} }, { start: false });
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Kubernetes manifests', () => {
  const deployment = ofKind('Deployment');
  const container = deployment.spec.template.spec.containers[0];
  const secret = ofKind('Secret');
  const env = container.env as { name: string; value?: string; valueFrom?: Doc }[];

  async function config(): Promise<LoadedConfig> {
    const file = join(dir, 'config.json');
    writeFileSync(file, ofKind('ConfigMap').data['config.json']);
    // The Secret's placeholders, as a real one would hold them; the downward API's values.
    const variables: Record<string, string> = { MCPOOL_SESSION_KEYS: randomBytes(32).toString('base64'), MCPOOL_REDIS_URL: 'redis://127.0.0.1:6379', MCPOOL_TOKEN: 'x'.repeat(32), MCPOOL_REPLICA_ID: 'mcpool-7d9f-abcde', MCPOOL_ADVERTISE_URL: 'http://10.1.2.3:7070' };
    return loadConfig({ kind: 'file', path: file, origin: 'flag' }, variables);
  }

  it('has every part: ConfigMap, Secret, Deployment, Service, PodDisruptionBudget', () => {
    expect(docs.map((doc) => doc.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Secret', 'Service']);
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    expect(ofKind('Service').spec.selector).toEqual(labels);
    expect(ofKind('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels);
    expect(ofKind('Service').spec.sessionAffinity).toBeUndefined();
  });

  it('its config loads, listens on the container port on every interface, and is one replica of a cluster', async () => {
    const loaded = await config();
    const port = container.ports.find((p: Doc) => p.name === 'http').containerPort;
    expect(loaded.settings.port).toBe(port);
    expect(loaded.settings.host).toBe('0.0.0.0');
    expect(ofKind('Service').spec.ports[0].targetPort).toBe('http');
    expect(loaded.settings.cluster).toMatchObject({ replicaId: 'mcpool-7d9f-abcde', advertiseUrl: 'http://10.1.2.3:7070', sessionKeysEnv: 'MCPOOL_SESSION_KEYS' });
    expect(loaded.settings.store).toEqual({ kind: 'redis', urlEnv: 'MCPOOL_REDIS_URL', keyPrefix: 'mcpool:' });
    // The grace period covers the drain and the stop of the servers.
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(loaded.settings.drainTimeoutMs + loaded.settings.shutdownTimeoutMs);
  });

  it('sets only variables the daemon reads, and takes every secret one from the Secret', async () => {
    const loaded = await config();
    const read = new Set([...ENV_OVERRIDE_NAMES, 'MCPOOL_TOKEN', 'MCPOOL_STATE_DIR', 'MCPOOL_CONFIG', loaded.settings.cluster!.sessionKeysEnv, (loaded.settings.store as { urlEnv: string }).urlEnv]);
    // A variable may also exist only to build another one's value, as $(NAME).
    const referenced = new Set(env.flatMap((entry) => [...(entry.value ?? '').matchAll(/\$\((\w+)\)/g)].map((match) => match[1]!)));
    for (const entry of env) expect(read.has(entry.name) || referenced.has(entry.name), entry.name).toBe(true);
    for (const name of [loaded.settings.cluster!.sessionKeysEnv, 'MCPOOL_TOKEN', 'MCPOOL_REDIS_URL']) {
      const entry = env.find((e) => e.name === name)!;
      expect(entry.valueFrom?.secretKeyRef, name).toEqual({ name: secret.metadata.name, key: name });
      expect(Object.keys(secret.stringData)).toContain(name);
    }
  });

  it('probes /healthz and /readyz, which the daemon answers without a token for the Host they send', async () => {
    const port = container.ports.find((p: Doc) => p.name === 'http');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
      expect(probe.httpGet.port).toBe(port.name);
      const host = probe.httpGet.httpHeaders.find((header: Doc) => header.name === 'Host').value;
      expect(LOOPBACK_HOSTS).toContain(host);
      const answer = await h.request({ method: 'GET', url: probe.httpGet.path, token: null, headers: { host } });
      // Answered (200, or 503 while not ready), never 401 or 403.
      expect([200, 503], probe.httpGet.path).toContain(answer.statusCode);
    }
  });
});

/** The file with its replica addresses swapped for local ones (the names do not resolve here). */
function localised(text: string, pattern: RegExp): string {
  return text.replace(pattern, (_all, prefix: string) => `${prefix}127.0.0.1:7070`);
}

describe('balancer configs', () => {
  it('HAProxy: valid, round-robin with no stickiness, checks /readyz, retries only what no replica did', () => {
    const text = read('haproxy.cfg');
    expect(text).toMatch(/^\s*balance roundrobin$/m);
    expect(text.replace(/#.*$/gm, '')).not.toMatch(/^\s*(cookie|stick|hash-type|balance (source|uri|hdr))/m);
    expect(text).toMatch(/http-check send meth GET uri \/readyz ver HTTP\/1\.1 hdr Host localhost/);
    expect(text).toMatch(/^\s*retry-on conn-failure 503$/m);
    for (const server of text.matchAll(/^\s*server \S+ \S+:(\d+)/gm)) expect(Number(server[1])).toBe(7070);
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, localised(text, /(server \S+ )\S+:7070/g));
    expect(() => execFileSync('haproxy', ['-c', '-f', file], { stdio: 'pipe' })).not.toThrow();
  });

  it('nginx: valid, round-robin with no stickiness, streams unbuffered, never replays a call', () => {
    const text = read('nginx.conf');
    const directives = text.replace(/#.*$/gm, '');
    expect(directives).not.toMatch(/\b(ip_hash|hash|sticky|least_conn)\b\s/);
    expect(directives).toMatch(/proxy_buffering off;/);
    expect(directives).toMatch(/proxy_read_timeout 1h;/);
    expect(directives).toMatch(/proxy_next_upstream error timeout;/);
    expect(directives).not.toMatch(/non_idempotent/);
    for (const server of text.matchAll(/^\s*server \S+:(\d+)/gm)) expect(Number(server[1])).toBe(7070);
    const file = join(dir, 'nginx.conf');
    writeFileSync(file, localised(text, /(server )\S+:7070/g));
    expect(() => execFileSync('nginx', ['-t', '-q', '-c', file, '-p', `${dir}/`, '-e', join(dir, 'error.log'), '-g', `pid ${join(dir, 'nginx.pid')};`], { stdio: 'pipe' })).not.toThrow();
  });
});
