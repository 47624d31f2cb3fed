// The CLI's side of the status socket.
import http from 'node:http';
import type { StatusReport } from './report.js';

export class AgentUnreachableError extends Error {
  readonly code = 'ERR_GWMODE_UNREACHABLE';
}

/** The agent may well be running: the socket (or its directory) is closed to this caller. */
export class AgentDeniedError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_DENIED';
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
      reject(
        err.code === 'EACCES' || err.code === 'EPERM'
          ? new AgentDeniedError(`permission denied on ${socket} (${err.code}): the caller must be root or in the socket's group`)
          : new AgentUnreachableError(`cannot reach the agent on ${socket} (${err.code ?? err.message}): is the agent running?`),
      ),
    );
  });
}

export async function fetchStatus(socket: string, timeoutMs = 5000): Promise<StatusReport> {
  return (await fetchPath(socket, '/status', timeoutMs)).body as StatusReport;
}
