// GET /v1/watch: server-sent events for the live view (`status --watch`): on connect the last
// events and the status; then `status` whenever the report changed (the time of the last pass
// aside: a quiet node sends nothing) and each new `event`. No polling on either side; a comment
// line every 15 s tells a quiet agent from a dead connection. Watchers are few (a person at a
// terminal): past MAX_WATCHERS the answer is 503.
import type http from 'node:http';
import type { StatusReport } from '../status/report.js';
import type { AgentEvent, EventHistory } from './history.js';

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
    history.onEvent((e: AgentEvent) => this.broadcast(frame('event', e)));
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
