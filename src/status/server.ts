// The API on a local UNIX socket, 0660 in a 0750 directory: only root and the socket's group may
// ask. A buggy or hostile caller must not blind the probes (kubelet's here, Prometheus's on
// --metrics-address): answers come from memory; GET and HEAD only; URL and headers capped; headers
// within 2 s, the request within 5 s (Node's default is 30 s; checked every 500 ms); past
// MAX_CONNECTIONS the oldest connection with no request in hand is cut (else the oldest), so a
// newcomer gets in however many slow clients hold on (Node's maxConnections would refuse it).
import { chmod, chown, lstat, mkdir, unlink } from 'node:fs/promises';
import type http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { coded } from '../dataplane/errors.js';
import type { StatusReport } from './report.js';

// Not imported: on Node 24 an import of node:http loads its bundled undici, 14 MB of RSS (docs/benchmarks.md).
const { createServer } = process.getBuiltinModule('node:http');

export class SocketInUseError extends coded('ERR_GWMODE_SOCKET_IN_USE') {}

/** The socket cannot be made where it was asked for: a configuration matter, not a bug. */
export class SocketPermissionError extends coded('ERR_GWMODE_SOCKET_PERMISSION') {}

export const MAX_URL_BYTES = 1024;
const MAX_HEADERS = 64;
/**
 * Above 200 slow clients, with room: under a cap below their number each client cut comes back
 * and is cut again (that churn was most of the agent's work under bench:socket). Also the
 * backlog (capped by net.core.somaxconn): past it a connect fails with EAGAIN, which the CLI retries.
 */
export const MAX_CONNECTIONS = 512;

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** The HTTP server under both listeners, the status socket and --metrics-address (header). */
export function createGuardedServer(routes: Record<string, Handler>): http.Server {
  const open = new Set<net.Socket>(); // oldest first
  const busy = new WeakSet<net.Socket>(); // with a request in hand
  const opts = { headersTimeout: 2000, requestTimeout: 5000, connectionsCheckingInterval: 500, maxHeaderSize: 8192 };
  const server = createServer(opts, (req, res) => {
    busy.add(req.socket);
    res.once('close', () => busy.delete(req.socket));
    const url = (req.url ?? '/').split('?')[0] ?? '/';
    // Closed after: the body we never read must not be parsed as the next request.
    const close = { connection: 'close' };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return sendJson(res, 405, { error: `method ${req.method} not allowed` }, { allow: 'GET, HEAD', ...close });
    if (Buffer.byteLength(url) > MAX_URL_BYTES)
      return sendJson(res, 414, { error: `URL longer than ${MAX_URL_BYTES} bytes` }, close);
    const route = Object.hasOwn(routes, url) ? routes[url] : undefined;
    if (!route) return sendJson(res, 404, { error: `no such path: ${url}`, paths: Object.keys(routes) });
    route(req, res);
  });
  server.maxHeadersCount = MAX_HEADERS;
  server.on('connection', (conn: net.Socket) => {
    open.add(conn);
    conn.once('close', () => open.delete(conn));
    if (open.size <= MAX_CONNECTIONS) return;
    const others = [...open].filter((c) => c !== conn);
    (others.find((c) => !busy.has(c)) ?? others[0])?.destroy();
  });
  return server;
}

export interface StatusHandlers {
  status: () => StatusReport;
  /** Changes whenever the report may have: the serialised report is kept until it changes. */
  statusVersion?: () => number;
  alive: () => boolean;
  ready: () => boolean;
  /** More GET paths (/metrics, /v1/events), each answering on its own. */
  extra?: Record<string, Handler>;
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
  const at = err.path ?? path.dirname(socket);
  // Making a directory takes write access to its parent; the rest, to the socket's directory.
  const needs = err.syscall === 'mkdir' ? path.dirname(at) : path.dirname(socket);
  return new SocketPermissionError(
    `cannot create the socket ${socket}: permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${needs}`,
  );
}

/**
 * Removes a socket file left by a killed agent. Only ECONNREFUSED says it is stale: EAGAIN
 * is a listener with a full backlog, EACCES a socket we may not judge; removing either could
 * take a live agent's.
 */
async function clearStale(socket: string): Promise<void> {
  const info = await lstat(socket).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  if (!info) return;
  if (!info.isSocket()) throw new SocketInUseError(`${socket} exists and is not a socket: not removing it`);
  const c = net.connect(socket);
  await new Promise<void>((resolve, reject) => {
    const inUse = (why: string) => reject(new SocketInUseError(why));
    c.setTimeout(2000, () => inUse(`${socket} accepts connections but does not answer: not removing it`));
    c.once('connect', () => inUse(`another agent is serving on ${socket}`));
    c.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') resolve();
      else if (err.code === 'EACCES' || err.code === 'EPERM') reject(permissionError(socket, err));
      else inUse(`cannot tell whether ${socket} is in use (${err.code ?? err.message}): not removing it`);
    });
  }).finally(() => c.destroy());
  await unlink(socket);
}

const serialise = (body: unknown): string => JSON.stringify(body, null, 2) + '\n';

export function sendJson(res: http.ServerResponse, code: number, body: unknown, headers = {}, text = serialise(body)) {
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
    const probe = (ok: boolean, key: string, error: string, res: http.ServerResponse) =>
      sendJson(res, ok ? 200 : 503, ok ? { [key]: true } : { [key]: false, error });
    this.server = createGuardedServer({
      '/status': (_req, res) => sendJson(res, 200, null, {}, statusText()),
      '/healthz': (_req, res) => probe(handlers.alive(), 'ok', 'the reconcile loop is stuck', res),
      '/readyz': (_req, res) => probe(handlers.ready(), 'ready', 'first reconcile not done yet', res),
      ...handlers.extra,
    });
  }

  static async listen(socket: string, handlers: StatusHandlers, options: { group?: number | null } = {}) {
    const group = options.group ?? null;
    const s = new StatusServer(socket, handlers);
    try {
      const dir = path.dirname(socket);
      // A directory we create is 0750 whatever the umask, and the socket group's; one that
      // exists (systemd's RuntimeDirectory, a hostPath) keeps the owner and mode it was given.
      if ((await mkdir(dir, { recursive: true, mode: 0o750 })) !== undefined) {
        if (group !== null) await chown(dir, process.getuid?.() ?? 0, group);
        await chmod(dir, 0o750);
      }
      await clearStale(socket);
      await new Promise<void>((resolve, reject) => {
        s.server.once('error', (err: NodeJS.ErrnoException) =>
          reject(err.code === 'EADDRINUSE' ? new SocketInUseError(`another agent is serving on ${socket}`) : err),
        );
        s.server.listen({ path: socket, backlog: MAX_CONNECTIONS }, () => resolve());
      });
      if (group !== null) await chown(socket, process.getuid?.() ?? 0, group);
      await chmod(socket, 0o660);
      return s;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EACCES' || e.code === 'EPERM') throw permissionError(socket, e);
      const why = PATH_ERRORS[e.code ?? ''];
      if (why === undefined) throw err;
      throw new SocketPermissionError(
        `cannot create the socket ${socket}: ${why} (${e.syscall ?? e.code} ${e.path ?? socket}); give --socket a path under a writable directory`,
      );
    }
  }

  /** Stops in bounded time: connections under way, idle or half-sent, are cut. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await unlink(this.socket).catch(() => undefined);
  }
}
