// The mcpool dashboard: what the daemon runs, who uses it, what just happened.
// Everything it shows comes from the daemon's REST API with the session cookie the sign-in
// code was traded for; the page itself holds no data.
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import './style.css';

/** Event types the daemon's stream sends (named SSE events). */
const EVENT_TYPES = [
  'entry_status', 'disconnected', 'reconnected', 'failed', 'mcp_budget_warning', 'mcp_child_refused_batch',
  'servers_progress', 'config_reloaded', 'config_rejected', 'server_restarted', 'session_created', 'session_closed',
  'events_lost', 'shutdown', 'auth_required',
];
const MAX_EVENTS = 100;
const STATUS_POLL_MS = 3000;
const METRICS_POLL_MS = 5000;

class Unauthorized extends Error {}

async function api(path, init = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...init, headers: { accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers } });
  if (response.status === 401) throw new Unauthorized('signed out');
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error(`${response.status} ${body.code ?? ''} ${body.message ?? ''}`.trim());
  }
  return response.status === 204 ? undefined : response.headers.get('content-type')?.includes('json') ? response.json() : response.text();
}

/** Prometheus text → {name → [{labels, value}]}, for the few metrics the page reads. */
export function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const pair of (match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    if (!out.has(match[1])) out.set(match[1], []);
    out.get(match[1]).push({ labels, value: Number(match[4]) });
  }
  return out;
}

function perServer(metrics, name) {
  const totals = new Map();
  for (const { labels, value } of metrics.get(name) ?? []) if (labels.server) totals.set(labels.server, (totals.get(labels.server) ?? 0) + value);
  return totals;
}

/** Calls/s and mean latency per server between two /metrics readings. */
function callRates(previous, current, seconds) {
  const rates = new Map();
  if (!previous || seconds <= 0) return rates;
  const [count0, sum0] = [perServer(previous, 'mcpool_call_duration_seconds_count'), perServer(previous, 'mcpool_call_duration_seconds_sum')];
  const [count1, sum1] = [perServer(current, 'mcpool_call_duration_seconds_count'), perServer(current, 'mcpool_call_duration_seconds_sum')];
  for (const [server, count] of count1) {
    const calls = count - (count0.get(server) ?? 0);
    const time = (sum1.get(server) ?? 0) - (sum0.get(server) ?? 0);
    rates.set(server, { perSecond: calls / seconds, meanMs: calls > 0 ? (time / calls) * 1000 : undefined });
  }
  return rates;
}

function describeEvent(event) {
  const where = event.serverName ? `${event.serverName}${event.entryIndex === undefined ? '' : `#${event.entryIndex}`}` : '';
  switch (event.type) {
    case 'entry_status': return `${where} ${event.previous ? `${event.previous} → ` : ''}${event.status} (refs ${event.refs})`;
    case 'server_restarted': return `${event.serverName} restarted: ${event.entries.map((e) => (e.restarted ? `#${e.entryIndex} in ${e.durationMs} ms` : `#${e.entryIndex} not (${e.reason ?? 'skipped'})`)).join(', ')}`;
    case 'failed': return `${where} failed: ${event.lastError?.code ?? ''} ${event.lastError?.message ?? ''}`;
    case 'disconnected': return `${where} disconnected (${event.reason})`;
    case 'reconnected': return `${where} reconnected`;
    case 'session_created': return `session ${event.sessionId} opened by ${event.clientId}`;
    case 'session_closed': return `session ${event.sessionId} closed`;
    case 'config_reloaded': return `config reloaded (${event.trigger}): +${event.added.length} −${event.removed.length} ~${event.changed.length}`;
    case 'config_rejected': return `config rejected (${event.trigger}): ${event.message}`;
    case 'mcp_budget_warning': return `budget warning: ${event.liveCount}/${event.clientBudget} live`;
    case 'mcp_child_refused_batch': return `budget refused ${event.refused.length} server(s)`;
    case 'servers_progress': return `servers ready ${event.ready}/${event.total}${event.failed ? `, ${event.failed} failed` : ''}`;
    default: return event.type;
  }
}

