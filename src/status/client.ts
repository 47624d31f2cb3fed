// The CLI's side of the status socket: one GET per call, over node:http's socketPath.
import type { StatusReport } from './report.js';

// Not imported: on Node 24 an import of node:http loads its bundled undici, 14 MB of RSS (docs/benchmarks.md).
export const http = process.getBuiltinModule('node:http');

export class AgentUnreachableError extends Error {
  readonly code = 'ERR_GWMODE_UNREACHABLE';
}

/** The agent may well be running: the socket (or its directory) is closed to this caller. */
export class AgentDeniedError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_DENIED';
}

/** The agent's answers are a few kilobytes (a status report, 256 events): anything past this is not the agent. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** What a failed connection (or request) to the socket means for the caller: denied, or no agent there. */
export function connectError(socket: string, err: NodeJS.ErrnoException): Error {
  if (err.code === 'EACCES' || err.code === 'EPERM')
    return new AgentDeniedError(
      `permission denied on ${socket} (${err.code}): the caller must be root or in the socket's group`,
    );
  if (err.code?.startsWith('HPE_')) return new AgentUnreachableError(`bad answer on ${socket}: not an HTTP answer`);
  return new AgentUnreachableError(
    `cannot reach the agent on ${socket} (${err.code ?? err.message}): is the agent running?`,
  );
}

/**
 * GET a path of the agent's socket: the HTTP status code and the parsed JSON body. A UNIX socket
 * whose backlog is full fails a connect at once with EAGAIN (TCP would wait): an agent busy for a
 * moment under a burst of connects, retried, later each time, within timeoutMs (a duration: on the
 * monotonic clock, which NTP does not step).
 */
export async function fetchPath(
  socket: string,
  urlPath: string,
  timeoutMs = 5000,
): Promise<{ code: number; body: unknown }> {
  const deadline = performance.now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      return await getOnce(socket, urlPath, Math.max(1, Math.ceil(deadline - performance.now())));
    } catch (err) {
      if (err instanceof AgentUnreachableError) throw err;
      const e = err as NodeJS.ErrnoException;
      if (e.code !== 'EAGAIN' || performance.now() + wait >= deadline) throw connectError(socket, e);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** One GET; rejects with node:http's error as it is, or with an AgentUnreachableError for a bad answer. */
function getOnce(socket: string, urlPath: string, timeoutMs: number): Promise<{ code: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const bad = (why: string) => reject(new AgentUnreachableError(`bad answer on ${socket}: ${why}`));
    // agent: false, a connection of its own, closed after the answer.
    const req = http.get({ socketPath: socket, path: urlPath, timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (d: Buffer) => {
        chunks.push(d);
        if ((received += d.length) <= MAX_ANSWER_BYTES) return;
        bad(`longer than ${MAX_ANSWER_BYTES} bytes`);
        req.destroy();
      });
      res.on('end', () => {
        try {
          resolve({ code: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
        } catch (err) {
          bad((err as Error).message);
        }
      });
      res.on('error', (err) => bad(err.message));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

export const fetchStatus = async (socket: string, timeoutMs = 5000): Promise<StatusReport> =>
  (await fetchPath(socket, '/status', timeoutMs)).body as StatusReport;
