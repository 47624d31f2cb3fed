// The commands that ask a running agent over its socket: `status`, `health`, `events`.
// Probes and people run them often, so this module loads only the socket client and the
// renderers: no kernel, no logger, no yargs, not even node:http (src/cli/dispatch.ts decides
// what loads; `status --watch`, a stream, is in watch.ts).
import { systemClock } from '../clock.js';
import { AgentDeniedError, AgentUnreachableError, fetchPath, fetchStatus } from '../status/client.js';
import { exitCodeOf, renderBrief, renderHuman } from '../status/report.js';
import { fetchEvents, renderEvent, UsageError } from './events.js';

/** Runs a socket client; an agent unreachable or closed to us is exit 2 with the message, on stderr. */
export async function askAgent(fn: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await fn();
  } catch (err) {
    if (!(err instanceof AgentUnreachableError || err instanceof AgentDeniedError)) throw err;
    process.stderr.write(`ovn-gwmode-agent: ${err.message}\n`);
    process.exitCode = 2;
  }
}

export function statusCommand(opts: { socket: string; json: boolean; brief: boolean }): Promise<void> {
  return askAgent(async () => {
    const s = await fetchStatus(opts.socket);
    process.stdout.write((opts.json ? JSON.stringify(s, null, 2) : opts.brief ? renderBrief(s) : renderHuman(s)) + '\n');
    return exitCodeOf(s);
  });
}

/** `events [--json] [--since DURATION]`: exit 0, or 2 when the agent cannot be asked. */
export async function eventsCommand(opts: { socket: string; json: boolean; since: string | undefined }): Promise<void> {
  try {
    await askAgent(async () => {
      const { code, events } = await fetchEvents(opts.socket, opts.since, systemClock.wall());
      if (code !== 200) {
        process.stderr.write(`ovn-gwmode-agent: the agent on ${opts.socket} answered ${code} for /v1/events: is it older than this command?\n`);
        return 2;
      }
      process.stdout.write(opts.json ? JSON.stringify(events, null, 2) + '\n' : events.map((e) => renderEvent(e) + '\n').join(''));
      return 0;
    });
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`ovn-gwmode-agent: ${err.message}; see --help\n`);
    process.exitCode = 2;
  }
}

/** `health [--ready]`: the probe for kubelet. Exit 0 healthy (or ready), 1 not, 2 unreachable. */
export function healthCommand(opts: { socket: string; ready: boolean }): Promise<void> {
  return askAgent(async () => {
    const { code, body } = await fetchPath(opts.socket, opts.ready ? '/readyz' : '/healthz');
    process.stdout.write(JSON.stringify(body) + '\n');
    return code === 200 ? 0 : 1;
  });
}
