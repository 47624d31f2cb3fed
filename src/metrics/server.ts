// /metrics on the status socket and, with --metrics-address, on a TCP listener that serves nothing
// else, open to anyone who reaches the node IP: the socket's guarded server (status/server.ts).
import type http from 'node:http';
import type net from 'node:net';
import { coded } from '../dataplane/errors.js';
import { createGuardedServer } from '../status/server.js';
import type { ListenAddress } from './address.js';
import { CONTENT_TYPE, type AgentMetrics } from './metrics.js';

/** GET or HEAD only: the guarded server answers the other methods (405). */
export function serveMetrics(metrics: AgentMetrics, req: http.IncomingMessage, res: http.ServerResponse): void {
  metrics.expose().then(
    (text) => {
      res.writeHead(200, { 'content-type': CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
    (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
  );
}

/** --metrics-address cannot be listened on (taken, not an address of this host): a configuration matter. */
export class MetricsAddressError extends coded('ERR_GWMODE_METRICS_ADDRESS') {}

export class MetricsListener {
  private constructor(
    private readonly server: http.Server,
    readonly address: ListenAddress,
  ) {}

  static async listen(at: ListenAddress, metrics: AgentMetrics): Promise<MetricsListener> {
    const server = createGuardedServer({ '/metrics': (req, res) => serveMetrics(metrics, req, res) });
    const host = at.host.includes(':') ? `[${at.host}]` : at.host;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const why = `--metrics-address ${host}:${at.port}: cannot listen (${err.code ?? err.message})`;
        reject(new MetricsAddressError(why, { cause: err }));
      });
      server.listen(at.port, at.host, () => resolve());
    });
    return new MetricsListener(server, { host: at.host, port: (server.address() as net.AddressInfo).port });
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }
}
