// How ovnkube-node is restarted: through the container runtime (CRI), by a signal to
// its process, or not at all. Each strategy finds exactly one target, or says why not.
import type { CriClient } from '../cri/client.js';
import { findOvnkubeProcesses, processIdentity, startTimeOf } from '../ovnkube/proc.js';
import { closeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { addon } from '../native/addon.js';
import type { RestartTarget, TargetLookup } from '../core/migration.js';

export type RestartStrategyName = 'cri' | 'signal' | 'none';

export type Target = RestartTarget;
export type Found = TargetLookup;

export interface RestartStrategy {
  readonly name: RestartStrategyName;
  /** The one running ovnkube-node, or why there is not exactly one. */
  find(): Promise<Found>;
  restart(target: Target): Promise<void>;
  close(): void;
}

export interface CriOptions {
  endpoint: string | undefined;
  namespace: string;
  container: string;
  graceSeconds: number;
  /** Each call's deadline (StopContainer: this plus the grace period); see criDeadlineMs. */
  deadlineMs: number;
}

/**
 * The CRI call deadline: 10 s, or a quarter of the loop's stuck threshold (WatchdogSec,
 * which /healthz and so the liveness probe share) when that is shorter. A pass asks the
 * runtime at most once per round (ListContainers, three rounds at most) and never waits
 * for StopContainer (docs/design.md, race 7), so a runtime that accepts and never
 * answers holds a pass under the threshold: no watchdog kill, no failed probe.
 */
export function criDeadlineMs(stuckAfterMs: number): number {
  return Math.max(1, Math.min(10_000, Math.floor(stuckAfterMs / 4)));
}

export class CriRestart implements RestartStrategy {
  readonly name = 'cri';
  private client: CriClient | undefined;

  constructor(private readonly options: CriOptions) {}

  /**
   * The client of the runtime's socket. Its module (gRPC and the proto loader: about
   * 90 ms and 20 MB) is loaded on the first call, when a restart is due, not at start:
   * most of an agent's life needs no restart.
   */
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
    if (!client)
      return {
        error:
          'no CRI endpoint: neither /var/run/crio/crio.sock nor /run/containerd/containerd.sock exists (set --cri-endpoint)',
      };
    const { namespace, container } = this.options;
    let found;
    try {
      found = await client.runningContainers({
        'io.kubernetes.pod.namespace': namespace,
        'io.kubernetes.container.name': container,
      });
    } catch (err) {
      return { error: (err as Error).message };
    }
    // The runtime filtered by label already; check again rather than trust it.
    found = found.filter(
      (c) =>
        c.labels['io.kubernetes.pod.namespace'] === namespace && c.labels['io.kubernetes.container.name'] === container,
    );
    if (found.length !== 1) {
      return {
        error: `${found.length} running containers named ${container} in namespace ${namespace} (expected exactly 1)`,
      };
    }
    const c = found[0]!;
    return {
      target: {
        id: c.id,
        describe: `container ${c.id.slice(0, 13)} (${c.labels['io.kubernetes.pod.name'] ?? c.name}, attempt ${c.attempt})`,
      },
    };
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

/** The pidfd calls of the signal strategy (the addon's; tests inject failures). */
export interface PidfdCalls {
  open(pid: number): number;
  sendSignal(fd: number, signal: number): void;
}

const addonPidfd: PidfdCalls = {
  open: (pid) => addon.pidfdOpen(pid),
  sendSignal: (fd, signal) => addon.pidfdSendSignal(fd, signal),
};

/**
 * pidfd_open's errors that say the pidfd is not to be had here, whatever the process: the
 * start time check and kill(pid) do then. ENOSYS: a kernel before 5.3 (RHEL 8's 4.18 may
 * lack it), or a seccomp profile that answers unknown system calls so; EPERM: a seccomp
 * profile that denies it with EPERM (the OCI default action of older runtimes' profiles);
 * EINVAL: a kernel or a filter that refuses its arguments. Any other error (EMFILE, ENOMEM)
 * is this attempt's: it fails and is retried with backoff.
 */
const NO_PIDFD = new Set(['ENOSYS', 'EPERM', 'EINVAL']);

export class SignalRestart implements RestartStrategy {
  readonly name = 'signal';

  constructor(
    private readonly procRoot = '/proc',
    private readonly pidfd: PidfdCalls = addonPidfd,
  ) {}

  async find(): Promise<Found> {
    const processes = await findOvnkubeProcesses(this.procRoot);
    if (processes.length !== 1)
      return {
        error: `${processes.length} ovnkube --init-node processes in this network namespace (expected exactly 1)`,
      };
    const p = processes[0]!;
    return { target: { id: processIdentity(p), describe: `pid ${p.pid}` } };
  }

  /**
   * SIGTERM to exactly the process identified (pid and start time), never to another
   * that holds the PID now: a pidfd is opened first, the start time read after it (the
   * process holding the PID then is the one the pidfd names, when its start time is the
   * one observed), and the signal goes through the pidfd, so a process reaped in between
   * is ESRCH, never its successor (native/src/pidfd.c). Where there is no pidfd to be had
   * (NO_PIDFD), the start time check is followed by kill(pid): the window between the two
   * is the only one left, as before pidfds.
   */
  async restart(target: Target): Promise<void> {
    const m = /^pid (\d+) start (\d+)$/.exec(target.id);
    if (!m) throw new Error(`not a process target: ${target.id}`);
    const pid = Number(m[1]);
    let fd: number | null = null;
    try {
      fd = this.pidfd.open(pid);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ESRCH') throw new Error(`pid ${pid} is gone`);
      if (code === undefined || !NO_PIDFD.has(code)) throw err;
    }
    try {
      let now: string | null = null;
      try {
        now = startTimeOf(await readFile(`${this.procRoot}/${pid}/stat`, 'utf8'));
      } catch {
        throw new Error(`pid ${pid} is gone`);
      }
      if (now !== m[2])
        throw new Error(
          `pid ${pid} now belongs to another process (start time ${now}, expected ${m[2]}): not signalling it`,
        );
      if (fd === null) {
        process.kill(pid, 'SIGTERM');
        return;
      }
      try {
        this.pidfd.sendSignal(fd, constants.signals.SIGTERM);
      } catch (err) {
        if ((err as { code?: string }).code === 'ESRCH') throw new Error(`pid ${pid} is gone`);
        throw err;
      }
    } finally {
      if (fd !== null) closeSync(fd);
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
