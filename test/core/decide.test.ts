// The one decision point: fights, the migration and its restart, and the phase, as
// tables of pure inputs and outputs. Time is a number passed in.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  decide,
  needsTarget,
  summarize,
  POLL_MS,
  QUICK_POLL_MS,
  type DecideInput,
  type RestartSettings,
} from '../../src/core/decide.js';
import { RESTART_SETTINGS } from '../helpers/config.js';
import {
  FIGHT_LIMIT,
  FIGHT_WINDOW_MS,
  NO_FIGHTS,
  recordApplied,
  suspensionsOf,
  trackFights,
} from '../../src/core/fights.js';
import type { Migration } from '../../src/core/migration.js';
import { reason } from '../../src/core/reasons.js';
import type { NextHop } from '../../src/core/route.js';
import type { Plan, ReplaceAction } from '../../src/core/types.js';

const T = 1_000_000_000;
const BR: NextHop = { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 };
const MP: NextHop = { dev: 'ovn-k8s-mp0', oif: 4, gateway: '10.244.1.1', mtu: null };
const action: ReplaceAction = {
  key: { prefix: '10.96.0.0/16', family: 4, table: 254, priority: 0 },
  protocol: 3,
  scope: 0,
  type: 1,
  from: BR,
  to: MP,
  reason: reason('Replacing', 'desired mode local'),
};
const inSync: Plan = {
  layout: 'legacy',
  platform: { release: '4.8-4.9', evidence: 'os-release' },
  actions: [],
  reasons: [reason('InSync', 'in sync')],
  blocked: false,
  dryRun: false,
  awaitsOvnkube: false,
  warnings: [],
  routes: [],
};
const toLocal: Plan = { ...inSync, actions: [action], reasons: [action.reason] };
/** A dry run's plan with nothing to replace says InSync, not DryRun: the plan's field says it. */
const DRY_IN_SYNC: Plan = { ...inSync, dryRun: true };
const VIA_HOST: Plan = {
  ...inSync,
  layout: 'routing-via-host',
  platform: { release: '4.10+', evidence: "ovnkube-node's command line has --export-ovs-metrics (pid 42)" },
  reasons: [reason('RoutingViaHostLayout', '4.10+')],
};
const UNKNOWN: Plan = {
  ...inSync,
  layout: 'unknown',
  platform: { release: 'unknown', evidence: 'no os-release' },
  blocked: true,
  reasons: [reason('LayoutUnknown', 'unknown')],
};
const settings: RestartSettings = RESTART_SETTINGS;
const OLD = { target: { id: 'c-old', describe: 'container c-old' } };
const NEW = { target: { id: 'c-new', describe: 'container c-new' } };
/** A migration on record; the last restart request by its time, target id, answer and error. */
type Over = Partial<Omit<Migration, 'restart' | 'last'>> & {
  restart?: Migration['restart'];
  lastAttemptAt?: number;
  stopped?: string;
  stoppedAs?: string;
  outcome?: 'stopped' | 'failed';
  lastError?: string;
  doneAt?: number;
};
const migration = ({
  lastAttemptAt,
  stopped = 'c-old',
  stoppedAs,
  outcome,
  lastError,
  ...over
}: Over = {}): Migration =>
  ({
    mode: 'local',
    startedAt: T,
    ovnkubeBefore: 'c-old',
    routes: [],
    restart: 'owed',
    identity: 'container',
    attempts: 0,
    last:
      lastAttemptAt === undefined
        ? null
        : {
            at: lastAttemptAt,
            target: { id: stopped, describe: stoppedAs ?? `container ${stopped}` },
            result: outcome ?? null,
            error: lastError ?? (over.restart === 'failed' ? 'EPERM' : null),
          },
    rollback: null,
    ...over,
  }) as Migration;
const input = (over: Partial<DecideInput>): DecideInput => ({
  plan: inSync,
  desired: 'local',
  migration: null,
  restarts: [],
  ovnkube: { mode: 'local', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null, modes: ['local'] },
  target: OLD,
  settings,
  now: T,
  ...over,
});

