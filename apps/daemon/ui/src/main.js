// The mcpool dashboard: what the daemon runs, who uses it, what just happened.
// Everything it shows comes from the daemon's REST API with the session cookie the sign-in
// code was traded for; the page itself holds no data.
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { serverStats } from './stats.js';
import './style.css';

/** Event types the daemon's stream sends (named SSE events). */
const EVENT_TYPES = [
  'entry_status', 'disconnected', 'reconnected', 'failed', 'mcp_budget_warning', 'mcp_child_refused_batch',
  'servers_progress', 'config_reloaded', 'config_rejected', 'server_restarted', 'session_created', 'session_closed',
  'events_lost', 'shutdown', 'auth_required', 'auth_completed', 'auth_failed', 'server_unavailable', 'server_state',
];
const MAX_EVENTS = 100;
const STATUS_POLL_MS = 3000;
const STATS_POLL_MS = 5000;
/** Lines of a server's stderr its panel shows. */
const STDERR_LINES = 50;

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

/** A server's life state as the dashboard names it. */
function stateLabel(state) {
  return state === 'stopped' ? 'stopped (idle)' : state;
}

function describeEvent(event) {
  const where = event.serverName ? `${event.serverName}${event.entryIndex === undefined ? '' : `#${event.entryIndex}`}` : '';
  switch (event.type) {
    case 'entry_status': return `${where} ${event.previous ? `${event.previous} → ` : ''}${event.status} (refs ${event.refs})`;
    case 'server_restarted': return describeRestart(event);
    case 'failed': return `${where} failed: ${event.lastError?.code ?? ''} ${event.lastError?.message ?? ''}`;
    case 'disconnected': return `${where} disconnected (${event.reason})`;
    case 'reconnected': return `${where} reconnected`;
    case 'session_created': return `session ${event.sessionId} opened by ${event.clientId}`;
    case 'session_closed': return `session ${event.sessionId} closed`;
    case 'config_reloaded': return `config reloaded (${event.trigger}): +${event.added.length} −${event.removed.length} ~${event.changed.length}${event.rejected?.length ? `, not applied: ${event.rejected.join(', ')}` : ''}`;
    case 'server_unavailable': return `${event.serverName} ${event.keptRunning ? 'keeps its running config: its new entry cannot run' : 'is unavailable'}: ${event.code} ${event.message}`;
    case 'config_rejected': return `config rejected (${event.trigger}): ${event.message}`;
    case 'mcp_budget_warning': return `budget warning: ${event.liveCount}/${event.clientBudget} live`;
    case 'mcp_child_refused_batch': return `budget refused ${event.refused.length} server(s)`;
    case 'auth_required': return `${event.serverName} needs authorization (Authorize, or run ${event.command})`;
    case 'auth_completed': return `${event.serverName} authorized`;
    case 'auth_failed': return `${event.serverName}: the authorization failed: ${event.message}`;
    case 'server_state': return `${event.serverName} ${stateLabel(event.state)}${event.lastStartMs === undefined || event.state !== 'running' ? '' : ` (started in ${event.lastStartMs} ms)`}`;
    case 'servers_progress': return `servers ready ${event.ready}/${event.total}${event.failed ? `, ${event.failed} failed` : ''}`;
    default: return event.type;
  }
}

/**
 * A restart as a sentence: `echo restarted: #0 in 1263 ms`; `crashy: restart failed (start_failed)`.
 * An entry index below 0 (a restart that started no entry) is not shown.
 */
function describeRestart(event) {
  const entry = (e) => (e.entryIndex >= 0 ? `#${e.entryIndex} ` : '');
  const restarted = event.entries.filter((e) => e.restarted);
  const failed = event.entries.filter((e) => !e.restarted);
  const parts = [];
  if (restarted.length > 0) parts.push(`${event.serverName} restarted: ${restarted.map((e) => `${entry(e)}in ${e.durationMs} ms`).join(', ')}`);
  if (failed.length > 0) parts.push(`${event.serverName}: ${failed.map((e) => `${entry(e)}restart failed (${e.reason ?? 'skipped'})`).join(', ')}`);
  return parts.join('; ') || `${event.serverName}: nothing to restart`;
}

/** The server's own words in an error message: what follows `; stderr: ` (its last lines), else nothing. */
function stderrOf(message) {
  const at = message?.indexOf('; stderr: ') ?? -1;
  if (at === -1) return [];
  return message.slice(at + '; stderr: '.length).replace(/\)$/, '').split('\n').filter((line) => line.trim().length > 0);
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

