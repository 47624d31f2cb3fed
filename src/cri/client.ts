// A CRI runtime.v1 client over the runtime's UNIX socket (containerd, CRI-O), with the two calls
// the agent makes, each with a deadline: a runtime that hangs must not hang the owner loop.
import type * as Grpc from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { requireModule } from '../require.js';

const grpc = requireModule('@grpc/grpc-js') as typeof Grpc;
const protoLoader = requireModule('@grpc/proto-loader') as typeof import('@grpc/proto-loader');

const PROTO = fileURLToPath(new URL('../../../src/cri/runtime.proto', import.meta.url));

class CriError extends Error {
  readonly code = 'ERR_GWMODE_CRI';
}

/** The first default endpoint that exists (CRI-O's, containerd's), or undefined. */
export const pickEndpoint = (): string | undefined =>
  ['/var/run/crio/crio.sock', '/run/containerd/containerd.sock'].find((p) => existsSync(p));

/**
 * A failed call in words. gRPC's text for a runtime it cannot reach is its resolver's ("No
 * connection established. Last error: Error: connect ENOENT <path>. Resolution note: "): only
 * the errno of the connect is kept.
 */
function describe(err: Grpc.ServiceError): string {
  if (err.code !== grpc.status.UNAVAILABLE) return err.details || err.message;
  const errno = /\bconnect (E[A-Z]+)\b/.exec(err.details ?? '')?.[1];
  // Only a missing socket or nobody listening asks whether the runtime runs; anything else is said as it came.
  if (errno === 'ENOENT' || errno === 'ECONNREFUSED')
    return `cannot connect (${errno}): is the container runtime running, with its socket there?`;
  // grpc-js stamps the time into its text ("Failed to connect (2026-...Z)"): a reason that changes every pass.
  const said = (err.details || err.message)
    .replace(/ \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/g, '')
    .replace(/\.? Resolution note:.*$/s, '');
  return errno ? `cannot connect (${errno})` : `unavailable: ${said}`;
}

type Unary<Res> = (req: object, opts: Grpc.CallOptions, cb: (err: Grpc.ServiceError | null, res: Res) => void) => void;

interface RuntimeServiceClient extends Grpc.Client {
  ListContainers: Unary<{ containers: Array<Record<string, unknown>> }>;
  StopContainer: Unary<object>;
}

type Service = new (address: string, creds: Grpc.ChannelCredentials) => RuntimeServiceClient;
let service: Service | undefined;
function loadService(): Service {
  const options = { keepCase: false, longs: String, enums: String, defaults: true };
  const runtime = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, options)).runtime as Grpc.GrpcObject;
  return (runtime.v1 as Grpc.GrpcObject).RuntimeService as unknown as Service;
}

export class CriClient {
  private readonly client: RuntimeServiceClient;

  constructor(
    readonly endpoint: string,
    private readonly deadlineMs = 10_000,
  ) {
    service ??= loadService();
    this.client = new service(`unix://${endpoint}`, grpc.credentials.createInsecure());
  }

  private call<Res>(name: string, fn: Unary<Res>, req: object, extraMs = 0): Promise<Res> {
    return new Promise((resolve, reject) => {
      fn.call(this.client, req, { deadline: Date.now() + this.deadlineMs + extraMs }, (err, res) => {
        if (err) reject(new CriError(`CRI ${name} on ${this.endpoint}: ${describe(err)}`, { cause: err }));
        else resolve(res);
      });
    });
  }

  async runningContainers(labels: Record<string, string>) {
    const res = await this.call('ListContainers', this.client.ListContainers, {
      filter: { state: { state: 'CONTAINER_RUNNING' }, labelSelector: labels },
    });
    return res.containers.map((c) => {
      const metadata = (c.metadata ?? {}) as { name?: string; attempt?: number };
      const labels = (c.labels ?? {}) as Record<string, string>;
      return { id: String(c.id), name: metadata.name ?? '', attempt: Number(metadata.attempt ?? 0), labels };
    });
  }

  /** Stops a container, giving it graceSeconds before the runtime kills it. */
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    const req = { containerId: id, timeout: String(graceSeconds) };
    await this.call('StopContainer', this.client.StopContainer, req, graceSeconds * 1000);
  }

  close(): void {
    this.client.close();
  }
}