test('decide: a migration is journaled, restart owed, before its first replace', () => {
  const d = decide(input({ plan: toLocal }));
  assert.deepEqual(
    d.steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
  assert.equal(d.migration?.restart, 'owed');
  assert.equal(d.migration?.ovnkubeBefore, 'c-old');
  assert.deepEqual(d.migration?.routes, [{ key: action.key, from: BR, to: MP }]);
});

test('decide: a dry run and a wait on ovnkube-node are fields of the decision, and what it does follows them', () => {
  const dry = decide(input({ plan: { ...toLocal, dryRun: true } }));
  assert.deepEqual(
    [dry.dryRun, dry.waiting, dry.steps, dry.records],
    [true, false, [], []],
    'a dry run replaces nothing',
  );
  const waits = decide(input({ plan: { ...inSync, awaitsOvnkube: true } }));
  assert.deepEqual(
    [waits.dryRun, waits.waiting, waits.steps, waits.wakeInMs],
    [false, true, [], POLL_MS],
    'a wait looks again every second',
  );
  const neither = decide(input({ plan: toLocal }));
  assert.deepEqual([neither.dryRun, neither.waiting], [false, false]);
});

test("decide: the journal's catch-up and a restart's answer are records of the decision, before its steps", () => {
  const requested = migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 });
  const step = { kind: 'restart' as const, target: OLD.target, migration: requested };
  const failed = decide(
    input({
      migration: requested,
      journalLags: true,
      answer: { step, error: { message: 'rpc error: deadline exceeded', code: 'ERR_GWMODE_CRI' } },
    }),
  );
  assert.deepEqual(
    failed.records.map((r) => r.kind),
    ['catch-up', 'answered', 'record'],
  );
  assert.deepEqual(failed.records[1], {
    kind: 'answered',
    mode: 'local',
    target: 'container c-old',
    result: 'failed',
    code: 'ERR_GWMODE_CRI',
    error: 'rpc error: deadline exceeded',
  });
  const onRecord = failed.records[2];
  assert.ok(onRecord?.kind === 'record');
  assert.deepEqual(
    [onRecord.migration?.restart, onRecord.migration?.last?.error, onRecord.what],
    ['failed', 'rpc error: deadline exceeded', 'a failed restart request'],
  );
  assert.equal(failed.migration?.restart, 'failed', 'the decision goes on from the answer');

  const stopped = decide(input({ migration: requested, target: NEW, answer: { step, error: null } }));
  assert.deepEqual(
    stopped.records.slice(0, 2).map((r) => (r.kind === 'record' ? [r.kind, r.migration?.last?.result] : [r.kind])),
    [['record', 'stopped'], ['answered']],
  );
  // An answer to a migration since superseded (another attempt) is told, not recorded into it.
  const later = decide(input({ migration: { ...requested, attempts: 2 }, answer: { step, error: null } }));
  assert.deepEqual(
    later.records.map((r) => r.kind),
    ['answered'],
  );
});

test('decide: a broken restart path starts no migration (Waiting, RestartPathBroken)', () => {
  const d = decide(input({ plan: toLocal, target: { error: '0 running containers' } }));
  assert.deepEqual(d.steps, []);
  assert.deepEqual([d.restart.phase, d.restart.reason?.code], ['Waiting', 'RestartPathBroken']);
});

test('decide: a repair within the migration on record owes no new restart', () => {
  const m = migration({ restart: 'done', doneAt: T - 3_600_000 });
  const d = decide(input({ plan: toLocal, migration: m }));
  assert.deepEqual(
    d.steps.map((s) => s.kind),
    ['replace'],
  );
  assert.equal(d.migration, m);
});

