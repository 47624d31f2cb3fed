// How ovnkube-node is restarted: through the container runtime (CRI), by a signal to
// its process, or not at all. Each strategy finds exactly one target, or says why not.
import { readFileSync } from 'node:fs';
import type { RestartTarget as Target, TargetLookup as Found } from '../core/migration.js';
import type { CriClient } from '../cri/client.js';
import { findOvnkubeProcesses, processIdentity, startTimeOf } from '../ovnkube/proc.js';

export interface RestartStrategy {
  readonly name: 'cri' | 'signal' | 'none';
  /** The one running ovnkube-node, or why there is not exactly one. */
  find(): Promise<Found>;
  restart(target: Target): Promise<void>;
  close(): void;
}

interface CriOptions {
  endpoint: string | undefined;
  namespace: string;
  container: string;
  graceSeconds: number;
  /** Each call's deadline (StopContainer: this plus the grace period); see criDeadlineMs. */
  deadlineMs: number;
}

/**
 * The CRI call deadline: 10 s, or a quarter of the loop's stuck threshold (WatchdogSec, /healthz)
 * when shorter: a pass asks the runtime at most once per round (three rounds) and never waits for
 * StopContainer, so a runtime that never answers holds no pass past the threshold.
 */
export function criDeadlineMs(stuckAfterMs: number): number {
  return Math.max(1, Math.min(10_000, Math.floor(stuckAfterMs / 4)));
}

export class CriRestart implements RestartStrategy {
  readonly name = 'cri';
  private client: CriClient | undefined;

  constructor(private readonly options: CriOptions) {}

  /** Its module (gRPC and the proto loader: about 90 ms and 20 MB) is loaded when a restart is due. */
  private async connect(): Promise<CriClient | undefined> {
    const { CriClient, pickEndpoint } = await import('../cri/client.js');
    const endpoint = this.options.endpoint ?? pickEndpoint();
    if (!endpoint) return undefined;
    if (this.client?.endpoint !== endpoint) {
      this.client?.close();
      this.client = new CriClient(endpoint, this.options.deadlineMs);
    }
    return this.client;
  }

  async find(): Promise<Found> {
    const client = await this.connect();
    const none = 'neither /var/run/crio/crio.sock nor /run/containerd/containerd.sock exists (set --cri-endpoint)';
    if (!client) return { error: `no CRI endpoint: ${none}` };
    const { namespace, container } = this.options;
    const labels = { 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.container.name': container };
    const listed = await client.runningContainers(labels).catch((err: unknown) => ({ error: (err as Error).message }));
    if ('error' in listed) return listed;
    // The runtime filtered by label already; check again rather than trust it.
    const found = listed.filter((c) => Object.entries(labels).every(([k, v]) => c.labels[k] === v));
    const [c, ...more] = found;
    const count = `${found.length} running containers named ${container} in namespace ${namespace} (expected exactly 1)`;
    if (c === undefined || more.length > 0) return { error: count };
    const pod = c.labels['io.kubernetes.pod.name'] ?? c.name;
    return { target: { id: c.id, describe: `container ${c.id.slice(0, 13)} (${pod}, attempt ${c.attempt})` } };
  }

  async restart(target: Target): Promise<void> {
    const client = await this.connect();
    if (!client) throw new Error('no CRI endpoint');
    await client.stopContainer(target.id, this.options.graceSeconds);
  }

  close(): void {
    this.client?.close();
  }
}

export class SignalRestart implements RestartStrategy {
  readonly name = 'signal';

  constructor(private readonly procRoot = '/proc') {}

  async find(): Promise<Found> {
    const processes = findOvnkubeProcesses(this.procRoot);
    const [p, ...more] = processes;
    const count = `${processes.length} ovnkube --init-node processes in this network namespace (expected exactly 1)`;
    if (p === undefined || more.length > 0) return { error: count };
    return { target: { id: processIdentity(p), describe: `pid ${p.pid}` } };
  }

  /**
   * SIGTERM to the process identified (pid and start time), its start time read again first:
   * a PID another process holds now is not signalled. Read and kill() are one turn of the
   * event loop; a pidfd would close the microseconds left, but pidfd_open is Linux 5.3+ and
   * RHCOS 4.8/4.9 runs RHEL 8.4's 4.18.
   */
  async restart(target: Target): Promise<void> {
    const m = /^pid (\d+) start (\d+)$/.exec(target.id);
    if (!m) throw new Error(`not a process target: ${target.id}`);
    const pid = Number(m[1]);
    let now: string | null;
    try {
      now = startTimeOf(readFileSync(`${this.procRoot}/${pid}/stat`, 'utf8'));
    } catch {
      throw new Error(`pid ${pid} is gone`);
    }
    const other = `pid ${pid} now belongs to another process (start time ${now}, expected ${m[2]}): not signalling it`;
    if (now !== m[2]) throw new Error(other);
    try {
      process.kill(pid, 'SIGTERM');
    } catch (err) {
      if ((err as { code?: string }).code === 'ESRCH') throw new Error(`pid ${pid} is gone`);
      throw err;
    }
  }

  close(): void {}
}

export class NoRestart implements RestartStrategy {
  readonly name = 'none';
  async find(): Promise<Found> {
    return { error: '--restart none' };
  }
  async restart(): Promise<void> {}
  close(): void {}
}
