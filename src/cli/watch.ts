// `status --watch`: the live view, fed by the agent's server-sent events (GET /v1/watch),
// never by polling: redrawn in place on a terminal, otherwise a line per change.
import type { AgentEvent } from '../events/history.js';
import { connectError } from '../status/client.js';
import { renderBrief, renderHuman, type StatusReport } from '../status/report.js';
import { askAgent } from './ask.js';
import type { CommandResult, ExitCode } from './exit-codes.js';
import { renderEvent } from './events.js';

// Not imported: on Node 24 an import of node:http loads its bundled undici, 14 MB of RSS (docs/benchmarks.md).
const http = process.getBuiltinModule('node:http');

/** Three missed heartbeats: the connection is dead even if no one said so. */
const IDLE_MS = 45_000;
const SHOWN_EVENTS = 8;
const CLEAR = '\x1b[H\x1b[2J';

export interface WatchOutput {
  write(text: string): void;
  isTTY: boolean;
}

export function renderScreen(s: StatusReport, events: AgentEvent[], socket: string): string {
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

/** Follows the agent until the connection ends; resolves with the exit code (2: the agent went away). */
export function watchStatus(socket: string, out: WatchOutput, err: (text: string) => void): Promise<ExitCode> {
  return new Promise((resolve, reject) => {
    let status: StatusReport | undefined;
    const events: AgentEvent[] = [];
    let lastBrief = '';
    const show = (kind: string, data: unknown) => {
      if (kind === 'status') status = data as StatusReport;
      if (kind === 'event') {
        events.push(data as AgentEvent);
        if (events.length > SHOWN_EVENTS) events.shift();
      }
      if (out.isTTY) {
        if (status) out.write(CLEAR + renderScreen(status, events, socket));
        return;
      }
      if (kind === 'event') out.write(renderEvent(data as AgentEvent) + '\n');
      if (kind === 'status' && status && renderBrief(status) !== lastBrief) {
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
        return resolve(2);
      }
      req.setTimeout(IDLE_MS);
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const kind = /^event: (\w+)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (kind && data) show(kind, JSON.parse(data) as unknown);
        }
      });
      // A stopping agent cuts the connection: 'end' or an aborted response, 'close' either way.
      res.on('error', () => undefined);
      res.on('close', () => {
        err(`ovn-gwmode-agent: the agent on ${socket} ended the watch (stopping?)\n`);
        resolve(2);
      });
    });
    req.on('timeout', () =>
      req.destroy(new Error(status ? `no word from the agent for ${IDLE_MS / 1000} s` : 'timed out')),
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (status !== undefined) {
        err(`ovn-gwmode-agent: lost the agent on ${socket}: ${e.message}\n`);
        return resolve(2);
      }
      reject(connectError(socket, e));
    });
  });
}

/** `status --watch`: until the agent goes away (exit 2) or ctrl-c. A stream: it writes as it goes, and returns only the code. */
export function watchCommand(opts: { socket: string }): Promise<CommandResult> {
  return askAgent(async () => ({
    code: await watchStatus(
      opts.socket,
      { write: (t) => process.stdout.write(t), isTTY: process.stdout.isTTY === true },
      (t) => process.stderr.write(t),
    ),
  }));
}