test('decide: a return to a mode restarted for before is a new migration (local, shared, local)', () => {
  const d = decide(input({ plan: toLocal, migration: migration({ mode: 'shared', restart: 'done', doneAt: T - 1 }) }));
  assert.deepEqual(
    d.steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
});

const restartRows: Array<{
  name: string;
  in: Partial<DecideInput>;
  steps: string[];
  phase: string | null;
  code: string | null;
  restart?: Migration['restart'];
}> = [
  {
    name: 'owed: restart the one ovnkube-node',
    in: { migration: migration() },
    steps: ['restart'],
    phase: 'Progressing',
    code: 'RestartAwaited',
    restart: 'requested',
  },
  {
    name: 'owed with --restart none: Progressing, waiting for it',
    in: {
      migration: migration({ ovnkubeBefore: 'pid 42 start 1', identity: 'process' }),
      settings: { ...settings, strategy: 'none' },
      target: null,
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: '--restart none, someone restarted it: settling',
    in: {
      migration: migration({ ovnkubeBefore: 'pid 41 start 0', identity: 'process' }),
      settings: { ...settings, strategy: 'none' },
      target: null,
    },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: 'requested, the old one still there: Progressing',
    in: { migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }) },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'requested, none came back in time: Degraded',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 300_000, attempts: 1 }),
      target: { error: '0 running containers' },
    },
    steps: [],
    phase: 'Degraded',
    code: 'RestartTimedOut',
  },
  {
    name: 'requested, the very same instance still runs after the timeout: asked again',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 300_000, attempts: 1 }),
      restarts: [T - 300_000],
    },
    steps: ['restart'],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'timed out, then the new one shows up: recovers by itself',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 900_000, attempts: 1 }),
      target: NEW,
    },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: 'a new one in the other mode is not the proof',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }),
      target: NEW,
      ovnkube: { mode: 'shared', pid: 43, id: 'x', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'owed, and a new one in the other mode appeared: never stopped, waited for',
    in: {
      migration: migration(),
      target: NEW,
      ovnkube: { mode: 'shared', pid: 43, id: 'x', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'failed, the stop did happen, a new one in the other mode: never a second stop',
    in: {
      migration: migration({
        restart: 'failed',
        stopped: 'c-old',
        lastAttemptAt: T - 600_000,
        attempts: 1,
        lastError: 'timeout',
      }),
      target: NEW,
      ovnkube: { mode: 'shared', pid: 43, id: 'x', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: '--restart changed from cri to none between runs: not called done, counted from what runs now',
    in: {
      migration: migration({ restart: 'failed', lastAttemptAt: T - 600_000, attempts: 1 }),
      settings: { ...settings, strategy: 'none' },
      target: null,
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: "apply's migration (by process) under CRI, ovnkube-node restarted since by someone: settling, no stop",
    in: { migration: migration({ ovnkubeBefore: 'pid 41 start 0', identity: 'process' }) },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: "apply's migration (by process) under CRI, the same process still runs: the owed restart is requested",
    in: { migration: migration({ ovnkubeBefore: 'pid 42 start 1', identity: 'process' }) },
    steps: ['restart'],
    phase: 'Progressing',
    code: 'RestartAwaited',
    restart: 'requested',
  },
  {
    name: "apply's migration (by process) under CRI, no ovnkube-node when it began: the one running now started after it, settling, no stop",
    in: { migration: migration({ ovnkubeBefore: null, identity: 'process' }) },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: "apply's migration (by process) under CRI, no ovnkube-node then nor now: the owed restart waits for one (nothing stopped)",
    in: {
      migration: migration({ ovnkubeBefore: null, identity: 'process' }),
      ovnkube: { mode: null, pid: null, id: null, detail: 'none', release410Plus: null, modes: [] },
      target: { error: '0 running containers' },
    },
    steps: [],
    phase: 'Degraded',
    code: 'RestartFailed',
  },
  {
    name: "apply's migration (by process) under CRI, restarted since but in the other mode: not the proof",
    in: {
      migration: migration({ ovnkubeBefore: 'pid 41 start 0', identity: 'process' }),
      ovnkube: { mode: 'shared', pid: 43, id: 'pid 43 start 2', detail: null, release410Plus: null, modes: ['shared'] },
      target: NEW,
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'the node reached its mode without the agent: no restart owed',
    in: { migration: migration({ restart: 'none' }) },
    steps: [],
    phase: null,
    code: null,
  },
  {
    name: 'failed: retried after backoff, not before',
    in: { migration: migration({ restart: 'failed', lastAttemptAt: T - 1000, attempts: 1, lastError: 'EPERM' }) },
    steps: [],
    phase: 'Degraded',
    code: 'RestartFailed',
  },
  {
    name: 'failed, backoff over: requested again',
    in: { migration: migration({ restart: 'failed', lastAttemptAt: T - 10_000, attempts: 1, lastError: 'EPERM' }) },
    steps: ['restart'],
    phase: 'Progressing',
    code: 'RestartAwaited',
    restart: 'requested',
  },
  {
    name: 'rate limited: a planned wait, Progressing until allowed (not Degraded: nothing failed)',
    in: { migration: migration(), restarts: [T - 60_000] },
    steps: [],
    phase: 'Progressing',
    code: 'RestartRateLimited',
  },
  {
    name: 'done, inside the settle time: Progressing',
    in: { migration: migration({ restart: 'done', doneAt: T - 1000 }) },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
  },
  {
    name: 'done and settled: nothing',
    in: { migration: migration({ restart: 'done', doneAt: T - 61_000 }) },
    steps: [],
    phase: null,
    code: null,
  },
  {
    name: 'owed while a restart request is still under way (the mode changed during a CRI stop): none requested, said to be under way',
    in: { migration: migration(), restartInFlight: true },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'requested, the restart timeout passed while its request is still under way: not asked again',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 300_000, attempts: 1 }),
      restarts: [T - 300_000],
      restartInFlight: true,
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
  },
  {
    name: 'a request still under way, and the new one shows up: done all the same',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }),
      target: NEW,
      restartInFlight: true,
    },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: 'the desired mode moved on: the old migration owes nothing now',
    in: { desired: 'shared', migration: migration() },
    steps: [],
    phase: null,
    code: null,
  },
  // Rule 10: the owed restart only under a plan that would start a migration.
  {
    name: '`apply` journaled the migration, then `run --dry-run`: held, nothing stopped (Waiting)',
    in: { migration: migration(), plan: DRY_IN_SYNC },
    steps: [],
    phase: 'Waiting',
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'dry run, a repair planned too: held',
    in: {
      migration: migration(),
      plan: { ...toLocal, dryRun: true, reasons: [reason('DryRun', 'dry run'), action.reason] },
    },
    steps: [],
    phase: 'Waiting',
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'dry run, a restart that failed before, backoff over: held',
    in: {
      migration: migration({ restart: 'failed', lastAttemptAt: T - 600_000, attempts: 1, lastError: 'EPERM' }),
      plan: DRY_IN_SYNC,
    },
    steps: [],
    phase: 'Waiting',
    code: 'RestartHeld',
    restart: 'failed',
  },
  {
    name: "owed, then 4.10+ evidence (RoutingViaHostLayout): held, the plan's Converged stands",
    in: { migration: migration(), plan: VIA_HOST },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'requested, the timeout passed, the same one runs, then 4.10+ evidence: not asked again',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 300_000, attempts: 1 }),
      plan: VIA_HOST,
      restarts: [T - 300_000],
    },
    steps: [],
    phase: null,
    code: 'RestartHeld',
  },
  {
    name: 'owed, the release unknown (LayoutUnknown): held',
    in: { migration: migration(), plan: UNKNOWN },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: "an older agent's journal: a shared migration owing a restart, shared desired: held, never a restart for shared",
    in: { desired: 'shared', migration: migration({ mode: 'shared' }) },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'owed, the very ovnkube-node it began with now seen running the other mode, mode check off: held, never stopped',
    in: {
      migration: migration(),
      settings: { ...settings, modeChecked: false },
      ovnkube: { mode: 'shared', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'mode check off: a new ovnkube-node seen running the other mode is not the proof',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }),
      settings: { ...settings, modeChecked: false },
      target: NEW,
      ovnkube: { mode: 'shared', pid: 43, id: 'x', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
    restart: 'requested',
  },
  {
    name: 'mode check off: a new ovnkube-node whose mode is not seen is the proof',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }),
      settings: { ...settings, modeChecked: false },
      target: NEW,
      ovnkube: {
        mode: null,
        pid: null,
        id: null,
        detail: 'no ovnkube --init-node process',
        release410Plus: null,
        modes: [],
      },
    },
    steps: [],
    phase: 'Progressing',
    code: 'Settling',
    restart: 'done',
  },
  {
    name: 'mode check off: an ovnkube-node running the other mode whose namespace cannot be read is not the proof, and not stopped',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 1000, attempts: 1 }),
      settings: { ...settings, modeChecked: false },
      target: NEW,
      ovnkube: {
        mode: null,
        pid: null,
        id: null,
        detail: 'cannot read the network namespace of ovnkube pid 43',
        release410Plus: null,
        modes: ['shared'],
      },
    },
    steps: [],
    phase: 'Progressing',
    code: 'RestartAwaited',
    restart: 'requested',
  },
  {
    name: 'owed, mode check off: ovnkube processes that disagree, one running the other mode: held, never stopped',
    in: {
      migration: migration(),
      settings: { ...settings, modeChecked: false },
      ovnkube: {
        mode: null,
        pid: null,
        id: null,
        detail: 'ovnkube processes disagree',
        release410Plus: null,
        modes: ['local', 'shared'],
      },
    },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'owed',
  },
  {
    name: 'requested, the very same instance still runs after the timeout but now seen running the other mode: held, never asked again',
    in: {
      migration: migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: T - 300_000, attempts: 1 }),
      restarts: [T - 300_000],
      ovnkube: { mode: 'shared', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null, modes: ['shared'] },
    },
    steps: [],
    phase: null,
    code: 'RestartHeld',
    restart: 'requested',
  },
];

