// Time in the owner loop: every duration holds on the monotonic clock whatever the wall
// clock does (NTP stepping it forward by minutes or back by a month), and no timer gets a
// delay Node would fire after 1 ms. A fake clock whose wall time jumps while its monotonic
// time advances with the mocked timers; passes are counted, elapsed time never asserted.
import { strict as assert } from 'node:assert';
import { mock, test } from 'node:test';
import { after, MAX_TIMER_MS, timerDelay } from '../../src/clock.js';
import { backoffMs } from '../../src/core/decide.js';
import { FIGHT_WINDOW_MS } from '../../src/core/fights.js';
import type { RestartTarget } from '../../src/core/migration.js';
import { FakeStrategy, makeAgent, rig, setBack, whenConverged, whenSettling, type Rig } from '../helpers/loop-rig.js';

const DAY_MS = 86_400_000;
/** The wall steps every test makes while a duration runs: two minutes forward, a month back. */
const STEPS = [
  { name: 'forward 2 min', ms: 120_000 },
  { name: 'back 30 days', ms: -30 * DAY_MS },
];

test.beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }));
test.afterEach(() => mock.timers.reset());

test('timerDelay: within [0, 2^31-1] ms, a NaN the longest (never the 1 ms Node gives a longer delay)', () => {
  assert.deepEqual(
    [-5, 0, 1.2, 1000, MAX_TIMER_MS, MAX_TIMER_MS + 1, 30 * DAY_MS, Infinity, -Infinity, NaN].map(timerDelay),
    [0, 0, 2, 1000, MAX_TIMER_MS, MAX_TIMER_MS, MAX_TIMER_MS, MAX_TIMER_MS, 0, MAX_TIMER_MS],
  );
  let fired = 0;
  after(30 * DAY_MS, () => fired++);
  mock.timers.tick(1000);
  assert.equal(fired, 0, 'a month away is not a millisecond away');
});

for (const step of STEPS) {
  test(`the settle window holds its 60 s with the wall clock stepped ${step.name}, and costs no pass while it runs`, async () => {
    const r = rig();
    await whenSettling(r, async ({ seen, advance, until }) => {
      const from = seen.length;
      r.wallOffset = step.ms;
      await advance(3000);
      r.wallOffset = -step.ms;
      await advance(56_000);
      assert.deepEqual(
        seen.slice(from).map((s) => s.phase),
        [],
        'no pass, nothing Converged, before the 60 s are over',
      );
      await advance(1000);
      await until((s) => s.phase === 'Converged', 'Converged at 60 s', from);
    });
  });

  test(`the restart timeout and the rate limit hold their durations with the wall clock stepped ${step.name}`, async () => {
    // The stop is taken and nothing replaces the container: the timeout (300 s) says so, and
    // the rate limit (one restart per 600 s) holds the second request until 600 s.
    class NoSuccessor extends FakeStrategy {
      override async restart(_t: RestartTarget): Promise<void> {
        this.calls++;
        this.stops++;
      }
    }
    const r: Rig = rig({
      strategy: new NoSuccessor(),
      restart: { timeoutMs: 300_000, limit: { minIntervalMs: 600_000, maxPerHour: 3 } },
    });
    const h = makeAgent(r);
    h.agent.start();
    try {
      await h.until(
        (s) => s.reasonCodes[0] === 'RestartAwaited' && s.restart?.migration?.restart === 'requested',
        'the request',
      );
      assert.equal(r.strategy.calls, 1);
      r.wallOffset = step.ms;
      await h.advance(298_000);
      assert.notEqual(h.seen.at(-1)?.reasonCodes[0], 'RestartTimedOut', 'not timed out before 300 s');
      await h.advance(2000);
      await h.until((s) => s.reasonCodes[0] === 'RestartTimedOut', 'timed out at 300 s');
      r.wallOffset = -step.ms;
      await h.advance(298_000);
      assert.equal(r.strategy.calls, 1, 'no second request before 600 s');
      await h.advance(2000);
      await h.flush();
      assert.equal(r.strategy.calls, 2, 'the second request at 600 s');
    } finally {
      await h.agent.stop();
    }
  });

  test(`the fight window holds its 10 min with the wall clock stepped ${step.name}: three set-backs within it suspend`, async () => {
    await whenConverged(['10.96.0.0/16'], async ({ r, until, advance, from }) => {
      for (let i = 0; i < 3; i++) {
        setBack(r, '10.96.0.0/16');
        // Each set-back repaired (the first two), within the window on the monotonic clock.
        if (i < 2) await until((s) => s.routes[0]?.inSync === true, `repair ${i + 1}`, from);
        r.wallOffset = (r.wallOffset ?? 0) + step.ms;
        await advance(FIGHT_WINDOW_MS / 4);
      }
      await until((s) => s.reasonCodes[0] === 'RepairsSuspended', 'suspended at the third set-back', from);
    });
  });

  test(`a failed pass is retried after its backoff, not before, with the wall clock stepped ${step.name}`, async () => {
    const r = rig();
    r.dp.inject('replace-eperm');
    const h = makeAgent(r);
    h.agent.start();
    try {
      await h.until((s) => s.phase === 'Degraded', 'Degraded');
      await h.flush();
      const passes = h.seen.length;
      r.wallOffset = step.ms;
      await h.flush();
      assert.equal(h.seen.length, passes);
      await h.advance(backoffMs(1, 1000, 60_000, 1));
      await h.until((s) => s.routes[0]?.inSync === true, 'the retry');
      assert.equal(
        h.seen[passes]?.routes[0]?.inSync,
        true,
        'the first pass after the failure is the retry, and it migrated',
      );
    } finally {
      await h.agent.stop();
    }
  });
}

