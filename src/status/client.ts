// The CLI's side of the status socket.
import http from 'node:http';
import type { StatusReport } from './report.js';

export class AgentUnreachableError extends Error {
  readonly code = 'ERR_GWMODE_UNREACHABLE';
}

export function fetchStatus(socket: string, timeoutMs = 5000): Promise<StatusReport> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: socket, path: '/status', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as StatusReport);
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
