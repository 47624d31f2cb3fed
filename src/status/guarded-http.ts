// The HTTP server under both listeners, the status socket and --metrics-address: one
// mechanism, so that a caller who stalls cannot keep out the one who matters (kubelet's
// probe on the socket, Prometheus on the node IP).
//
//  1. The request line and headers together are capped (431), at most MAX_HEADERS of them.
//     Node answers a malformed request 400 (431, 408) and closes the connection.
//  2. Headers must arrive within HEADERS_TIMEOUT_MS and the whole request within
//     REQUEST_TIMEOUT_MS, checked every CHECK_INTERVAL_MS (Node's default is 30 s: a
//     stalled client would be cut after half a minute). Node runs that check on an
//     interval from listen to close, connections or not: a wake-up every
//     CHECK_INTERVAL_MS of an agent at rest (about 2 ms of CPU a second: docs/benchmarks.md).
//  3. At most MAX_CONNECTIONS are open. Past that the oldest connection with no request
//     in hand (a slow client still sending headers, an idle keep-alive) is cut, else the
//     oldest: a new caller gets in once accepted, however many slow clients hold the
//     listener. Node's own maxConnections would refuse the newcomer instead.
import type http from 'node:http';
import type net from 'node:net';

// Not imported: on Node 24 an import of node:http loads its bundled undici, 14 MB of RSS (docs/benchmarks.md).
const { createServer } = process.getBuiltinModule('node:http');

/**
 * Slow clients are cut off rather than waited for: the CLI, curl and Prometheus send a
 * request in one write, and a stop must not wait on a client that sent half of one.
 */
const HEADERS_TIMEOUT_MS = 2000;
const REQUEST_TIMEOUT_MS = 5000;
const CHECK_INTERVAL_MS = 500;
/** Request line and headers, bytes: a real request here is a few hundred. */
const MAX_HEADER_BYTES = 8192;
const MAX_HEADERS = 64;
/**
 * Above the 200 slow clients the issue names, with room: under a cap below the clients'
 * number each one cut comes back and is cut again, and that churn (accept, cut, the
 * garbage of both) was most of the agent's work under bench:socket's reconnecting
 * clients. An idle connection costs an fd (Node raises the soft limit to the hard one)
 * and a few kB.
 */
export const MAX_CONNECTIONS = 512;

export function createGuardedServer(handler: http.RequestListener): http.Server {
  /** Open connections, oldest first (a Set keeps insertion order). */
  const open = new Set<net.Socket>();
  /** Connections with a request in hand: cut only when every connection has one. */
  const busy = new WeakSet<net.Socket>();
  const server = createServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: CHECK_INTERVAL_MS,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req, res) => {
      busy.add(req.socket);
      res.once('close', () => busy.delete(req.socket));
      handler(req, res);
    },
  );
  server.maxHeadersCount = MAX_HEADERS;

  const evict = (newcomer: net.Socket): void => {
    let victim: net.Socket | undefined;
    for (const conn of open) {
      if (conn === newcomer) continue;
      if (!busy.has(conn)) {
        victim = conn;
        break;
      }
      victim ??= conn;
    }
    victim?.destroy();
  };
  server.on('connection', (conn: net.Socket) => {
    open.add(conn);
    conn.once('close', () => open.delete(conn));
    if (open.size > MAX_CONNECTIONS) evict(conn);
  });
  return server;
}