for (const r of restartRows) {
  test(`decide restart: ${r.name}`, () => {
    const d = decide(input(r.in));
    assert.deepEqual(
      d.steps.map((s) => s.kind),
      r.steps,
    );
    assert.deepEqual([d.restart.phase, d.restart.reason?.code ?? null], [r.phase, r.code]);
    if (r.restart) assert.equal(d.migration?.restart, r.restart);
  });
}

test("decide: a held restart is said after the plan's reasons, the plan's phase stands, and the restart strategy is not asked", () => {
  const d = decide(input({ migration: migration(), plan: VIA_HOST }));
  const { phase, reasons } = summarize(VIA_HOST, d.restart, new Map(), null);
  assert.deepEqual([phase, reasons.map((r) => r.code)], ['Converged', ['RoutingViaHostLayout', 'RestartHeld']]);
  assert.match(
    d.restart.reason!.message,
    /^the restart of ovnkube-node owed by the migration to local \(begun .*\) is held: the node has the routing-via-host layout/,
  );
  assert.equal(needsTarget(VIA_HOST, 'local', migration(), 'cri'), false);
  assert.equal(needsTarget(DRY_IN_SYNC, 'local', migration(), 'signal'), false);
  assert.equal(needsTarget(inSync, 'local', migration(), 'cri'), true);
});

test('decide: under --restart signal, an observation with no one ovnkube-node (one readable, one not) stops nothing and looks again at the usual second, not every 100 ms', () => {
  const signal = { ...settings, strategy: 'signal' as const };
  const unplaced = {
    mode: null,
    pid: null,
    id: null,
    detail: 'cannot read the network namespace of ovnkube pid 77',
    release410Plus: null,
    modes: [],
  };
  const found = { target: { id: 'pid 42 start 1', describe: 'pid 42' } };
  const owed = decide(
    input({
      settings: signal,
      migration: migration({ identity: 'process', ovnkubeBefore: 'pid 42 start 1' }),
      ovnkube: unplaced,
      target: found,
    }),
  );
  assert.deepEqual(
    [owed.steps, owed.restart.phase, owed.restart.reason?.code, owed.wakeInMs],
    [[], 'Progressing', 'RestartAwaited', POLL_MS],
  );
  assert.match(
    owed.restart.reason!.message,
    /no identity to hold the restart target \(pid 42\) to \(cannot read the network namespace of ovnkube pid 77\): nothing is stopped/,
  );
  const start = decide(input({ settings: signal, plan: toLocal, ovnkube: unplaced, target: found }));
  assert.deepEqual(
    [start.steps, start.restart.phase, start.restart.reason?.code, start.wakeInMs],
    [[], 'Waiting', 'RestartPathBroken', POLL_MS],
  );
  // lastError says it too, as for every RestartPathBroken (docs/status.md points to it).
  assert.match(start.restart.error ?? '', /^the ovnkube-node observed has no identity .*: nothing is stopped$/);
});