function SignIn({ problem }) {
  return html`<main class="signin">
    <h1>mcpool</h1>
    <p>${problem ?? 'Not signed in.'}</p>
    <p>Run <code>mcpool ui</code> on this machine: it opens this page with a one-time sign-in code.</p>
  </main>`;
}

function Budget({ budget }) {
  if (!budget) return null;
  return html`<span class=${`budget ${budget.status}`} title="live connections against the budget">
    budget ${budget.liveCount}/${budget.clientBudget} · ${budget.budgetMode} · ${budget.status}
  </span>`;
}

function Servers({ servers, rates, restartCounts, onRestart, busy, canWrite }) {
  if (servers.length === 0) return html`<p class="empty">No servers configured.</p>`;
  return html`<table class="servers">
    <thead><tr><th>Server</th><th>Status</th><th>Entries</th><th>Restarts</th><th>Calls/s</th><th>Mean latency</th><th>Last error</th><th></th></tr></thead>
    <tbody>
      ${servers.map((server) => {
        const rate = rates.get(server.name);
        return html`<tr data-server=${server.name}>
          <td class="name">${server.name}</td>
          <td><span class=${`status ${server.status}`}>${server.status}</span></td>
          <td class="entries">${server.entrySummary.length === 0 ? '—' : server.entrySummary.map((entry) => html`<div class="entry">
            #${entry.entryIndex} <span class=${`status ${entry.status}`}>${entry.status}</span> refs ${entry.refs}
            ${entry.era ? html` · <span class="tag">${entry.era}</span>` : null}
            ${entry.sharing ? html` · <span class="tag">${entry.sharing}</span>` : null}
          </div>`)}</td>
          <td>${restartCounts.get(server.name) ?? 0}</td>
          <td>${rate ? rate.perSecond.toFixed(2) : '—'}</td>
          <td>${rate?.meanMs === undefined ? '—' : `${rate.meanMs.toFixed(1)} ms`}</td>
          <td class="error">${server.lastError ? html`<code>${server.lastError.code}</code> ${server.lastError.message.split('\n')[0]}` : ''}</td>
          <td><button type="button" disabled=${!canWrite || busy.has(server.name)} onClick=${() => onRestart(server.name)}>${busy.has(server.name) ? 'Restarting…' : 'Restart'}</button></td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function Sessions({ sessions }) {
  if (sessions.length === 0) return html`<p class="empty">No sessions.</p>`;
  return html`<table class="sessions">
    <thead><tr><th>Session</th><th>Client</th><th>Opened</th><th>Servers</th></tr></thead>
    <tbody>${sessions.map((session) => html`<tr>
      <td><code>${session.id}</code>${session.label ? ` ${session.label}` : ''}</td>
      <td>${session.clientId}</td>
      <td>${new Date(session.createdAt).toLocaleTimeString()}</td>
      <td>${session.servers.map((s) => `${s.name}${s.status === 'connected' ? '' : ` (${s.status})`}`).join(', ') || '—'}</td>
    </tr>`)}</tbody>
  </table>`;
}

function Events({ events }) {
  if (events.length === 0) return html`<p class="empty">Waiting for events…</p>`;
  return html`<ol class="events">${events.map((event) => html`<li data-type=${event.type}><time>${event.at}</time> ${describeEvent(event)}</li>`)}</ol>`;
}

function App() {
  const [signedIn, setSignedIn] = useState(undefined);
  const [problem, setProblem] = useState(undefined);
  const [status, setStatus] = useState(undefined);
  const [sessions, setSessions] = useState([]);
  const [events, setEvents] = useState([]);
  const [rates, setRates] = useState(new Map());
  const [restartCounts, setRestartCounts] = useState(new Map());
  const [busy, setBusy] = useState(new Set());
  const [notice, setNotice] = useState(undefined);
  const lastMetrics = useRef(undefined);

  const refresh = useCallback(async () => {
    try {
      const [next, list] = await Promise.all([api('/workspace/mcp'), api('/sessions')]);
      setStatus(next);
      setSessions(list.sessions);
      setSignedIn(true);
    } catch (error) {
      if (error instanceof Unauthorized) setSignedIn(false);
      else setNotice(String(error.message));
    }
  }, []);

  // Sign in: trade the one-time code in the address for the cookie, then drop it from the address.
  useEffect(() => {
    const params = new URLSearchParams(location.search);
    const code = params.get('code');
    const start = async () => {
      if (code) {
        history.replaceState(null, '', location.pathname);
        try {
          await api('/ui/login', { method: 'POST', body: JSON.stringify({ code }) });
        } catch (error) {
          setProblem(error instanceof Unauthorized ? 'That sign-in code is used or expired.' : String(error.message));
        }
      }
      await refresh();
    };
    void start();
  }, [refresh]);

  useEffect(() => {
    if (!signedIn) return undefined;
    const timer = setInterval(refresh, STATUS_POLL_MS);
    const source = new EventSource('/workspace/mcp/events');
    const onEvent = (message) => {
      let payload;
      try {
        payload = JSON.parse(message.data);
      } catch {
        return;
      }
      setEvents((list) => [{ ...payload, at: new Date().toLocaleTimeString() }, ...list].slice(0, MAX_EVENTS));
      void refresh();
    };
    for (const type of EVENT_TYPES) source.addEventListener(type, onEvent);
    const readMetrics = async () => {
      try {
        const current = parseMetrics(await api('/metrics', { headers: { accept: 'text/plain' } }));
        const now = Date.now();
        const previous = lastMetrics.current;
        if (previous) setRates(callRates(previous.metrics, current, (now - previous.at) / 1000));
        lastMetrics.current = { metrics: current, at: now };
        const counts = new Map();
        for (const { labels, value } of current.get('mcpool_restarts_total') ?? []) if (labels.result === 'restarted') counts.set(labels.server, (counts.get(labels.server) ?? 0) + value);
        setRestartCounts(counts);
      } catch {
        // metrics are a nicety: the table still shows without them
      }
    };
    void readMetrics();
    const metricsTimer = setInterval(readMetrics, METRICS_POLL_MS);
    return () => {
      clearInterval(timer);
      clearInterval(metricsTimer);
      source.close();
    };
  }, [signedIn, refresh]);

  const restart = useCallback(async (name) => {
    setBusy((set) => new Set(set).add(name));
    try {
      await api(`/workspace/mcp/${encodeURIComponent(name)}/restart`, { method: 'POST', body: '{}' });
      setNotice(undefined);
    } catch (error) {
      setNotice(`restart ${name}: ${error.message}`);
    } finally {
      setBusy((set) => {
        const next = new Set(set);
        next.delete(name);
        return next;
      });
      void refresh();
    }
  }, [refresh]);

  const signOut = useCallback(async () => {
    await api('/ui/logout', { method: 'POST', body: '{}' }).catch(() => undefined);
    setSignedIn(false);
  }, []);

  if (signedIn === undefined) return html`<main class="loading">Loading…</main>`;
  if (!signedIn) return html`<${SignIn} problem=${problem} />`;
  return html`<main>
    <header>
      <h1>mcpool</h1>
      <span class=${`ready ${status?.ready ? 'yes' : 'no'}`}>${status?.ready ? 'ready' : 'warming up'}</span>
      <${Budget} budget=${status?.budget} />
      <span class="sessions-count">${status?.sessions ?? 0} session(s)</span>
      <button type="button" class="signout" onClick=${signOut}>Sign out</button>
    </header>
    ${notice ? html`<p class="notice" role="alert">${notice}</p>` : null}
    <section><h2>Servers</h2><${Servers} servers=${status?.servers ?? []} rates=${rates} restartCounts=${restartCounts} onRestart=${restart} busy=${busy} canWrite=${true} /></section>
    <section class="columns">
      <div><h2>Sessions</h2><${Sessions} sessions=${sessions} /></div>
      <div><h2>Live events</h2><${Events} events=${events} /></div>
    </section>
  </main>`;
}

render(html`<${App} />`, document.getElementById('app'));
