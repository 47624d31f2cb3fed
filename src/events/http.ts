// GET /v1/events[?since=RFC3339]: the event history, oldest first.
import type http from 'node:http';
import { sendJson } from '../status/server.js';
import type { EventHistory } from './history.js';

export function serveEvents(history: EventHistory, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return sendJson(res, 405, { error: `method ${req.method} not allowed` }, { allow: 'GET, HEAD' });
  const since = new URL(req.url ?? '/', 'http://agent').searchParams.get('since');
  const at = since === null ? undefined : Date.parse(since);
  if (at !== undefined && Number.isNaN(at))
    return sendJson(res, 400, { error: `since: "${since}" is not an RFC 3339 time` });
  sendJson(res, 200, { events: history.list(at) });
}