test('decide: while a restart request is under way, the pass ends there: no step, looked at again in a second, the reason says so', () => {
  for (const m of [
    migration(),
    migration({
      restart: 'requested',
      stopped: 'c-old',
      stoppedAs: 'container c-old',
      lastAttemptAt: T - 300_000,
      attempts: 1,
    }),
  ]) {
    const d = decide(input({ migration: m, restarts: [T - 300_000], restartInFlight: true }));
    assert.deepEqual(d.steps, []);
    assert.equal(d.wakeInMs, POLL_MS);
    assert.match(
      d.restart.reason!.message,
      /^a restart request is under way \(.*\): waiting for its answer before any other for the migration to local$/,
    );
  }
});

test('decide: local, then shared reached without the agent, then local again: a new migration owes its restart', () => {
  const done = migration({ restart: 'done', doneAt: T - 3_600_000 });
  const reached = decide(
    input({
      desired: 'shared',
      migration: done,
      ovnkube: { mode: 'shared', pid: 43, id: 'p43', detail: null, release410Plus: null, modes: ['shared'] },
    }),
  );
  assert.deepEqual([reached.migration?.mode, reached.migration?.restart], ['shared', 'none']);
  const back = decide(input({ plan: toLocal, migration: reached.migration }));
  assert.deepEqual(
    back.steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
  assert.equal(back.migration?.restart, 'owed');
});

test('decide: a local migration owing its restart, desired shared, ovnkube-node keeping its mp0 fallback: no restart, the record moves on', () => {
  const fallback: Plan = { ...inSync, reasons: [reason('OvnkubeFallbackRoute', 'ovnkube-node keeps it')] };
  const d = decide(
    input({
      plan: fallback,
      desired: 'shared',
      migration: migration(),
      ovnkube: { mode: 'shared', pid: 43, id: 'p43', detail: null, release410Plus: null, modes: ['shared'] },
    }),
  );
  assert.deepEqual(d.steps, []);
  assert.deepEqual([d.migration?.mode, d.migration?.restart, d.restart.phase], ['shared', 'none', null]);
});

test("decide under --restart none (the one-shot commands', src/agent/engine.ts once): the migration is journaled, restart owed, with ovnkube-node's process; a repair within the migration on record, a blocked or dry-run plan journal nothing", () => {
  const none = (over: Partial<DecideInput>) =>
    decide(input({ settings: { ...settings, strategy: 'none' }, target: null, ...over }));
  const journaled = (d: ReturnType<typeof decide>) => d.steps.find((s) => s.kind === 'journal')?.migration ?? null;
  const m = journaled(none({ plan: toLocal }));
  assert.deepEqual(
    [m?.mode, m?.restart, m?.identity, m?.ovnkubeBefore, m?.startedAt, m?.routes],
    ['local', 'owed', 'process', 'pid 42 start 1', T, [{ key: action.key, from: BR, to: MP }]],
  );
  const repair = none({ plan: toLocal, migration: migration({ restart: 'done', doneAt: T - 1 }) });
  assert.deepEqual([journaled(repair), repair.steps.map((s) => s.kind)], [null, ['replace']]);
  assert.deepEqual(none({ plan: { ...toLocal, blocked: true } }).steps, []);
  assert.deepEqual(none({ plan: { ...toLocal, dryRun: true, reasons: [reason('DryRun', 'dry run')] } }).steps, []);
  assert.deepEqual(none({ plan: inSync }).steps, []);
  assert.equal(
    journaled(none({ plan: toLocal, migration: migration({ mode: 'shared', restart: 'done', doneAt: T - 1 }) }))?.mode,
    'local',
  );
});

test('decide: right after a restart request, look closely for the successor; later, every second', () => {
  const requested = (at: number) =>
    migration({ restart: 'requested', stopped: 'c-old', lastAttemptAt: at, attempts: 1 });
  assert.equal(decide(input({ migration: requested(T - 500) })).wakeInMs, QUICK_POLL_MS);
  assert.equal(decide(input({ migration: requested(T - 5000) })).wakeInMs, POLL_MS);
});

test('decide: while a restart is owed, look every second even behind the rate limit', () => {
  assert.equal(decide(input({ migration: migration(), restarts: [T - 60_000] })).wakeInMs, POLL_MS);
});

test('decide: while waiting on ovnkube-node, look again every second', () => {
  const waiting: Plan = {
    ...inSync,
    blocked: true,
    awaitsOvnkube: true,
    reasons: [reason('OvnkubeOtherMode', 'runs shared')],
  };
  assert.equal(decide(input({ plan: waiting })).wakeInMs, POLL_MS);
  assert.equal(decide(input({})).wakeInMs, undefined);
});

const none = { phase: null, reason: null };
const summaryRows: Array<{ name: string; args: Parameters<typeof summarize>; phase: string; first: string }> = [
  { name: 'in sync', args: [inSync, none, new Map(), null], phase: 'Converged', first: 'InSync' },
  { name: 'replacing', args: [toLocal, none, new Map(), null], phase: 'Progressing', first: 'Replacing' },
  {
    name: 'blocked',
    args: [{ ...inSync, blocked: true, reasons: [reason('NoRoute', 'x')] }, none, new Map(), null],
    phase: 'Waiting',
    first: 'NoRoute',
  },
  {
    name: 'restart owed beats in sync',
    args: [inSync, { phase: 'Progressing', reason: reason('RestartAwaited', 'r') }, new Map(), null],
    phase: 'Progressing',
    first: 'RestartAwaited',
  },
  {
    name: 'restart awaited beats an ovnkube-node gone missing',
    args: [
      { ...inSync, blocked: true, reasons: [reason('OvnkubeModeUnknown', 'x')] },
      { phase: 'Progressing', reason: reason('RestartAwaited', 'r') },
      new Map(),
      null,
    ],
    phase: 'Progressing',
    first: 'RestartAwaited',
  },
  {
    name: 'suspensions degrade',
    args: [inSync, none, new Map([['10.96.0.0/16', 'set back']]), null],
    phase: 'Degraded',
    first: 'RepairsSuspended',
  },
  {
    name: 'a failed restart degrades',
    args: [inSync, { phase: 'Degraded', reason: reason('RestartFailed', 'f') }, new Map(), null],
    phase: 'Degraded',
    first: 'RestartFailed',
  },
  {
    name: 'an error beats all',
    args: [
      inSync,
      { phase: 'Progressing', reason: reason('RestartAwaited', 'r') },
      new Map([['a', 'b']]),
      reason('ReconcileFailed', 'e'),
    ],
    phase: 'Degraded',
    first: 'ReconcileFailed',
  },
];

for (const r of summaryRows) {
  test(`summarize: ${r.name}`, () => {
    const s = summarize(...r.args);
    assert.deepEqual([s.phase, s.reasons[0]?.code], [r.phase, r.first]);
  });
}

test('fights: the third set-back within ten minutes suspends repairs, once per set-back', () => {
  let f = trackFights(NO_FIGHTS, {
    situation: { desiredMode: 'local', ovnkube: 'a' },
    observed: new Map(),
    now: T,
    hint: 'h',
  });
  for (let i = 1; i <= FIGHT_LIMIT + 1; i++) {
    f = recordApplied(f, [action], T + i * 1000);
    f = trackFights(f, {
      situation: { desiredMode: 'local', ovnkube: 'a' },
      observed: new Map([['10.96.0.0/16', BR]]),
      now: T + i * 1000 + 500,
      hint: 'h',
    });
    // The same observation seen again is not another set-back.
    f = trackFights(f, {
      situation: { desiredMode: 'local', ovnkube: 'a' },
      observed: new Map([['10.96.0.0/16', BR]]),
      now: T + i * 1000 + 600,
      hint: 'h',
    });
    assert.equal(f.setBacks.get('10.96.0.0/16')?.length, i);
  }
  assert.match(
    suspensionsOf(f).get('10.96.0.0/16') ?? '',
    /set back to via 172.18.0.1 dev br-ex mtu 1400 3 times in 10 min: h/,
  );
  // Found right again by someone else: lifted.
  const lifted = trackFights(f, {
    situation: { desiredMode: 'local', ovnkube: 'a' },
    observed: new Map([['10.96.0.0/16', MP]]),
    now: T + 10_000,
    hint: 'h',
  });
  assert.equal(suspensionsOf(lifted).size, 0);
  // A new ovnkube-node forgives all.
  assert.equal(
    trackFights(f, {
      situation: { desiredMode: 'local', ovnkube: 'b' },
      observed: new Map([['10.96.0.0/16', BR]]),
      now: T + 10_000,
      hint: 'h',
    }).suspended.size,
    0,
  );
});

test("fights: a migration's restart (a new ovnkube-node right after the replace) does not make the first set-back free", () => {
  const at = (inputs: string, observed: typeof MP, now: number, f: typeof NO_FIGHTS) =>
    trackFights(f, {
      situation: { desiredMode: inputs.split('|')[0] as 'local' | 'shared', ovnkube: inputs.split('|')[1]! },
      observed: new Map([['10.96.0.0/16', observed]]),
      now,
      hint: 'h',
    });
  // The migration's replace, under ovnkube-node a; the restart brings b, the route still right.
  let f = recordApplied(at('local|a', BR, T, NO_FIGHTS), [action], T + 100);
  f = at('local|b', MP, T + 1000, f);
  assert.equal(f.setBacks.size, 0);
  // Set back, repaired, set back, repaired, set back: the third set-back suspends, after two repairs.
  for (let i = 1; i <= FIGHT_LIMIT + 1; i++) {
    f = at('local|b', BR, T + 1000 + i * 1000, f);
    assert.equal(f.setBacks.get('10.96.0.0/16')?.length, i, `set-back ${i}`);
    assert.equal(f.suspended.size, i > FIGHT_LIMIT ? 1 : 0, `set-back ${i}`);
    if (i <= FIGHT_LIMIT) f = recordApplied(f, [action], T + 1000 + i * 1000 + 100);
  }
  // Another desired mode: what the agent gave the route for the old one is no longer what it wants.
  const other = at('shared|a', BR, T + 1000, recordApplied(at('local|a', BR, T, NO_FIGHTS), [action], T + 100));
  assert.equal(other.setBacks.size, 0);
  assert.equal(other.lastApplied.size, 0);
});

test('fights: set-backs further apart than the window never suspend', () => {
  let f = NO_FIGHTS;
  for (let i = 0; i < 5; i++) {
    const now = T + i * (FIGHT_WINDOW_MS + 1000);
    f = recordApplied(f, [action], now);
    f = trackFights(f, {
      situation: { desiredMode: 'local', ovnkube: 'x' },
      observed: new Map([['10.96.0.0/16', BR]]),
      now: now + FIGHT_WINDOW_MS + 1,
      hint: 'h',
    });
  }
  assert.equal(f.suspended.size, 0);
});

test('decide (signal): the target is exactly the ovnkube-node observed, or nothing; another one found means "look again" at once, never a stop of it', () => {
  const signal: RestartSettings = { ...settings, strategy: 'signal' };
  const A = {
    mode: 'local' as const,
    pid: 42,
    id: 'pid 42 start 1',
    detail: null,
    release410Plus: null,
    modes: ['local' as const],
  };
  const B = { target: { id: 'pid 43 start 2', describe: 'pid 43' } };
  const owed = migration({ identity: 'process', ovnkubeBefore: A.id });
  // The restart owed: the observation saw A, the lookup found B (kubelet restarted A in between).
  const d = decide(input({ settings: signal, migration: owed, ovnkube: A, target: B }));
  assert.deepEqual(d.steps, []);
  assert.equal(d.migration, owed, 'nothing recorded as requested');
  assert.equal(d.wakeInMs, QUICK_POLL_MS);
  assert.deepEqual([d.restart.phase, d.restart.reason?.code], ['Progressing', 'RestartAwaited']);
  assert.match(d.restart.reason!.message, /observed pid 42 start 1, then found pid 43/);
  // A failed restart retried: the same.
  assert.deepEqual(
    decide(
      input({
        settings: signal,
        migration: migration({
          identity: 'process',
          ovnkubeBefore: A.id,
          restart: 'failed',
          attempts: 1,
          lastAttemptAt: T - 600_000,
        }),
        ovnkube: A,
        target: B,
      }),
    ).steps,
    [],
  );
  // The look again: B observed and found, B running the migration's mode is the proof (no restart).
  const again = decide(
    input({ settings: signal, migration: owed, ovnkube: { ...A, pid: 43, id: 'pid 43 start 2' }, target: B }),
  );
  assert.deepEqual([again.steps, again.migration?.restart], [[], 'done']);
  // The same process observed and found: it is the one stopped.
  const same = decide(
    input({ settings: signal, migration: owed, ovnkube: A, target: { target: { id: A.id, describe: 'pid 42' } } }),
  );
  assert.deepEqual(
    same.steps.map((s) => (s.kind === 'restart' ? s.target.id : s.kind)),
    [A.id],
  );
  // A migration about to begin: not begun on an observation the lookup contradicts.
  const start = decide(input({ settings: signal, plan: toLocal, ovnkube: A, target: B }));
  assert.deepEqual([start.steps, start.migration, start.wakeInMs], [[], null, QUICK_POLL_MS]);
  // CRI: the container found is what is compared with the migration's identity; no mismatch to look at.
  assert.deepEqual(
    decide(input({ plan: toLocal, ovnkube: A, target: OLD })).steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
});

test('decide: times in messages are shown in wall time (wallOffsetMs), the durations are the monotonic ones', () => {
  const done = migration({ restart: 'done', doneAt: T - 10_000 });
  const d = decide(
    input({
      migration: done,
      ovnkube: { mode: 'local', pid: 43, id: 'p43', detail: null, release410Plus: null, modes: ['local'] },
      target: NEW,
      wallOffsetMs: 1_700_000_000_000,
    }),
  );
  assert.equal(d.wakeInMs, 50_000);
  assert.match(
    d.restart.reason!.message,
    new RegExp(`until ${new Date(T + 50_000 + 1_700_000_000_000).toISOString()}`),
  );
});

test('decide: a restart held by the rate limit is Progressing, and says until when (wall time) and why', () => {
  const d = decide(input({ migration: migration(), restarts: [T - 60_000], wallOffsetMs: 1_700_000_000_000 }));
  const until = T - 60_000 + settings.limit.minIntervalMs;
  assert.equal(d.restart.phase, 'Progressing');
  assert.equal(
    d.restart.reason!.message,
    `waiting until ${new Date(until + 1_700_000_000_000).toISOString()} to restart ovnkube-node for the migration to local (the restart rate limit: the last restart was less than ${settings.limit.minIntervalMs / 1000}s ago)`,
  );
  assert.equal(summarize(inSync, d.restart, new Map(), null).phase, 'Progressing');
});

test('fights: a replace the agent put back itself counts as a set-back when found put back, and the suspension says so', () => {
  let s = trackFights(NO_FIGHTS, {
    situation: { desiredMode: 'local', ovnkube: 'A' },
    observed: new Map([['10.96.0.0/16', BR]]),
    now: T,
    hint: 'the hint',
  });
  for (let i = 1; i <= FIGHT_LIMIT + 1; i++) {
    s = recordApplied(s, [action], T + i, 'the agent put it back itself (EHOSTUNREACH)');
    s = trackFights(s, {
      situation: { desiredMode: 'local', ovnkube: 'A' },
      observed: new Map([['10.96.0.0/16', BR]]),
      now: T + i,
      hint: 'the hint',
    });
  }
  assert.match(
    suspensionsOf(s).get('10.96.0.0/16') ?? '',
    /3 times in 10 min: the agent put it back itself \(EHOSTUNREACH\); repairs of 10\.96\.0\.0\/16 suspended/,
  );
});

const SHARED_OVNKUBE = {
  mode: 'shared',
  pid: 43,
  id: 'p43',
  detail: null,
  release410Plus: null,
  modes: ['shared'],
} as const;
const moved = [{ key: action.key, from: BR, to: MP }];

test('decide: the node at another mode by itself keeps an unfinished rollback on record (its routes, its mark; no restart owed); a finished one moves on', () => {
  const unfinished = migration({
    restart: 'done',
    doneAt: T - 1,
    routes: moved,
    rollback: { startedAt: T - 10, doneAt: null },
  });
  const d = decide(
    input({ desired: 'shared', migration: unfinished, ovnkube: { ...SHARED_OVNKUBE, modes: ['shared'] } }),
  );
  const { doneAt: _, ...common } = unfinished as Migration & { doneAt: number };
  assert.deepEqual(d.migration, { ...common, restart: 'none' });
  const again = decide(
    input({ desired: 'shared', migration: d.migration, ovnkube: { ...SHARED_OVNKUBE, modes: ['shared'] } }),
  );
  assert.equal(again.migration, d.migration);
  assert.deepEqual(again.records, []);
  const finished = { ...unfinished, rollback: { startedAt: T - 10, doneAt: T - 5 } };
  const on = decide(
    input({ desired: 'shared', migration: finished, ovnkube: { ...SHARED_OVNKUBE, modes: ['shared'] } }),
  );
  assert.deepEqual([on.migration?.mode, on.migration?.restart, on.migration?.rollback], ['shared', 'none', null]);
});

test('decide: the routes moved again after a finished rollback are a new migration, clean: journaled, restart owed, no rollback mark', () => {
  const m = migration({
    restart: 'done',
    doneAt: T - 1,
    routes: moved,
    rollback: { startedAt: T - 10, doneAt: T - 5 },
  });
  assert.equal(needsTarget(toLocal, 'local', m, 'cri'), true);
  const d = decide(input({ plan: toLocal, migration: m }));
  assert.deepEqual(
    d.steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
  assert.deepEqual([d.migration?.restart, d.migration?.rollback, d.migration?.startedAt], ['owed', null, T]);
  // An unfinished rollback stays the record: moving its routes again is a repair within it.
  const half = { ...m, rollback: { startedAt: T - 10, doneAt: null } };
  const repair = decide(input({ plan: toLocal, migration: half }));
  assert.deepEqual(
    repair.steps.map((s) => s.kind),
    ['replace'],
  );
  assert.equal(repair.migration, half);
});

test('decide: after an unfinished rollback, the node back to shared and then to local again is a new migration that owes its restart, carrying the routes not yet put back', () => {
  const v6 = { prefix: 'fd00:10:96::/112', family: 6, table: 254, priority: 1024 } as const;
  const BR6: NextHop = { dev: 'br-ex', oif: 2, gateway: 'fd00:172:18::1', mtu: 1400 };
  const MP6: NextHop = { dev: 'ovn-k8s-mp0', oif: 4, gateway: 'fd00:10:244:1::1', mtu: null };
  // Killed half way: 10.96.0.0/16 put back, fd00:10:96::/112 not yet.
  const half = migration({
    restart: 'done',
    doneAt: T - 1,
    routes: [...moved, { key: v6, from: BR6, to: MP6 }],
    rollback: { startedAt: T - 10, doneAt: null },
  });
  const atShared = decide(
    input({ desired: 'shared', migration: half, ovnkube: { ...SHARED_OVNKUBE, modes: ['shared'] } }),
  );
  const kept = atShared.migration;
  assert.deepEqual([kept?.routes, kept?.rollback], [half.routes, half.rollback], 'the rollback keeps its record');
  assert.deepEqual(
    atShared.records.map((r) => r.kind),
    ['record'],
  );
  const back = decide(input({ plan: toLocal, migration: kept, now: T + 60_000 }));
  assert.deepEqual(
    back.steps.map((s) => s.kind),
    ['journal', 'replace'],
  );
  const m = back.migration;
  assert.deepEqual([m?.restart, m?.rollback, m?.startedAt], ['owed', null, T + 60_000]);
  assert.deepEqual(m?.routes, [
    { key: action.key, from: BR, to: MP },
    { key: v6, from: BR6, to: MP6 },
  ]);
});
