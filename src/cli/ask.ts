// The commands that ask a running agent over its socket: `status` (`--watch` is fed by the
// agent's server-sent events, never by polling), `health` and `events`; never the kernel's code.
import { parseDuration, systemClock } from '../clock.js';
import type { AgentEvent } from '../events/history.js';
import { connectError, fetchPath, fetchStatus, http } from '../status/client.js';
import { exitCodeOf, renderBrief, renderHuman, type StatusReport } from '../status/report.js';
import { UsageError, type CommandResult } from './exit-codes.js';

// An agent unreachable or closed to us throws a typed error: exit 2 with its message (exit-codes.ts).
export async function statusCommand(opts: { socket: string; json?: boolean; brief?: boolean }): Promise<CommandResult> {
  const s = await fetchStatus(opts.socket);
  return {
    code: exitCodeOf(s) === 0 ? 0 : 1,
    stdout: (opts.json ? JSON.stringify(s, null, 2) : opts.brief ? renderBrief(s) : renderHuman(s)) + '\n',
  };
}

/** `health [--ready]`: the probe for kubelet. Exit 0 healthy (or ready), 1 not, 2 unreachable. */
export async function healthCommand(opts: { socket: string; ready: boolean }): Promise<CommandResult> {
  const { code, body } = await fetchPath(opts.socket, opts.ready ? '/readyz' : '/healthz');
  return { code: code === 200 ? 0 : 1, stdout: JSON.stringify(body) + '\n' };
}

/** One line per event, the time first: `2026-12-02T11:53:28.285Z replace 10.96.0.0/16: ... -> ... (done)`. */
export function renderEvent(e: AgentEvent): string {
  const code = e.code ? ` ${e.code}` : '';
  const what: Record<AgentEvent['kind'], () => string> = {
    phase: () => `phase ${e.from ?? '-'} -> ${e.to} [${(e.reasons ?? []).join(', ')}]`,
    'desired-mode': () => `desired mode ${e.from ?? 'none'} -> ${e.to}`,
    replace: () => `replace ${e.cidr}: ${e.before} -> ${e.after} (${e.result}${code})`,
    restart: () =>
      `restart ovnkube-node (${e.strategy}, to ${e.mode}): ${e.result}${e.target ? ` ${e.target}` : ''}${code}`,
    'reconcile-failed': () => `reconcile failed (${e.code})`,
    'mode-file-invalid': () => 'mode file invalid: the last valid mode, if any, is kept (none: nothing is done)',
    'notifications-lost': () => 'netlink notifications lost: full resync',
  };
  return `${e.at} ${what[e.kind]()}`;
}

/** `events [--json] [--since DURATION]`: the agent's last 256 events (GET /v1/events), oldest first; exit 0, or 2. */
export async function eventsCommand(opts: { socket: string; json?: boolean; since?: string }): Promise<CommandResult> {
  const since = (text: string) => {
    try {
      return new Date(systemClock.wall() - parseDuration(text)).toISOString();
    } catch (err) {
      throw new UsageError(`--since: ${(err as Error).message}`);
    }
  };
  const query = opts.since === undefined ? '' : `?since=${encodeURIComponent(since(opts.since))}`;
  const { code, body } = await fetchPath(opts.socket, `/v1/events${query}`);
  const older = `the agent on ${opts.socket} answered ${code} for /v1/events: is it older than this command?`;
  if (code !== 200) return { code: 2, stderr: `ovn-gwmode-agent: ${older}\n` };
  const { events } = body as { events: AgentEvent[] };
  const text = opts.json ? JSON.stringify(events, null, 2) + '\n' : events.map((e) => renderEvent(e) + '\n').join('');
  return { code: 0, stdout: text };
}

/** Three missed heartbeats: the connection is dead even if no one said so. */
const IDLE_MS = 45_000;
const SHOWN_EVENTS = 8;
const CLEAR = '\x1b[H\x1b[2J';

function renderScreen(s: StatusReport, events: AgentEvent[], socket: string): string {
  const lines = [
    `ovn-gwmode-agent on ${socket} (live; ctrl-c to quit)`,
    '',
    renderHuman(s),
    `pending restart: ${s.restart?.required ? `yes (${s.restart.migration?.restart ?? 'owed'})` : 'no'}`,
    'last events:',
    ...(events.length ? events.slice(-SHOWN_EVENTS).map((e) => `  ${renderEvent(e)}`) : ['  (none yet)']),
  ];
  return lines.join('\n') + '\n';
}

/**
 * `status --watch`: follows the agent (GET /v1/watch) until it goes away (exit 2) or ctrl-c, redrawn
 * in place on a terminal, a line per change otherwise. A stream: it writes as it goes, returns only the code.
 */
export function watchCommand({ socket }: { socket: string }): Promise<CommandResult> {
  const out = process.stdout;
  const err = (text: string) => process.stderr.write(text);
  return new Promise((resolve, reject) => {
    let status: StatusReport | undefined;
    const events: AgentEvent[] = [];
    let lastBrief = '';
    const show = (kind: string, data: unknown) => {
      if (kind === 'status') status = data as StatusReport;
      if (kind === 'event') events.splice(0, events.push(data as AgentEvent) - SHOWN_EVENTS);
      if (out.isTTY) {
        if (status) out.write(CLEAR + renderScreen(status, events, socket));
      } else if (kind === 'event') out.write(renderEvent(data as AgentEvent) + '\n');
      else if (status && renderBrief(status) !== lastBrief) {
        lastBrief = renderBrief(status);
        out.write(`${new Date().toISOString()} ${lastBrief}\n`);
      }
    };
    const req = http.get({ socketPath: socket, path: '/v1/watch', timeout: 5000 }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        err(
          `ovn-gwmode-agent: the agent on ${socket} answered ${res.statusCode} for /v1/watch${res.statusCode === 404 ? ': is it older than this command?' : ''}\n`,
        );
        return resolve({ code: 2 });
      }
      req.setTimeout(IDLE_MS);
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const blocks = (buffer + chunk).split('\n\n');
        buffer = blocks.pop() ?? '';
        for (const block of blocks) {
          const kind = /^event: (\w+)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (kind && data) show(kind, JSON.parse(data) as unknown);
        }
      });
      // A stopping agent cuts the connection: 'end' or an aborted response, 'close' either way.
      res.on('error', () => undefined);
      res.on('close', () => {
        err(`ovn-gwmode-agent: the agent on ${socket} ended the watch (stopping?)\n`);
        resolve({ code: 2 });
      });
    });
    req.on('timeout', () =>
      req.destroy(new Error(status ? `no word from the agent for ${IDLE_MS / 1000} s` : 'timed out')),
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (status === undefined) return reject(connectError(socket, e));
      err(`ovn-gwmode-agent: lost the agent on ${socket}: ${e.message}\n`);
      resolve({ code: 2 });
    });
  });
}
