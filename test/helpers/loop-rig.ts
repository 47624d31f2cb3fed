// The owner loop's test rig: a stateful fake dataplane, a fake restart strategy, an
// in-memory journal and a fake clock (monotonic ms, with a wall clock a test can step),
// under node:test's mock timers: no test waits on real time.
import { strict as assert } from 'node:assert';
import { mock } from 'node:test';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import type { RestartSettings } from '../../src/core/decide.js';
import type { RestartTarget, TargetLookup } from '../../src/core/migration.js';
import type { OvnkubeObservation } from '../../src/core/types.js';
import type { ModePending, ModeRead } from '../../src/mode/source.js';
import { EMPTY_JOURNAL, JournalWriteError, type JournalData } from '../../src/restart/journal.js';
import type { RestartStrategy } from '../../src/restart/strategy.js';
import type { StatusReport } from '../../src/status/report.js';
import { parseCidr } from '../../src/net/cidr.js';
import { RESTART_SETTINGS, seedConfig } from './config.js';
import { FakeDataplane } from './fake-dataplane.js';
/** Plays the runtime and kubelet: a stop starts the next container at once. */
export class FakeStrategy implements RestartStrategy {
  readonly name: RestartSettings['strategy'];
  container = 1;
  stops = 0;
  failNext = false;
  /** restart() calls, answered or not. */
  calls = 0;
  /** The next request is held (a CRI stop waiting out the grace period) until release() is called. */
  holdNext = false;
  release: () => void = () => undefined;
  constructor(name: RestartSettings['strategy'] = 'cri') {
    this.name = name;
  }
  async find(): Promise<TargetLookup> {
    return { target: { id: `c${this.container}`, describe: `container c${this.container}` } };
  }
  async restart(t: RestartTarget): Promise<void> {
    this.calls++;
    if (this.holdNext) {
      this.holdNext = false;
      await new Promise<void>((resolve) => (this.release = resolve));
    }
    if (this.failNext) {
      this.failNext = false;
      throw new Error('runtime said no');
    }
    assert.equal(t.id, `c${this.container}`);
    this.stops++;
    this.container++;
  }
  close(): void {}
}

export class MemoryJournal {
  data: JournalData = EMPTY_JOURNAL;
  saves = 0;
  /** The Nth save (from 1) fails as a full disk does when this says so. */
  fail: (nth: number) => boolean = () => false;
  failed = 0;
  async load() {
    return this.data;
  }
  async save(d: JournalData) {
    this.saves++;
    if (this.fail(this.saves)) {
      this.failed++;
      throw new JournalWriteError(
        '/state/migration-journal.json',
        Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
      );
    }
    this.data = structuredClone(d);
  }
  async setAside() {
    return 'nowhere';
  }
}

export interface Rig {
  dp: FakeDataplane;
  strategy: FakeStrategy;
  journal: MemoryJournal;
  ovnkube: OvnkubeObservation;
  read: ModeRead | ModePending;
  /** How many times the agent read the mode file. */
  reads?: number;
  /** routeEventOnly of every probe of ovnkube-node, in order. */
  probes?: boolean[];
  /** The agent's monotonic clock (ms). */
  now: number;
  /** How far the wall clock is off the monotonic one (a test steps it); 0 by default. */
  wallOffset?: number;
  /** The periodic resync (default an hour: none in most tests). */
  resyncIntervalMs?: number;
  /** Restart settings over the rig's (settle 60 s, timeout 300 s, at most one restart per 300 s and 3 an hour). */
  restart?: Partial<RestartSettings>;
  /** The boot id the agent is told (journal-time.ts); none by default. */
  bootId?: string;
}

export function rig(over: Partial<Rig> = {}): Rig {
  return {
    dp: new FakeDataplane(),
    strategy: new FakeStrategy(),
    journal: new MemoryJournal(),
    ovnkube: { mode: 'local', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null, modes: ['local'] },
    read: { mode: 'local', error: null },
    now: 1_000_000_000,
    ...over,
  };
}

