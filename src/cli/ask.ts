// The commands that ask a running agent over its socket: `status`, `health`, `events`.
// They load the socket client and the renderers, never the kernel's code (`status --watch`,
// a stream, is in watch.ts).
import { systemClock } from '../clock.js';
import { fetchPath, fetchStatus } from '../status/client.js';
import { exitCodeOf, renderBrief, renderHuman } from '../status/report.js';
import { failure, type CommandResult } from './exit-codes.js';
import { fetchEvents, renderEvent } from './events.js';

/** Runs a socket client; an agent unreachable or closed to us is exit 2 with the message (exit-codes.ts). */
export async function askAgent(fn: () => Promise<CommandResult>): Promise<CommandResult> {
  try {
    return await fn();
  } catch (err) {
    return failure(err);
  }
}

export function statusCommand(opts: { socket: string; json?: boolean; brief?: boolean }): Promise<CommandResult> {
  return askAgent(async () => {
    const s = await fetchStatus(opts.socket);
    return {
      code: exitCodeOf(s) === 0 ? 0 : 1,
      stdout: (opts.json ? JSON.stringify(s, null, 2) : opts.brief ? renderBrief(s) : renderHuman(s)) + '\n',
    };
  });
}

/** `events [--json] [--since DURATION]`: exit 0, or 2 when the agent cannot be asked or --since is no duration. */
export function eventsCommand(opts: { socket: string; json?: boolean; since?: string }): Promise<CommandResult> {
  return askAgent(async () => {
    const { code, events } = await fetchEvents(opts.socket, opts.since, systemClock.wall());
    if (code !== 200)
      return {
        code: 2,
        stderr: `ovn-gwmode-agent: the agent on ${opts.socket} answered ${code} for /v1/events: is it older than this command?\n`,
      };
    return {
      code: 0,
      stdout: opts.json ? JSON.stringify(events, null, 2) + '\n' : events.map((e) => renderEvent(e) + '\n').join(''),
    };
  });
}

/** `health [--ready]`: the probe for kubelet. Exit 0 healthy (or ready), 1 not, 2 unreachable. */
export function healthCommand(opts: { socket: string; ready: boolean }): Promise<CommandResult> {
  return askAgent(async () => {
    const { code, body } = await fetchPath(opts.socket, opts.ready ? '/readyz' : '/healthz');
    return { code: code === 200 ? 0 : 1, stdout: JSON.stringify(body) + '\n' };
  });
}
