// The status API on a local UNIX socket (node:http). The socket is 0660 in a 0750
// directory: only root and the socket's group (--socket-group) may ask. A socket file
// left by a killed agent is detected (the kernel refuses connections to it) and
// replaced; anything else means someone may be serving on it, and this agent must not start.
//
// Under abuse (every caller is root or in the group, but a buggy or hostile one must
// not blind the probes):
//  1. Every answer comes from the route table, in memory: no path reads a file, and a
//     name such as `__proto__` is no route (own keys only).
//  2. Only GET and HEAD; any other method is 405 whatever the path, before routing.
//  3. The URL is capped (414); the request line and headers, their timeouts and the
//     connection cap with eviction are the guarded server's (guarded-http.ts). Before
//     accept the kernel's backlog decides (BACKLOG).
import { chmod, chown, lstat, mkdir, unlink } from 'node:fs/promises';
import type http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createGuardedServer, MAX_CONNECTIONS } from './guarded-http.js';
import type { StatusReport } from './report.js';

export class SocketInUseError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_IN_USE';
}

/** The socket cannot be made where it was asked for: a configuration matter, not a bug. */
export class SocketPermissionError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_PERMISSION';
}

const PROBE_TIMEOUT_MS = 2000;
export const MAX_URL_BYTES = 1024;
/**
 * Connections the kernel queues before the agent accepts them; it caps this at
 * net.core.somaxconn (128 before Linux 5.4, so on RHCOS 4.8/4.9). Past it a UNIX-socket
 * connect fails at once with EAGAIN, which the CLI's client retries: the cap above acts
 * only on connections accepted.
 */
const BACKLOG = MAX_CONNECTIONS;

export interface ListenOptions {
  /** The gid the socket (and a directory we create) belongs to; root's when null. */
  group?: number | null;
}

export interface StatusHandlers {
  status: () => StatusReport;
  /**
   * Changes whenever the report may have (the agent's passes, a reload): with it, the
   * serialised report is kept and served until it changes, instead of built per request.
   */
  statusVersion?: () => number;
  alive: () => boolean;
  ready: () => boolean;
  /** More GET paths (/metrics, /v1/events), each answering on its own. */
  extra?: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>;
}

/**
 * Whether a socket file is stale. Only ECONNREFUSED says so: the kernel's answer for a
 * socket file nobody listens on. EAGAIN is a listener with a full backlog, EACCES a
 * socket we may not judge; removing either could take the socket of a live agent.
 */
function assertStale(socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket);
    c.setTimeout(PROBE_TIMEOUT_MS, () => {
      c.destroy();
      reject(new SocketInUseError(`${socket} accepts connections but does not answer: not removing it`));
    });
    c.once('connect', () => {
      c.destroy();
      reject(new SocketInUseError(`another agent is serving on ${socket}`));
    });
    c.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') resolve();
      else if (err.code === 'EACCES' || err.code === 'EPERM') reject(permissionError(socket, err));
      else
        reject(
          new SocketInUseError(`cannot tell whether ${socket} is in use (${err.code ?? err.message}): not removing it`),
        );
    });
  });
}

/** A --socket path that cannot be made, whoever runs the agent: said as such, not as a bug. */
const PATH_ERRORS: Record<string, string> = {
  EEXIST: 'a part of the path is a file, not a directory',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EROFS: 'the file system is read-only',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'the path has a symbolic link loop',
};

function permissionError(socket: string, err: NodeJS.ErrnoException): SocketPermissionError {
  const dir = path.dirname(socket);
  const at = err.path ?? dir;
  // Making a directory takes write access to its parent; the rest, to the socket's directory.
  const needs = err.syscall === 'mkdir' ? path.dirname(at) : dir;
  return new SocketPermissionError(
    `cannot create the socket ${socket}: permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${needs}`,
  );
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
  await assertStale(socket);
  await unlink(socket);
}

const serialise = (body: unknown): string => JSON.stringify(body, null, 2) + '\n';

function send(res: http.ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  sendText(res, code, serialise(body), headers);
}

function sendText(res: http.ServerResponse, code: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export class StatusServer {
  private readonly server: http.Server;

  private constructor(
    readonly socket: string,
    handlers: StatusHandlers,
  ) {
    let cached: { version: number; text: string } | undefined;
    const statusText = (): string => {
      const version = handlers.statusVersion?.();
      if (version === undefined) return serialise(handlers.status());
      if (cached?.version !== version) cached = { version, text: serialise(handlers.status()) };
      return cached.text;
    };
    // Built once: a Map has no inherited keys (`/__proto__` is no route).
    const routes = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>([
      ['/status', (_req, res) => sendText(res, 200, statusText())],
      [
        '/healthz',
        (_req, res) =>
          handlers.alive()
            ? send(res, 200, { ok: true })
            : send(res, 503, { ok: false, error: 'the reconcile loop is stuck' }),
      ],
      [
        '/readyz',
        (_req, res) =>
          handlers.ready()
            ? send(res, 200, { ready: true })
            : send(res, 503, { ready: false, error: 'first reconcile not done yet' }),
      ],
      ...Object.entries(handlers.extra ?? {}),
    ]);
    this.server = createGuardedServer((req, res) => {
      const url = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        // Closed after: the body we never read must not be parsed as the next request.
        return send(
          res,
          405,
          { error: `method ${req.method} not allowed` },
          { allow: 'GET, HEAD', connection: 'close' },
        );
      }
      if (Buffer.byteLength(url) > MAX_URL_BYTES)
        return send(res, 414, { error: `URL longer than ${MAX_URL_BYTES} bytes` }, { connection: 'close' });
      const route = routes.get(url);
      if (!route) return send(res, 404, { error: `no such path: ${url}`, paths: [...routes.keys()] });
      route(req, res);
    });
  }

  static async listen(socket: string, handlers: StatusHandlers, options: ListenOptions = {}): Promise<StatusServer> {
    try {
      return await StatusServer.create(socket, handlers, options);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EACCES' || e.code === 'EPERM') throw permissionError(socket, e);
      const why = PATH_ERRORS[e.code ?? ''];
      if (why !== undefined) {
        throw new SocketPermissionError(
          `cannot create the socket ${socket}: ${why} (${e.syscall ?? e.code} ${e.path ?? socket}); give --socket a path under a writable directory`,
        );
      }
      throw err;
    }
  }

  private static async create(socket: string, handlers: StatusHandlers, options: ListenOptions): Promise<StatusServer> {
    const group = options.group ?? null;
    const dir = path.dirname(socket);
    // A directory we create is 0750 whatever the umask, and the socket group's; one that
    // exists (systemd's RuntimeDirectory, a hostPath) keeps the owner and mode it was given.
    const created = await mkdir(dir, { recursive: true, mode: 0o750 });
    if (created !== undefined) {
      if (group !== null) await chown(dir, process.getuid?.() ?? 0, group);
      await chmod(dir, 0o750);
    }
    await clearStale(socket);
    const s = new StatusServer(socket, handlers);
    await new Promise<void>((resolve, reject) => {
      s.server.once('error', (err: NodeJS.ErrnoException) =>
        reject(err.code === 'EADDRINUSE' ? new SocketInUseError(`another agent is serving on ${socket}`) : err),
      );
      s.server.listen({ path: socket, backlog: BACKLOG }, () => resolve());
    });
    if (group !== null) await chown(socket, process.getuid?.() ?? 0, group);
    await chmod(socket, 0o660);
    return s;
  }

  /** Stops in bounded time: connections under way, idle or half-sent, are cut. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await unlink(this.socket).catch(() => undefined);
  }
}
