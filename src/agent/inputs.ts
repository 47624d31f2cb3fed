// What wakes the owner loop: the kernel's notifications about what is watched (not the echoes of
// the agent's own writes: docs/design.md, "The echo window") and the mode file, read here.
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { AgentRecorder } from '../core/recorder.js';
import type { Watched } from '../core/route.js';
import type { DesiredMode } from '../core/types.js';
import type { Dataplane, DataplaneEvent, Subscription } from '../dataplane/types.js';
import type { ModePending, ModeRead, ModeWatch } from '../mode/source.js';
import type { Scheduler } from './scheduler.js';

/** How long the echo of an own write is waited for: the kernel sends it within the write's own round trip. */
export const ECHO_WINDOW_MS = 500;

export interface InputsDeps {
  dataplane: Dataplane;
  readMode: () => Promise<ModeRead | ModePending>;
  log: Logger;
  clock: Clock;
  recorder: AgentRecorder;
  scheduler: Pick<Scheduler, 'kick' | 'modeSettlingIn'>;
}

export class Inputs {
  private subscription: Subscription | undefined;
  private modeWatch: ModeWatch | undefined;
  private echoes = new Map<string, { count: number; until: number }>();
  /** The last valid mode, and how the mode file reads now. */
  desired: DesiredMode;

  constructor(
    private readonly deps: InputsDeps,
    modePath: string,
  ) {
    this.desired = { mode: null, source: { path: modePath, error: 'not read yet' } };
  }

  /** A reload closes the old ones first. */
  listen(watched: Watched, watchMode: (path: string, onChange: () => void) => ModeWatch, modePath: string): void {
    this.desired = { ...this.desired, source: { ...this.desired.source, path: modePath } };
    this.subscription = this.deps.dataplane.subscribe(watched, (e) => this.onEvent(e));
    this.modeWatch = watchMode(modePath, () => this.deps.scheduler.kick('mode file changed'));
  }

  async close(): Promise<void> {
    this.subscription?.close();
    this.subscription = undefined;
    const watch = this.modeWatch;
    this.modeWatch = undefined;
    await watch?.close();
  }

  /** An echo not seen when a pass begins comes late; the pass observes anyway. */
  forgetEchoes(): void {
    this.echoes.clear();
  }

  ownWrites(): Pick<Dataplane, 'replaceRoute'> {
    return {
      replaceRoute: async (r) => {
        this.expect(r.key.prefix, 1, Infinity);
        try {
          await this.deps.dataplane.replaceRoute(r);
        } catch (err) {
          this.expect(r.key.prefix, -1, this.deps.clock.now() + ECHO_WINDOW_MS);
          throw err;
        }
        this.expect(r.key.prefix, 0, this.deps.clock.now() + ECHO_WINDOW_MS);
      },
    };
  }

  /** n more (or fewer) echoes of `prefix`, all due by `until`. */
  private expect(prefix: string, n: number, until: number): void {
    const left = (this.echoes.get(prefix)?.count ?? 0) + n;
    if (left > 0) this.echoes.set(prefix, { count: left, until });
    else this.echoes.delete(prefix);
  }

  /** docs/design.md, "The half-written mode file": a garbled one keeps the last valid mode, one being written is read later. */
  async readDesired(): Promise<void> {
    const { log, recorder } = this.deps;
    const read = await this.deps.readMode();
    const path = this.desired.source.path;
    if ('pending' in read) {
      log.debug({ path, why: read.pending, retryInMs: read.retryInMs }, 'mode file not settled yet');
      this.deps.scheduler.modeSettlingIn(read.retryInMs);
      return;
    }
    const was = this.desired;
    if (read.mode !== null) {
      if (read.mode !== was.mode) {
        log.info({ from: was.mode, to: read.mode, path }, 'desired mode changed');
        recorder.desiredModeChanged(was.mode, read.mode);
      }
      if ((read.detail ?? null) !== (was.source.detail ?? null) && read.detail)
        log.warn(
          { path, mode: read.mode, detail: read.detail },
          'desired mode read as the cluster network operator reads it',
        );
      this.desired = { mode: read.mode, source: { path, error: null, detail: read.detail ?? null } };
      return;
    }
    if (read.error !== was.source.error) {
      const then = was.mode ? 'keeping the last valid desired mode' : 'no valid mode read yet, acting on nothing';
      log.error({ path, error: read.error, kept: was.mode }, `mode file invalid: ${then}`);
      recorder.modeFileError(path);
    }
    this.desired = { mode: was.mode, source: { path, error: read.error, detail: was.source.detail ?? null } };
  }

  private onEvent(e: DataplaneEvent): void {
    const { log } = this.deps;
    if (e.kind === 'lost') {
      // An echo or someone else's change: expect nothing, look at everything.
      this.echoes.clear();
      log.warn({ err: e.error }, 'netlink notifications were lost: full resync');
      this.deps.recorder.notificationsLost();
      this.deps.scheduler.kick('netlink notifications lost');
      return;
    }
    if (e.kind === 'route' && e.op === 'new') {
      const expected = this.echoes.get(e.prefix);
      if (expected !== undefined && this.deps.clock.now() > expected.until) this.echoes.delete(e.prefix);
      else if (expected !== undefined) {
        this.expect(e.prefix, -1, expected.until);
        log.debug({ prefix: e.prefix }, 'route notification of our own write: no wake-up');
        return;
      }
    }
    // Every address event wakes a pass that scans /proc in full: that is how the operator's
    // rollout wakes the agent, on every kernel. A new ovnkube-node's start flushes ovn-k8s-mp0's
    // addresses and routes and adds them back before its service route (ovn-org/ovn-kubernetes
    // d7252e0de1d6a85d7e929f982b884a4f5527ee05, go-controller/pkg/node/management-port_linux.go:
    // createPlatformManagementPort -> tearDownManagementPortConfig, LinkAddrFlush, then LinkAddrAdd),
    // and it is that process which flushes: the scan the notification asks for finds it.
    const what = e.kind === 'route' ? e.prefix : e.kind === 'link' ? e.link.name : e.address.address;
    this.deps.scheduler.kick(`${e.kind} ${e.op} ${what}`, false, e.kind === 'route');
  }
}
