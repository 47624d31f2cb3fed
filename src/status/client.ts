// The CLI's side of the status socket.
import http from 'node:http';
import type { StatusReport } from './report.js';

export class AgentUnreachableError extends Error {
  readonly code = 'ERR_GWMODE_UNREACHABLE';
}

/** GET a path of the agent's socket: the HTTP status code and the parsed JSON body. */
export function fetchPath(socket: string, urlPath: string, timeoutMs = 5000): Promise<{ code: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: socket, path: urlPath, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        try {
          resolve({ code: res.statusCode ?? 0, body: JSON.parse(body) as unknown });
        } catch (err) {
          reject(new AgentUnreachableError(`bad answer on ${socket}: ${(err as Error).message}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new AgentUnreachableError(`cannot reach the agent on ${socket} (${err.code ?? err.message}): is the agent running?`)),
    );
  });
}

export async function fetchStatus(socket: string, timeoutMs = 5000): Promise<StatusReport> {
  return (await fetchPath(socket, '/status', timeoutMs)).body as StatusReport;
}
