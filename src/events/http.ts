// GET /v1/events[?since=RFC3339]: the event history, oldest first.
import type http from 'node:http';
import type { EventHistory } from './history.js';

function json(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body, null, 2) + '\n';
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function serveEvents(history: EventHistory, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return json(res, 405, { error: `method ${req.method} not allowed` });
  }
  const since = new URL(req.url ?? '/', 'http://agent').searchParams.get('since');
  const at = since === null ? undefined : Date.parse(since);
  if (at !== undefined && Number.isNaN(at))
    return json(res, 400, { error: `since: "${since}" is not an RFC 3339 time` });
  json(res, 200, { events: history.list(at) });
}