const fixed = (value, digits) => (value === undefined ? '—' : value.toFixed(digits));
const latency = (ms) => (ms === undefined ? '—' : ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`);
const shortId = (id) => (id.length > 12 ? id.slice(0, 8) : id);
const clock = (iso) => new Date(iso).toLocaleTimeString();

/**
 * The tail of a server's stderr, read when the panel opens and again at every status poll while it
 * is open. A server with no live entry (it failed to start) has its last words in its last error:
 * those are shown instead.
 */
function StderrPanel({ name, tick, lastError }) {
  const [open, setOpen] = useState(false);
  const [tail, setTail] = useState(undefined);
  const [problem, setProblem] = useState(undefined);
  useEffect(() => {
    if (!open) return;
    let current = true;
    api(`/workspace/mcp/${encodeURIComponent(name)}/stderr?lines=${STDERR_LINES}`)
      .then((body) => {
        if (!current) return;
        setTail(body.entries);
        setProblem(undefined);
      })
      .catch((error) => current && setProblem(String(error.message)));
    return () => {
      current = false;
    };
  }, [open, name, tick]);
  const live = tail?.flatMap((entry) => (tail.length > 1 ? entry.lines.map((line) => `#${entry.entryIndex} ${line}`) : entry.lines)) ?? [];
  const fromError = tail && tail.length === 0 ? stderrOf(lastError?.message) : [];
  const lines = live.length > 0 ? live : fromError;
  return html`<details class="stderr" data-stderr=${name} onToggle=${(event) => setOpen(event.currentTarget.open)}>
    <summary>stderr of ${name}${open && tail ? ` (last ${lines.length} line${lines.length === 1 ? '' : 's'}${fromError.length > 0 && live.length === 0 ? ', from its last error: no live entry' : ''})` : ''}</summary>
    ${problem ? html`<p class="error">${problem}</p>` : null}
    ${open && tail && lines.length === 0 ? html`<p class="empty">Nothing on stderr${tail.length === 0 ? ' (no live entry)' : ''}.</p>` : null}
    ${lines.length > 0 ? html`<pre>${lines.join('\n')}</pre>` : null}
  </details>`;
}

function Servers({ servers, stats, onRestart, onAuthorize, busy, canWrite, tick }) {
  if (servers.length === 0) return html`<p class="empty">No servers configured.</p>`;
  const columns = 12;
  return html`<table class="servers">
    <thead><tr><th>Server</th><th>Status</th><th title="cold: listed from its catalog, not started · stopped (idle): let go while unused; the next call starts it">State</th><th>Entries</th><th>Refs</th><th>Restarts</th><th>Calls</th><th>Calls/s</th><th>p50</th><th>p95</th><th>Last error</th><th></th></tr></thead>
    <tbody>
      ${servers.flatMap((server) => {
        const stat = stats.get(server.name);
        const refs = server.entrySummary.reduce((sum, entry) => sum + entry.refs, 0);
        const window = stat?.sinceStart ? 'since the start (no call in the last interval)' : 'over the last interval';
        return [
          html`<tr data-server=${server.name}>
            <td class="name">${server.name}${server.transport ? html` <span class="muted">${server.transport}</span>` : null}</td>
            <td><span class=${`status ${server.status}`}>${server.status}</span></td>
            <td class="state">${server.state === undefined ? '—' : html`<span class=${`state ${server.state}`}>${stateLabel(server.state)}</span>`}${server.lastStartMs === undefined ? null : html` <span class="muted" title="how long its last start took, spawn to ready">${server.lastStartMs} ms</span>`}</td>
            <td class="entries">${server.entrySummary.length === 0 ? '—' : server.entrySummary.map((entry) => html`<div class="entry" data-entry=${entry.entryIndex}>
              #${entry.entryIndex} <span class=${`status ${entry.status}`}>${entry.status}</span> refs ${entry.refs} · <span class="tag era" title="protocol era">${entry.era ?? 'era ?'}</span> · <span class="tag sharing" title="who may share this process">${entry.sharing}</span>
            </div>`)}</td>
            <td class="refs">${refs}</td>
            <td class="restarts">${stat?.restarts ?? 0}</td>
            <td class="calls" title=${stat ? `${stat.errors} failed` : ''}>${stat?.calls ?? 0}</td>
            <td class="rate">${fixed(stat?.perSecond, 2)}</td>
            <td class="p50" title=${window}>${latency(stat?.p50Ms)}</td>
            <td class="p95" title=${window}>${latency(stat?.p95Ms)}</td>
            <td class="error">${server.lastError ? html`<code>${server.lastError.code}</code> ${server.lastError.message.split('; stderr: ')[0]}` : ''}${server.configProblem ? html`<div class="config-problem">config not applied (runs its previous one): <code>${server.configProblem.code}</code> ${server.configProblem.message}</div>` : ''}</td>
            <td>${server.errorKind === 'auth_required'
              ? html`<button type="button" class="authorize" disabled=${!canWrite || busy.has(server.name)} onClick=${() => onAuthorize(server.name)}>${busy.has(server.name) ? 'Starting…' : 'Authorize'}</button>`
              : html`<button type="button" disabled=${!canWrite || busy.has(server.name)} onClick=${() => onRestart(server.name)}>${busy.has(server.name) ? 'Restarting…' : 'Restart'}</button>`}</td>
          </tr>`,
          html`<tr class="stderr-row"><td colspan=${columns}><${StderrPanel} name=${server.name} tick=${tick} lastError=${server.lastError} /></td></tr>`,
        ];
      })}
    </tbody>
  </table>`;
}

