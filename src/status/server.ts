// The status API on a local UNIX socket (node:http). The socket is 0660 in a 0750
// directory: only root and the socket's group may ask. A socket file left by a
// killed agent is detected (nobody answers on it) and replaced; a live one means
// another agent is running, and this one must not start.
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { StatusReport } from './report.js';

export class SocketInUseError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_IN_USE';
}

export interface StatusHandlers {
  status: () => StatusReport;
  alive: () => boolean;
  ready: () => boolean;
}

function probeLive(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(socket);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

async function clearStale(socket: string): Promise<void> {
  let info;
  try {
    info = await lstat(socket);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!info.isSocket()) throw new SocketInUseError(`${socket} exists and is not a socket: not removing it`);
  if (await probeLive(socket)) throw new SocketInUseError(`another agent is serving on ${socket}`);
  await unlink(socket);
}

function send(res: http.ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body, null, 2) + '\n';
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export class StatusServer {
  private readonly server: http.Server;

  private constructor(
    readonly socket: string,
    handlers: StatusHandlers,
  ) {
    this.server = http.createServer((req, res) => {
      const url = (req.url ?? '/').split('?')[0];
      const routes: Record<string, () => void> = {
        '/status': () => send(res, 200, handlers.status()),
        '/healthz': () => (handlers.alive() ? send(res, 200, { ok: true }) : send(res, 503, { ok: false, error: 'the reconcile loop is stuck' })),
        '/readyz': () => (handlers.ready() ? send(res, 200, { ready: true }) : send(res, 503, { ready: false, error: 'first reconcile not done yet' })),
      };
      const route = url === undefined ? undefined : routes[url];
      if (!route) return send(res, 404, { error: `no such path: ${url}`, paths: Object.keys(routes) });
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return send(res, 405, { error: `method ${req.method} not allowed` }, { allow: 'GET, HEAD' });
      }
      route();
    });
  }

  static async listen(socket: string, handlers: StatusHandlers): Promise<StatusServer> {
    const dir = path.dirname(socket);
    // A directory we create is 0750 whatever the umask; one that exists (systemd's
    // RuntimeDirectory, a hostPath) keeps the mode its owner gave it.
    const created = await mkdir(dir, { recursive: true, mode: 0o750 });
    if (created !== undefined) await chmod(dir, 0o750);
    await clearStale(socket);
    const s = new StatusServer(socket, handlers);
    await new Promise<void>((resolve, reject) => {
      s.server.once('error', (err: NodeJS.ErrnoException) =>
        reject(err.code === 'EADDRINUSE' ? new SocketInUseError(`another agent is serving on ${socket}`) : err),
      );
      s.server.listen(socket, () => resolve());
    });
    await chmod(socket, 0o660);
    return s;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await unlink(this.socket).catch(() => undefined);
  }
}