test('a settle window longer than a timer can wait (30 days): no delay over 2^31-1 ms reaches setTimeout, and no spin', async () => {
  const delays: number[] = [];
  const mocked = globalThis.setTimeout;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => (
    delays.push(ms ?? 0),
    mocked(fn, ms)
  )) as typeof setTimeout;
  try {
    const r = rig({ restart: { settleMs: 30 * DAY_MS } });
    await whenSettling(r, async ({ seen, advance }) => {
      const from = seen.length;
      await advance(10_000);
      assert.ok(seen.length - from <= 1, `${seen.length - from} passes in 10 s of Settling`);
    });
  } finally {
    globalThis.setTimeout = mocked;
  }
  assert.ok(delays.length > 0);
  assert.ok(Math.max(...delays) <= MAX_TIMER_MS, `largest delay ${Math.max(...delays)}`);
});

test('a journal written while the wall clock ran a month ahead, read in another boot: its times are taken as now, so the settle window lasts its 60 s, not a month', async () => {
  const r = rig({ bootId: 'boot-2' });
  // The agent before wrote doneAt by a wall clock 30 days ahead, in boot-1.
  const ahead = r.now + 30 * DAY_MS;
  r.journal.data = {
    version: 3,
    clock: { bootId: 'boot-1', wallMinusMonotonicMs: 0 },
    restarts: [ahead],
    migration: {
      mode: 'local',
      startedAt: ahead,
      identity: 'container',
      ovnkubeBefore: 'c0',
      routes: [],
      restart: 'done',
      attempts: 1,
      last: { at: ahead, target: { id: 'c0', describe: 'container c0' }, result: 'stopped', error: null },
      rollback: null,
      doneAt: ahead,
    },
  };
  r.dp.setRoute('10.96.0.0/16', '10.244.1.1', 'ovn-k8s-mp0', null);
  const h = makeAgent(r);
  await h.agent.init();
  h.agent.start();
  try {
    const settling = await h.until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.match(settling.reasons[0]!, /until /);
    await h.advance(60_000);
    await h.until((s) => s.phase === 'Converged', 'Converged after 60 s');
  } finally {
    await h.agent.stop();
  }
});

test('the journal on disk keeps wall times with the boot and offset; the next agent of the same boot reads them back exactly, the wall clock stepped back a month meanwhile', async () => {
  const r = rig({ bootId: 'boot-1', wallOffset: 1_700_000_000_000 - 1_000_000_000 });
  await whenSettling(r, async () => {
    assert.deepEqual(r.journal.data.clock, { bootId: 'boot-1', wallMinusMonotonicMs: r.wallOffset });
    const m = r.journal.data.migration;
    assert.ok(m?.restart === 'done' && m.doneAt >= 1_700_000_000_000, 'wall time on disk');
  });
  const m = r.journal.data.migration;
  assert.ok(m?.restart === 'done');
  const doneAt = m.doneAt - r.wallOffset!;
  // The next agent, 30 s into the settle window: its 60 s end 30 s later, not a month later, not at once.
  const next = rig({
    bootId: 'boot-1',
    journal: r.journal,
    dp: r.dp,
    strategy: r.strategy,
    now: doneAt + 30_000,
    wallOffset: r.wallOffset! - 30 * DAY_MS,
  });
  const h = makeAgent(next);
  await h.agent.init();
  h.agent.start();
  try {
    const s = await h.until((x) => x.lastReconcile !== null, 'a pass');
    assert.equal(s.reasonCodes[0], 'Settling');
    assert.equal(
      s.restart?.migration?.startedAt,
      new Date(r.journal.data.migration!.startedAt - r.wallOffset! + next.wallOffset!).toISOString(),
      'shown in the wall clock of now',
    );
    await h.advance(29_000);
    assert.notEqual(h.seen.at(-1)?.phase, 'Converged');
    await h.advance(1000);
    await h.until((x) => x.phase === 'Converged', 'Converged at 60 s');
  } finally {
    await h.agent.stop();
  }
});