function Sessions({ sessions, onCloseIdle, busy }) {
  if (sessions.length === 0) return html`<p class="empty">No sessions.</p>`;
  return html`<div class="bulk"><button type="button" class="close-idle" disabled=${busy} onClick=${onCloseIdle} title="End every session with nothing in flight (no call, no open stream); their MCP clients open a new one on their next request">${busy ? 'Ending…' : 'End idle sessions'}</button></div>
  <table class="sessions">
    <thead><tr><th>Client</th><th>MCP client</th><th>Kind</th><th>Session</th><th>Servers</th><th>Opened</th><th>Last activity</th></tr></thead>
    <tbody>${sessions.map((session) => html`<tr data-session=${session.id} data-kind=${session.kind} data-client=${session.clientId}>
      <td class="client">${session.clientId}</td>
      <td class="mcp-client">${session.client ? `${session.client.name} ${session.client.version}` : '—'}</td>
      <td class="kind"><span class="tag">${session.kind === 'mcp' ? `mcp${session.scope ? `/${session.scope}` : ''}` : 'rest'}</span></td>
      <td><code title=${session.id}>${shortId(session.id)}</code>${session.label ? ` ${session.label}` : ''}</td>
      <td class="held">${session.servers.map((s) => `${s.name}${s.status === 'connected' ? '' : ` (${s.status})`}`).join(', ') || '—'}</td>
      <td>${clock(session.createdAt)}</td>
      <td>${clock(session.lastActivityAt)}</td>
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
  const [stats, setStats] = useState(new Map());
  const [tick, setTick] = useState(0);
  const [busy, setBusy] = useState(new Set());
  const [notice, setNotice] = useState(undefined);
  const lastStats = useRef(undefined);

  const refresh = useCallback(async () => {
    try {
      const [next, list] = await Promise.all([api('/workspace/mcp'), api('/workspace/sessions')]);
      setStatus(next);
      setSessions(list.sessions);
      setSignedIn(true);
      setTick((n) => n + 1);
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
    const readStats = async () => {
      try {
        const current = await api('/workspace/stats');
        setStats(serverStats(lastStats.current, current));
        lastStats.current = current;
      } catch {
        // the figures are a nicety: the table still shows without them
      }
    };
    void readStats();
    const statsTimer = setInterval(readStats, STATS_POLL_MS);
    return () => {
      clearInterval(timer);
      clearInterval(statsTimer);
      source.close();
    };
  }, [signedIn, refresh]);

  /** Runs a server action with its button marked busy; a failure becomes the notice. */
  const act = useCallback(async (name, what, task) => {
    setBusy((set) => new Set(set).add(name));
    try {
      setNotice(await task());
    } catch (error) {
      setNotice(`${what} ${name}: ${error.message}`);
    } finally {
      setBusy((set) => {
        const next = new Set(set);
        next.delete(name);
        return next;
      });
    }
  }, []);

  const restart = useCallback((name) => act(name, 'restart', async () => {
    try {
      await api(`/workspace/mcp/${encodeURIComponent(name)}/restart`, { method: 'POST', body: '{}' });
      return undefined;
    } finally {
      void refresh();
    }
  }), [act, refresh]);

  // The daemon validated the URL (https, or http on loopback) before answering with it.
  const authorize = useCallback((name) => act(name, 'authorize', async () => {
    const start = await api(`/workspace/mcp/${encodeURIComponent(name)}/auth`, { method: 'POST', body: '{}' });
    window.open(start.authorizationUrl, '_blank', 'noopener,noreferrer');
    return `authorize ${name} in the tab that opened (or open ${start.authorizationUrl})`;
  }), [act]);

  const closeIdle = useCallback(() => act(':sessions', 'end idle', async () => {
    try {
      const { closed } = await api('/workspace/sessions/close-idle', { method: 'POST', body: '{}' });
      return closed.length === 0 ? 'no idle session' : `ended ${closed.length} idle session(s)`;
    } finally {
      void refresh();
    }
  }), [act, refresh]);

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
      <span class="sessions-count">${sessions.length} session(s)</span>
      <button type="button" class="signout" onClick=${signOut}>Sign out</button>
    </header>
    ${notice ? html`<p class="notice" role="alert">${notice}</p>` : null}
    <section><h2>Servers</h2><${Servers} servers=${status?.servers ?? []} stats=${stats} onRestart=${restart} onAuthorize=${authorize} busy=${busy} canWrite=${true} tick=${tick} /></section>
    <section class="columns">
      <div><h2>Sessions</h2><${Sessions} sessions=${sessions} onCloseIdle=${closeIdle} busy=${busy.has(':sessions')} /></div>
      <div><h2>Live events</h2><${Events} events=${events} /></div>
    </section>
  </main>`;
}

render(html`<${App} />`, document.getElementById('app'));
