// `ovn-gwmode-agent events [--json] [--since DURATION]`: what the agent did on this
// node, oldest first, from its ring of the last 256 events (GET /v1/events).
import { parseDuration } from '../config/duration.js';
import type { AgentEvent } from '../events/history.js';
import { fetchPath } from '../status/client.js';
import { UsageError } from './exit-codes.js';

/** One line per event, the time first: `2026-12-02T11:53:28.285Z replace 10.96.0.0/16 via ... -> via ... (done)`. */
export function renderEvent(e: AgentEvent): string {
  const what = (() => {
    switch (e.kind) {
      case 'phase':
        return `phase ${e.from ?? '-'} -> ${e.to} [${(e.reasons ?? []).join(', ')}]`;
      case 'desired-mode':
        return `desired mode ${e.from ?? 'none'} -> ${e.to}`;
      case 'replace':
        return `replace ${e.cidr}: ${e.before} -> ${e.after} (${e.result}${e.code ? ` ${e.code}` : ''})`;
      case 'restart':
        return `restart ovnkube-node (${e.strategy}, to ${e.mode}): ${e.result}${e.target ? ` ${e.target}` : ''}${e.code ? ` ${e.code}` : ''}`;
      case 'reconcile-failed':
        return `reconcile failed (${e.code})`;
      case 'mode-file-invalid':
        return 'mode file invalid: the last valid mode, if any, is kept (none: nothing is done)';
      case 'notifications-lost':
        return 'netlink notifications lost: full resync';
    }
  })();
  return `${e.at} ${what}`;
}

/** The events the agent has, within `since` (a duration, measured back from `now`) when given. */
export async function fetchEvents(
  socket: string,
  since: string | undefined,
  now: number,
): Promise<{ code: number; events: AgentEvent[] }> {
  let query = '';
  if (since !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(since);
    } catch (err) {
      throw new UsageError(`--since: ${(err as Error).message}`);
    }
    query = `?since=${encodeURIComponent(new Date(now - ms).toISOString())}`;
  }
  const { code, body } = await fetchPath(socket, `/v1/events${query}`);
  return { code, events: code === 200 ? (body as { events: AgentEvent[] }).events : [] };
}
