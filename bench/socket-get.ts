// What the start and footprint benchmarks share: a GET on the agent's UNIX socket, and a
// field of /proc/PID/status.
import { readFileSync } from 'node:fs';
import http from 'node:http';

/** GET urlPath on a UNIX socket (through agent, for keep-alive): the HTTP status, 0 when it failed. */
export function socketGet(socket: string, urlPath: string, agent?: http.Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath: socket, path: urlPath, ...(agent ? { agent } : {}) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

/** A kB field (VmRSS, RssAnon, ...) of /proc/PID/status. */
export const statusKb = (pid: number, field: string): number =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