export function makeAgent(r: Rig, config = seedConfig()) {
  const logs: Array<{ level: number; msg: string }> = [];
  const agent = new Agent(
    {
      dataplane: r.dp,
      strategy: r.strategy,
      journal: r.journal,
      probe: async (hint) => ((r.probes ??= []).push(hint?.routeEventOnly ?? false), r.ovnkube),
      log: pino(
        { level: 'info' },
        { write: (line: string) => void logs.push(JSON.parse(line) as { level: number; msg: string }) },
      ),
      readMode: async () => ((r.reads = (r.reads ?? 0) + 1), r.read),
      watchMode: () => ({ close: async () => undefined }),
      clock: { now: () => r.now, wall: () => r.now + (r.wallOffset ?? 0) },
      random: () => 1,
      ...(r.bootId !== undefined ? { bootId: r.bootId } : {}),
    },
    {
      config,
      modePath: '/etc/mode',
      resyncIntervalMs: r.resyncIntervalMs ?? 3_600_000,
      restart: { ...RESTART_SETTINGS, strategy: r.strategy.name, ...r.restart },
    },
  );
  const seen: StatusReport[] = [];
  agent.onStatus((s) => seen.push(s));
  /** Waits for a status matching pred, turning the event loop at most a bounded number of times. */
  const until = async (pred: (s: StatusReport) => boolean, what: string, from = 0): Promise<StatusReport> => {
    for (let i = 0; i < 2000; i++) {
      const hit = seen.slice(from).find(pred);
      if (hit) return hit;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.fail(`never saw ${what}; last: ${JSON.stringify(seen.at(-1)?.reasons)}`);
  };
  /** Moves the agent's clock and the mocked timers on, a second at a time, letting passes run in between. */
  const advance = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1000) {
      const step = Math.min(1000, left);
      r.now += step;
      mock.timers.tick(step);
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  /** Turns the event loop a bounded number of times, time standing still: what is due runs, nothing else. */
  const flush = async (turns = 50) => {
    for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { agent, seen, until, advance, flush, logs };
}

/** The ovnkube-node that followed the rig's first one (pid 42), running the given mode. */
export const successor = (mode: 'local' | 'shared'): OvnkubeObservation => ({
  mode,
  pid: 43,
  id: 'pid 43 start 2',
  detail: null,
  release410Plus: null,
  modes: [mode],
});

export const LOCAL = (s: StatusReport) => s.routes[0]?.observed?.dev === 'ovn-k8s-mp0' && s.routes[0]?.inSync === true;

/** Starts an agent on r, waits for Settling and the end of that pass, runs body, and stops the agent. */
export async function whenSettling(r: Rig, body: (h: ReturnType<typeof makeAgent>) => Promise<void>): Promise<void> {
  const h = makeAgent(r);
  h.agent.start();
  try {
    await h.until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await h.agent.settle();
    await body(h);
  } finally {
    await h.agent.stop();
  }
}

/** Someone else sets a service route back to the shared shape, announced by the kernel or not. */
export function setBack(r: Rig, prefix: string, announced = true): void {
  r.dp.setRoute(prefix, '172.18.0.1', 'br-ex', 1400);
  if (announced) r.dp.emit({ kind: 'route', op: 'new', family: 4, prefix, table: 254 });
}

/** An agent on these IPv4 service CIDRs, migrated and Converged; body runs from there, then it stops. */
export async function whenConverged(
  cidrs: string[],
  body: (h: ReturnType<typeof makeAgent> & { r: Rig; from: number; replaced: number }) => Promise<void>,
): Promise<void> {
  const r = rig();
  for (const c of cidrs.slice(1)) r.dp.setRoute(c, '172.18.0.1', 'br-ex', 1400);
  const h = makeAgent(r, seedConfig({ serviceCidrs: cidrs.map(parseCidr) }));
  h.agent.start();
  try {
    await h.until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await h.advance(60_000);
    await h.until((s) => s.phase === 'Converged', 'Converged');
    await body({ ...h, r, from: h.seen.length, replaced: r.dp.replaces.length });
  } finally {
    await h.agent.stop();
  }
}
