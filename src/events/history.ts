// What the agent did, as a story: the last 256 transitions in a ring buffer, served on GET
// /v1/events, each also logged as one line with the same fields. Fed by the recorder hooks, as
// the metrics are, and by the status reports (phase changes). Times come from the injected clock.
import type http from 'node:http';
import type { Logger } from 'pino';
import type { AgentRecorder, ReplaceRecord, RestartRecord } from '../core/recorder.js';
import type { Clock } from '../clock.js';
import type { ReasonCode } from '../core/reasons.js';
import type { GatewayMode } from '../core/types.js';
import type { StatusReport } from '../status/report.js';
import { sendJson } from '../status/server.js';

export const HISTORY_SIZE = 256;

export type EventKind =
  'phase' | 'desired-mode' | 'mode-file-invalid' | 'replace' | 'restart' | 'notifications-lost' | 'reconcile-failed';

export interface AgentEvent {
  /** Increases by one per event for the life of the process: a gap means the ring dropped some. */
  seq: number;
  at: string;
  kind: EventKind;
  from?: string | null;
  to?: string | null;
  /** Reason codes after a phase change. */
  reasons?: ReasonCode[];
  cidr?: string;
  /** The route before and after, for replaces. */
  before?: string;
  after?: string;
  /** replace: done, failed, put_back, put_back_failed; restart: stopped, failed, completed. */
  result?: string;
  code?: string | null;
  mode?: GatewayMode | null;
  strategy?: string;
  target?: string | null;
  /** notifications-lost: how many losses in a row this one event stands for. */
  count?: number;
}

export class EventHistory implements AgentRecorder {
  private readonly ring: AgentEvent[] = [];
  private seq = 0;
  private last: { phase: string; codes: string } | null = null;
  private lastError: string | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly size = HISTORY_SIZE,
  ) {}

  private add(e: Omit<AgentEvent, 'seq' | 'at'>): void {
    const event: AgentEvent = { seq: ++this.seq, at: new Date(this.clock.wall()).toISOString(), ...e };
    this.ring.push(event);
    if (this.ring.length > this.size) this.ring.shift();
    this.log.info({ event }, `event ${event.kind}`);
    this.onEvent?.(event);
  }

  /** Events at or after `since` (ms since the epoch), oldest first. */
  list(since?: number): AgentEvent[] {
    return since === undefined ? [...this.ring] : this.ring.filter((e) => Date.parse(e.at) >= since);
  }

  /** Called with each new event (the live view). */
  onEvent?: (e: AgentEvent) => void;

  /** A phase change, or the same phase for other reasons (by code: messages that only count do not count). */
  onStatus(s: StatusReport): void {
    const now = { phase: s.phase, codes: s.reasonCodes.join(',') };
    if (this.last?.phase === now.phase && this.last.codes === now.codes) return;
    this.add({ kind: 'phase', from: this.last?.phase ?? null, to: s.phase, reasons: s.reasonCodes });
    this.last = now;
  }

  replace(r: ReplaceRecord): void {
    const { cidr, mode, before, after, result, code } = r;
    this.add({ kind: 'replace', cidr, mode, before, after, result, code });
  }

  restart(r: RestartRecord): void {
    this.add({ kind: 'restart', strategy: r.strategy, mode: r.mode, result: r.result, target: r.target, code: r.code });
  }

  desiredModeChanged(from: GatewayMode | null, to: GatewayMode): void {
    this.add({ kind: 'desired-mode', from, to });
  }

  modeFileError(_path: string): void {
    this.add({ kind: 'mode-file-invalid' });
  }

  /** Losses in a row are one event with a count: an ENOBUFS storm must not push the migration's story out of the ring. */
  notificationsLost(): void {
    const newest = this.ring[this.ring.length - 1];
    if (newest?.kind === 'notifications-lost') newest.count = (newest.count ?? 1) + 1;
    else this.add({ kind: 'notifications-lost', count: 1 });
  }

  /** A failing pass is an event when it starts failing, or fails otherwise; retries of the same failure are not. */
  reconciled(_startedAt: number, _endedAt: number, errorCode: string | null): void {
    if (errorCode !== null && errorCode !== this.lastError) this.add({ kind: 'reconcile-failed', code: errorCode });
    this.lastError = errorCode;
  }
}

/** GET /v1/events[?since=RFC3339]: the event history, oldest first. */
export function serveEvents(history: EventHistory, req: http.IncomingMessage, res: http.ServerResponse): void {
  const since = new URL(req.url ?? '/', 'http://agent').searchParams.get('since');
  const at = since === null ? undefined : Date.parse(since);
  if (at !== undefined && Number.isNaN(at))
    return sendJson(res, 400, { error: `since: "${since}" is not an RFC 3339 time` });
  sendJson(res, 200, { events: history.list(at) });
}

// GET /v1/watch: server-sent events for the live view (`status --watch`): on connect the last
// events and the status; then `status` whenever the report changed (the time of the last pass
// aside: a quiet node sends nothing) and each new `event`. No polling on either side; a comment
// line every 15 s tells a quiet agent from a dead connection. Watchers are few (a person at a
// terminal): past MAX_WATCHERS the answer is 503.
export const MAX_WATCHERS = 8;
export const MAX_UNREAD_BYTES = 1 << 20;
export const HEARTBEAT_MS = 15_000;
/** Events sent on connect, so that a new view is not empty. */
const BACKLOG = 10;

const frame = (kind: 'status' | 'event', data: unknown) => `event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;
const withoutTime = (s: StatusReport) => JSON.stringify({ ...s, lastReconcile: null });

export class WatchHub {
  private readonly clients = new Set<http.ServerResponse>();
  private last = '';

  constructor(
    private readonly history: EventHistory,
    private readonly status: () => StatusReport,
  ) {
    history.onEvent = (e) => this.broadcast(frame('event', e));
  }

  onStatus(s: StatusReport): void {
    const key = withoutTime(s);
    if (key === this.last) return;
    this.last = key;
    this.broadcast(frame('status', s));
  }

  /** A watcher that stopped reading (suspended, piped into a pager) is cut before its buffer grows without end. */
  private broadcast(text: string): void {
    for (const res of this.clients) {
      if (res.writableLength > MAX_UNREAD_BYTES) {
        this.clients.delete(res);
        res.destroy();
        continue;
      }
      res.write(text);
    }
  }

  serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const plain = { 'content-type': 'text/plain' };
    if (req.method !== 'GET')
      return void res.writeHead(405, { allow: 'GET', ...plain }).end(`method ${req.method} not allowed\n`);
    if (this.clients.size >= MAX_WATCHERS)
      return void res.writeHead(503, plain).end(`already ${MAX_WATCHERS} watchers\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // The story so far, then where it stands.
    const backlog = this.history.list().slice(-BACKLOG);
    res.write(backlog.map((e) => frame('event', e)).join('') + frame('status', this.status()));
    this.clients.add(res);
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    res.on('close', () => {
      clearInterval(heartbeat);
      this.clients.delete(res);
    });
  }
}
