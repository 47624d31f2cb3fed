// The owner loop on a stateful fake dataplane, a fake restart strategy and an
// in-memory journal, with node:test's mock timers: no test waits on real time. Each
// fault test asserts the fault it injected was consumed, and what the agent did.
import { strict as assert } from 'node:assert';
import { mock, test } from 'node:test';
import { backoffMs } from '../../src/core/decide.js';
import type { Migration, RestartTarget, TargetLookup } from '../../src/core/migration.js';
import type { OvnkubeObservation } from '../../src/core/types.js';
import type { JournalData } from '../../src/restart/journal.js';
import { parseCidr } from '../../src/net/cidr.js';
import { seedConfig } from '../helpers/config.js';
import type { Fault } from '../helpers/fake-dataplane.js';
import {
  FakeStrategy,
  LOCAL,
  makeAgent,
  rig,
  setBack,
  successor,
  whenConverged,
  whenSettling,
} from '../helpers/loop-rig.js';

test.beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }));
test.afterEach(() => mock.timers.reset());

const faults: Array<{ fault: Fault; expectError: RegExp }> = [
  { fault: 'replace-eperm', expectError: /EPERM/ },
  { fault: 'replace-silently-ignored', expectError: /after replacing, not as written/ },
  { fault: 'dump-interrupted', expectError: /interrupted 5 times in a row/ },
];

for (const { fault, expectError } of faults) {
  test(`fault ${fault}: Degraded with the error, retried after backoff, then migrated`, async () => {
    const r = rig();
    r.dp.inject(fault);
    const { agent, until, advance } = makeAgent(r);
    agent.start();
    try {
      const degraded = await until((s) => s.phase === 'Degraded', 'Degraded');
      assert.match(degraded.lastError ?? '', expectError);
      assert.equal(degraded.reasonCodes[0], 'ReconcileFailed');
      await advance(backoffMs(1, 1000, 60_000, 1));
      const done = await until(LOCAL, 'the local route');
      assert.equal(done.lastError, null);
      assert.ok(r.dp.consumed.has(fault), 'the injected fault fired');
    } finally {
      await agent.stop();
    }
  });
}

test('a replace changed at once into a route the next plan will not touch is still a failed verification, not a quiet Waiting', async () => {
  const r = rig();
  // Someone puts the route on another device right after the replace: the next plan holds it (NotOurRoute).
  r.dp.afterReplace = () => r.dp.setRoute('10.96.0.0/16', '192.0.2.1', 'eth9', null);
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    const failed = await until((s) => s.phase === 'Degraded', 'the failed verification');
    assert.match(
      failed.lastError ?? '',
      /: after replacing, not as written: 10\.96\.0\.0\/16 is via 192\.0\.2\.1 dev eth9, via 10\.244\.1\.1 dev ovn-k8s-mp0 written$/,
    );
    await advance(backoffMs(1, 1000, 60_000, 1));
    await until((s) => s.reasonCodes.includes('NotOurRoute'), 'NotOurRoute on the next pass');
    assert.equal(r.dp.replaces.length, 1, 'the route on eth9 is left alone');
  } finally {
    await agent.stop();
  }
});

test("a replaced route deleted at once (a 4.8/4.9 ovnkube-node's start-up flush) is no failed verification: the plan says NoRoute, nothing is created", async () => {
  const r = rig();
  r.dp.afterReplace = () => r.dp.table.delete('10.96.0.0/16');
  const { agent, until, logs } = makeAgent(r);
  agent.start();
  try {
    const waiting = await until((s) => s.reasonCodes.includes('NoRoute'), 'NoRoute');
    assert.equal(waiting.lastError, null);
    assert.deepEqual(
      logs.filter((l) => l.msg === 'reconcile failed'),
      [],
    );
    assert.equal(r.dp.replaces.length, 1, 'no route created');
  } finally {
    await agent.stop();
  }
});

test('a route that vanishes before the replace is never created: the agent observes again', async () => {
  const r = rig();
  r.dp.inject('route-vanishes');
  const { agent, until } = makeAgent(r);
  agent.start();
  try {
    const waiting = await until((s) => s.reasonCodes.includes('NoRoute'), 'NoRoute');
    assert.equal(waiting.phase, 'Waiting');
    assert.ok(r.dp.consumed.has('route-vanishes'));
    assert.equal(r.dp.table.has('10.96.0.0/16'), false, 'no route was created');
    assert.equal(r.strategy.stops, 0);
    assert.equal(r.journal.data.migration, null, 'the migration that did not happen is not on record');
  } finally {
    await agent.stop();
  }
});

test('dual-stack: a failed second replace puts the first back, and says so', async () => {
  const r = rig();
  r.dp.setRoute('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400);
  r.dp.inject('replace-v6-eperm');
  const saved: JournalData['migration'][] = [];
  const save = r.journal.save.bind(r.journal);
  r.journal.save = async (d) => (saved.push(d.migration), save(d));
  const { agent, until } = makeAgent(
    r,
    seedConfig({ serviceCidrs: [parseCidr('10.96.0.0/16'), parseCidr('fd00:10:96::/112')] }),
  );
  agent.start();
  try {
    const degraded = await until((s) => s.phase === 'Degraded', 'Degraded');
    assert.match(degraded.lastError ?? '', /replace of fd00:10:96::\/112 failed.*put back 10\.96\.0\.0\/16/);
    // v4 to mp0, v6 to mp0 (refused), then v4 put back exactly as it was.
    const [v4, v6, back] = r.dp.replaces;
    assert.deepEqual(
      [v4?.key.prefix, v6?.key.prefix, back?.key.prefix],
      ['10.96.0.0/16', 'fd00:10:96::/112', '10.96.0.0/16'],
    );
    assert.deepEqual(back?.to, { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 });
    assert.equal(degraded.restart?.count, 0, 'no restart for a migration that did not happen');
    assert.ok(r.dp.consumed.has('replace-v6-eperm'));
    // Journaled before the first replace, then taken off the record (a pass after it may migrate anew).
    assert.deepEqual(
      saved.slice(0, 2).map((m) => m?.mode ?? null),
      ['local', null],
      'refused, everything put back: the migration is off the record',
    );
  } finally {
    await agent.stop();
  }
});

test('a replace whose answer was lost keeps the migration on record: the restart it owes still happens', async () => {
  const r = rig();
  r.dp.inject('replace-answer-lost');
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.phase === 'Degraded', 'Degraded');
    assert.ok(r.dp.consumed.has('replace-answer-lost'));
    assert.equal(r.journal.data.migration?.mode, 'local', 'the migration stays on record');
    await advance(backoffMs(1, 1000, 60_000, 1));
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.equal(r.strategy.stops, 1);
  } finally {
    await agent.stop();
  }
});

test('another service route set back while a replace is verified: repaired in the same pass, no failure reported', async () => {
  await whenConverged(['10.96.0.0/16', '10.97.0.0/16'], async ({ r, agent, until, seen, logs, from, replaced }) => {
    // The repair of 10.96.0.0/16 is taken; right after it, someone sets 10.97.0.0/16 back.
    r.dp.afterReplace = () => setBack(r, '10.97.0.0/16');
    setBack(r, '10.96.0.0/16');
    await until(
      (s) => s.routes.length === 2 && s.routes.every((x) => x.observed?.dev === 'ovn-k8s-mp0' && x.inSync),
      'both repaired',
      from,
    );
    await agent.settle();
    assert.equal(r.dp.afterReplace, null, 'the outside change happened');
    assert.deepEqual(
      r.dp.replaces.slice(replaced).map((x) => x.key.prefix),
      ['10.96.0.0/16', '10.97.0.0/16'],
    );
    assert.deepEqual(
      seen
        .slice(from)
        .filter((s) => s.phase !== 'Converged')
        .map((s) => s.reasonCodes),
      [],
      'no status but Converged: no failure',
    );
    assert.deepEqual(
      logs.filter((l) => l.msg === 'reconcile failed'),
      [],
    );
  });
});

test('set-backs one after another use up the rounds: the last replace is still verified, and one the kernel ignored is a failure', async () => {
  const cidrs = ['10.96.0.0/16', '10.97.0.0/16', '10.98.0.0/16'];
  await whenConverged(cidrs, async ({ r, until, logs, from, replaced }) => {
    // Each repair is followed by someone setting the next CIDR back; the kernel ignores the third repair.
    r.dp.afterReplace = () => {
      setBack(r, '10.97.0.0/16');
      r.dp.afterReplace = () => {
        setBack(r, '10.98.0.0/16');
        r.dp.inject('replace-silently-ignored');
      };
    };
    setBack(r, '10.96.0.0/16');
    const failed = await until((s) => s.reasonCodes.includes('ReconcileFailed'), 'the failed verification', from);
    assert.match(failed.lastError ?? '', /after replacing, not as written: .*10\.98\.0\.0\/16/);
    assert.ok(r.dp.consumed.has('replace-silently-ignored'));
    assert.deepEqual(
      r.dp.replaces.slice(replaced, replaced + 3).map((x) => x.key.prefix),
      cidrs,
      'one repair a round, in one pass',
    );
    assert.equal(logs.filter((l) => l.msg === 'reconcile failed').length, 1);
  });
});

test('what the verify-only round finds besides is left to a pass that runs at once, not to the resync', async () => {
  await whenConverged(['10.96.0.0/16', '10.97.0.0/16', '10.98.0.0/16', '10.99.0.0/16'], async ({ r, until, from }) => {
    // Three repairs use up the rounds. Neither they nor the set-backs after them are
    // announced (their notifications lost): no event asks for another pass, and the
    // set-back after the third repair is seen by the verify-only round alone.
    r.dp.inject('replace-unannounced');
    r.dp.afterReplace = () => {
      setBack(r, '10.97.0.0/16', false);
      r.dp.inject('replace-unannounced');
      r.dp.afterReplace = () => {
        setBack(r, '10.98.0.0/16', false);
        r.dp.inject('replace-unannounced');
        r.dp.afterReplace = () => setBack(r, '10.99.0.0/16', false);
      };
    };
    setBack(r, '10.96.0.0/16');
    await until(
      (s) => s.routes.length === 4 && s.routes.every((x) => x.observed?.dev === 'ovn-k8s-mp0' && x.inSync),
      'all four repaired',
      from,
    );
    assert.ok(r.dp.consumed.has('replace-unannounced'));
    assert.equal(r.dp.afterReplace, null);
  });
});

test('a migration owes exactly one restart: requested once, the new ovnkube-node proves it, settle, Converged', async () => {
  const r = rig();
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.equal(r.strategy.stops, 1);
    assert.equal(r.journal.data.migration?.restart, 'done');
    await advance(60_000);
    const converged = await until((s) => s.phase === 'Converged', 'Converged');
    assert.ok(LOCAL(converged));
    // More passes change nothing: the migration's restart is done.
    agent.kick('test');
    await agent.settle();
    assert.equal(r.strategy.stops, 1);
  } finally {
    await agent.stop();
  }
});

test('a failed restart is not forgotten: Degraded, retried after backoff, then done', async () => {
  const r = rig();
  r.strategy.failNext = true;
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    const failed = await until((s) => s.reasonCodes[0] === 'RestartFailed', 'RestartFailed');
    assert.equal(failed.phase, 'Degraded');
    assert.equal(r.strategy.stops, 0);
    // The rate limit counts the failed request too: past it and the backoff, retried.
    await advance(300_000);
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.equal(r.strategy.stops, 1);
  } finally {
    await agent.stop();
  }
});

test('the journal failing after a restart was requested: the state is kept in memory, the status says the journal lags behind, the save is retried, and the migration settles and converges', async () => {
  const r = rig();
  // Saves 1 and 2 (the migration, the restart request) are written; from the 3rd (the
  // request's outcome), four saves fail: the disk stays full over several passes.
  r.journal.fail = (n) => n >= 3 && n <= 6;
  const { agent, seen, until, advance, logs } = makeAgent(r);
  agent.start();
  try {
    const lagging = await until((s) => s.reasonCodes[0] === 'JournalUnwritable', 'JournalUnwritable');
    const seenAt = r.now;
    assert.match(
      lagging.reasons[0]!,
      /^the journal lags behind: .* was carried out but could not be recorded \(attempt \d+, retrying in \d+ ms\): cannot write the journal .*ENOSPC/,
    );
    assert.doesNotMatch(lagging.reasons[0]!, /refusing/);
    assert.equal(r.strategy.stops, 1, 'the restart was requested once');
    assert.equal(lagging.restart?.migration?.restart, 'done', 'the new ovnkube-node seen is kept in memory');
    assert.equal(r.journal.data.migration?.restart, 'requested', 'the disk is behind');
    assert.ok(logs.some((l) => /^the journal lags behind: /.test(l.msg)));

    // Passes go on while the disk is full; the migration's settling is counted from
    // when the new ovnkube-node was first seen, not from each pass.
    const from = seen.length;
    await advance(90_000);
    assert.equal(r.journal.failed, 4, 'the save was retried');
    await until((s) => s.phase === 'Converged', 'Converged', from);
    await agent.settle();
    const doneAt = (m: Migration | null) => (m?.restart === 'done' ? m.doneAt : null);
    assert.equal(
      doneAt(r.journal.data.migration),
      seenAt,
      'the journal caught up: done when first seen, never recomputed',
    );
    assert.equal(agent.status().lastError, null);
    assert.equal(r.strategy.stops, 1, 'one restart in all');
    assert.ok(logs.some((l) => l.msg === 'the journal caught up'));
  } finally {
    await agent.stop();
  }
});

test("the journal failing as it takes a refused migration off the record: the kernel's error and the journal's are both logged, and the node converges", async () => {
  const r = rig();
  r.dp.inject('replace-eperm');
  // Save 1 records the migration; save 2, taking it off after the kernel's refusal, fails.
  r.journal.fail = (n) => n === 2;
  const { agent, until, advance, logs } = makeAgent(r);
  agent.start();
  try {
    const degraded = await until((s) => s.phase === 'Degraded', 'Degraded');
    assert.equal(degraded.reasonCodes[0], 'ReconcileFailed', "the pass failed with the kernel's error");
    assert.match(degraded.lastError ?? '', /EPERM/);
    const lag = logs.find((l) =>
      /^the journal lags behind: taking the migration the kernel refused off the record/.test(l.msg),
    ) as { msg: string; err?: { message?: string }; kernelError?: string } | undefined;
    assert.ok(lag, 'the failed save is logged');
    assert.match(lag.err?.message ?? '', /ENOSPC/);
    assert.match(lag.kernelError ?? '', /EPERM/, "with the kernel's error beside it");
    await advance(backoffMs(1, 1000, 60_000, 1));
    await until(LOCAL, 'the local route');
    assert.equal(r.journal.failed, 1);
  } finally {
    await agent.stop();
  }
});

test('a restart owed when the agent dies is done by the next agent, once', async () => {
  const r = rig();
  r.strategy.failNext = true;
  const first = makeAgent(r);
  first.agent.start();
  await first.until((s) => s.reasonCodes[0] === 'RestartFailed', 'RestartFailed');
  await first.agent.stop();
  mock.timers.reset();
  mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  r.now += 300_000;
  const second = makeAgent(r);
  await second.agent.init();
  second.agent.start();
  try {
    await second.until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.equal(r.strategy.stops, 1);
  } finally {
    await second.agent.stop();
  }
});

test("local, shared, local: each migration to local gets its restart; shared is ovnkube-node's (its restart heals the node, none by the agent)", async () => {
  const r = rig();
  const { agent, until, advance, seen } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await advance(3_600_000);
    r.read = { mode: 'shared', error: null };
    // The rollout's new ovnkube-node in shared mode drops its mp0 route and adds the br-ex one.
    r.ovnkube = successor('shared');
    r.dp.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    let from = seen.length;
    agent.kick('mode file changed');
    const shared = await until(
      (s) => s.desiredMode === 'shared' && s.reasonCodes[0] === 'InSync',
      'InSync for shared',
      from,
    );
    assert.deepEqual(
      [shared.phase, shared.restart?.required, r.strategy.stops, r.dp.replaces.length],
      ['Converged', false, 1, 1],
    );
    await advance(3_600_000);
    r.read = { mode: 'local', error: null };
    r.ovnkube = { mode: 'local', pid: 44, id: 'pid 44 start 3', detail: null, release410Plus: null, modes: ['local'] };
    from = seen.length;
    agent.kick('mode file changed');
    await until((s) => s.desiredMode === 'local' && s.reasonCodes[0] === 'Settling', 'Settling for local', from);
    assert.equal(r.strategy.stops, 2);
    assert.equal(r.dp.nextHopOf('10.96.0.0/16'), 'via 10.244.1.1 dev ovn-k8s-mp0');
  } finally {
    await agent.stop();
  }
});

test('the mode turns shared while the restart request of the local migration is under way: no request for shared, the record moves on, no restart said to be required', async () => {
  const r = rig();
  r.strategy.holdNext = true;
  const { agent, until, advance, seen } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'RestartAwaited' && r.strategy.calls === 1, 'the first request made');
    r.read = { mode: 'shared', error: null };
    r.ovnkube = { ...r.ovnkube, mode: 'shared', modes: ['shared'] };
    const from = seen.length;
    agent.kick('mode file changed');
    // The mp0 route stays (ovnkube-node's to move): the agent writes nothing towards shared.
    const held = await until(
      (s) => s.desiredMode === 'shared' && s.reasonCodes[0] === 'OvnkubeFallbackRoute',
      'shared at rest',
      from,
    );
    assert.deepEqual([held.phase, held.restart?.required], ['Converged', false]);
    assert.deepEqual([r.journal.data.migration?.mode, r.journal.data.migration?.restart], ['shared', 'none']);
    await advance(5000);
    r.strategy.release();
    await agent.settle();
    assert.deepEqual([r.strategy.calls, r.dp.replaces.length], [1, 1]);
    assert.equal(r.dp.nextHopOf('10.96.0.0/16'), 'via 10.244.1.1 dev ovn-k8s-mp0');
  } finally {
    r.strategy.release();
    await agent.stop();
  }
});

test('a restart request answered after stop() began (its answer wakes no pass then): the answer is journaled all the same', async () => {
  const r = rig();
  r.strategy.holdNext = true;
  r.strategy.failNext = true;
  const { agent, until } = makeAgent(r);
  agent.start();
  await until((s) => s.reasonCodes[0] === 'RestartAwaited' && r.strategy.calls === 1, 'the request made');
  assert.equal(agent.waitingOn(), 'restart');
  const stopped = agent.stop();
  r.strategy.release();
  await stopped;
  const m = r.journal.data.migration!;
  assert.deepEqual(
    [m.restart, m.last?.result, m.last?.error],
    ['failed', 'failed', 'runtime said no'],
    'the next agent retries it after backoff, not after the restart timeout',
  );
});

test('--restart none: Progressing until ovnkube-node is restarted by someone, noticed within a second', async () => {
  const r = rig({ strategy: new FakeStrategy('none') });
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    const owed = await until((s) => s.reasonCodes[0] === 'RestartAwaited', 'RestartAwaited');
    assert.equal(owed.phase, 'Progressing');
    assert.match(owed.reasons[0] ?? '', /--restart none: restart it by hand/);
    assert.equal(owed.restart?.required, true);
    r.ovnkube = { ...r.ovnkube, pid: 43, id: 'pid 43 start 9' };
    await advance(1000);
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
  } finally {
    await agent.stop();
  }
});

test('a lost notification forces a full pass that repairs what no event announced', async () => {
  const r = rig();
  const { agent, seen, until, advance } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await advance(60_000);
    await until((s) => s.phase === 'Converged', 'Converged');
    r.dp.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    const from = seen.length;
    r.dp.emit({ kind: 'lost', error: new Error('ENOBUFS') });
    await until(LOCAL, 'repaired', from);
    assert.equal(r.dp.replaces.length, 2);
    assert.equal(r.strategy.stops, 1, 'a repair is no new migration');
  } finally {
    await agent.stop();
  }
});

test('nothing is applied before the first valid mode, and a bad mode later keeps the last good one', async () => {
  const r = rig({ read: { mode: null, error: 'the file is empty' } });
  const { agent, until, seen } = makeAgent(r);
  agent.start();
  try {
    const waiting = await until((s) => s.lastReconcile !== null, 'a pass');
    assert.equal(waiting.phase, 'Waiting');
    assert.equal(waiting.reasonCodes[0], 'ModeNotRead');
    assert.equal(r.dp.replaces.length, 0);
    r.read = { mode: 'local', error: null };
    agent.kick('test');
    await until(LOCAL, 'local');
    r.read = { mode: null, error: 'garbage' };
    const from = seen.length;
    agent.kick('test');
    const kept = await until((s) => s.modeSource.error === 'garbage', 'the error', from);
    assert.equal(kept.desiredMode, 'local');
    assert.ok(kept.reasonCodes.includes('ModeFileInvalid'));
    assert.equal(r.dp.replaces.length, 1);
  } finally {
    await agent.stop();
  }
});

test('Degraded is logged as a warning, and a pass with nothing to carry out logs no plan', async () => {
  const r = rig();
  r.dp.inject('replace-eperm');
  const { agent, until, logs } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.phase === 'Degraded', 'Degraded');
    const degraded = logs.find((l) => l.msg === 'phase Degraded');
    assert.equal(degraded?.level, 40, 'warn');
    // The next pass migrates (a plan is logged); the one after has nothing to carry out.
    agent.kick('test');
    await agent.settle();
    const plans = logs.filter((l) => l.msg === 'carrying out plan').length;
    assert.ok(plans >= 2);
    agent.kick('test');
    await agent.settle();
    assert.equal(logs.filter((l) => l.msg === 'carrying out plan').length, plans);
  } finally {
    await agent.stop();
  }
});

test('a suspended CIDR: the passes carry out nothing, and say nothing about carrying out', async () => {
  const r = rig({ strategy: new FakeStrategy('none') });
  const { agent, until, logs, advance } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'RestartAwaited', 'migrated');
    // Something sets the route back three times: repairs are suspended.
    for (let i = 0; i < 3; i++) {
      r.dp.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
      agent.kick('set back');
      await agent.settle();
      await advance(1000);
    }
    await until((s) => s.routes[0]?.repairsSuspended != null, 'suspended');
    const plans = logs.filter((l) => l.msg === 'carrying out plan').length;
    const replaces = r.dp.replaces.length;
    agent.kick('test');
    await agent.settle();
    assert.equal(r.dp.replaces.length, replaces, 'nothing replaced');
    assert.equal(logs.filter((l) => l.msg === 'carrying out plan').length, plans, 'no plan logged');
  } finally {
    await agent.stop();
  }
});

test('a node that reached its mode without the agent owes no restart, and the status says so', async () => {
  const r = rig();
  r.dp.setRoute('10.96.0.0/16', '10.244.1.1', 'ovn-k8s-mp0', null);
  r.journal.data = {
    version: 3,
    restarts: [],
    migration: {
      mode: 'shared',
      startedAt: 1,
      identity: 'container',
      ovnkubeBefore: null,
      routes: [],
      restart: 'done',
      attempts: 1,
      last: null,
      rollback: null,
      doneAt: 1,
    },
  };
  const { agent, until } = makeAgent(r);
  await agent.init();
  agent.start();
  try {
    const s = await until((s) => s.phase === 'Converged', 'Converged');
    assert.equal(r.journal.data.migration?.restart, 'none');
    assert.equal(s.restart?.required, false);
    assert.equal(r.strategy.stops, 0);
  } finally {
    await agent.stop();
  }
});

test('backoff doubles from the base, is capped, and is jittered between half and all of it', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 10].map((n) => backoffMs(n, 1000, 60_000, 1)),
    [1000, 2000, 4000, 8000, 60_000],
  );
  assert.equal(backoffMs(3, 1000, 60_000, 0), 2000);
});

test('the status asked for in the middle of a pass is the last finished pass, never a new plan beside the old phase', async () => {
  const r = rig();
  const { agent, until, advance } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await advance(60_000);
    const converged = await until((s) => s.phase === 'Converged', 'Converged');
    // Back to shared; the pass stops at the journal entry that moves the record on (shared owes no restart).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const save = r.journal.save.bind(r.journal);
    let reached = false;
    r.journal.save = async (d) => {
      reached = true;
      await held;
      return save(d);
    };
    r.read = { mode: 'shared', error: null };
    r.ovnkube = successor('shared');
    agent.kick('test');
    for (let i = 0; i < 200 && !reached; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(reached, 'the pass reached the journal');
    assert.deepEqual(agent.status(), converged);
    release();
    await agent.settle();
    const after = agent.status();
    assert.equal(after.desiredMode, 'shared');
    assert.deepEqual([after.reasonCodes[0], after.routes[0]?.observed?.dev], ['OvnkubeFallbackRoute', 'ovn-k8s-mp0']);
  } finally {
    await agent.stop();
  }
});

test('a mode file still being written is neither a mode nor an error: the mode is kept, and the file read again when settled', async () => {
  const r = rig();
  const { agent, until, advance, seen } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    await advance(60_000);
    await until((s) => s.phase === 'Converged', 'Converged');
    r.read = { pending: 'written 0 ms ago', retryInMs: 200 };
    r.ovnkube = { ...r.ovnkube, mode: 'shared', modes: ['shared'] };
    const from = seen.length;
    agent.kick('mode file changed');
    await agent.settle();
    const during = seen.slice(from);
    assert.ok(during.length > 0);
    for (const s of during) {
      assert.equal(s.desiredMode, 'local', 'the mode is kept while the file is written');
      assert.equal(s.modeSource.error, null, 'a file being written is no error');
    }
    // Settled: the timer the pending read asked for brings the read that is taken.
    r.read = { mode: 'shared', error: null };
    await advance(1000);
    await until((s) => s.desiredMode === 'shared', 'shared once the file settled', from);
  } finally {
    await agent.stop();
  }
});

test('a pass woken by the kernel alone does not read the mode file; any other wake-up does', async () => {
  const r = rig();
  await whenSettling(r, async ({ agent, until, seen }) => {
    const before = r.reads ?? 0;
    const from = seen.length;
    r.dp.emit({ kind: 'route', op: 'new', family: 4, prefix: '10.96.0.0/16', table: 254 });
    await until(() => true, 'the pass the route event asked for', from);
    assert.equal((r.reads ?? 0) - before, 0);
    agent.kick('mode file changed');
    await agent.settle();
    assert.equal((r.reads ?? 0) - before, 1);
  });
});

test('a pass woken by route events alone may reuse the last /proc scan; a link, address or lost event, or any other wake-up, asks for a full one', async () => {
  const r = rig();
  await whenSettling(r, async ({ agent, until, seen }) => {
    assert.equal(r.probes![0], false, 'the first pass scans in full');
    const passOf = async (wake: () => void): Promise<boolean[]> => {
      const probed = r.probes!.length;
      const from = seen.length;
      wake();
      await until(() => true, 'the pass it asked for', from);
      return r.probes!.slice(probed);
    };
    const route = () => r.dp.emit({ kind: 'route', op: 'new', family: 4, prefix: '10.96.0.0/16', table: 254 });
    assert.deepEqual(await passOf(route), [true]);
    const link = { index: 3, name: 'ovn-k8s-mp0', up: true, mtu: 1400 };
    assert.deepEqual(await passOf(() => r.dp.emit({ kind: 'link', op: 'new', link })), [false]);
    const address = {
      linkIndex: 3,
      family: 4 as const,
      address: '10.244.1.3',
      prefixLength: 24,
      tentative: false,
      dadFailed: false,
    };
    assert.deepEqual(await passOf(() => r.dp.emit({ kind: 'address', op: 'new', address })), [false]);
    assert.deepEqual(await passOf(() => r.dp.emit({ kind: 'lost', error: new Error('ENOBUFS') })), [false]);
    assert.deepEqual(await passOf(() => agent.kick('periodic resync')), [false]);
    // A route event and another wake-up coalesced into one pass: full.
    assert.deepEqual(
      await passOf(() => {
        route();
        agent.kick('mode file changed');
      }),
      [false],
    );
  });
});

test('a replace that failed with ENOENT in a pass woken by a route event is retried at once with a full /proc scan', async () => {
  const r = rig();
  await whenSettling(r, async ({ agent, until, seen }) => {
    const probed = r.probes!.length;
    r.dp.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    r.dp.inject('route-vanishes');
    const from = seen.length;
    r.dp.emit({ kind: 'route', op: 'new', family: 4, prefix: '10.96.0.0/16', table: 254 });
    await until((s) => s.reasonCodes.includes('ReconcileFailed'), 'the failed replace', from);
    await agent.settle();
    assert.ok(r.dp.consumed.has('route-vanishes'));
    const probes = r.probes!.slice(probed);
    assert.equal(probes[0], true, 'the pass the route event woke may reuse');
    assert.ok(probes.length >= 2, `a retry followed: ${JSON.stringify(probes)}`);
    assert.deepEqual(
      probes.slice(1),
      probes.slice(1).map(() => false),
      `the retry scans in full: ${JSON.stringify(probes)}`,
    );
  });
});

test('a dual-stack replace the kernel refuses every time: one pass per backoff step whatever its own replaces and put-backs announce (or the periodic resync asks), each flap counted, and the third suspends the repairs', async () => {
  // A resync every second: within a backoff it asks for nothing the retry will not do.
  const r = rig({ resyncIntervalMs: 1000 });
  const v6 = 'fd00:10:96::/112';
  r.dp.setRoute(v6, 'fd00:18::1', 'br-ex', 1400);
  // mp0 keeps its v6 address but lost the on-link route of its subnet: EHOSTUNREACH, every time.
  r.dp.injectStanding('replace-v6-unreachable');
  const h = makeAgent(r, seedConfig({ serviceCidrs: [parseCidr('10.96.0.0/16'), parseCidr(v6)] }));
  // A loop that never waits would never let a test turn come: it is stopped here, and the count tells.
  const probe = r.dp.routes.bind(r.dp);
  let dumps = 0;
  r.dp.routes = async (p) => (++dumps > 50 && void h.agent.stop(), probe(p));
  h.agent.start();
  try {
    await h.until((s) => s.reasonCodes[0] === 'ReconcileFailed', 'the refused replace');
    await h.flush();
    const passes = () => h.seen.length;
    const flaps = () => r.dp.replaces.filter((x) => x.key.prefix === '10.96.0.0/16').length / 2;
    assert.equal(passes(), 1, 'the notifications of its own replace and put-back woke no pass');
    assert.equal(flaps(), 1);
    // Each backoff step: exactly one pass, one more flap, nothing in between.
    for (const step of [1, 2]) {
      await h.advance(backoffMs(step, 1000, 60_000, 1) - 1000);
      assert.equal(passes(), step, `no pass before backoff step ${step} is over`);
      await h.advance(1000);
      await h.flush();
      assert.equal(passes(), step + 1, `one pass at backoff step ${step}`);
      assert.equal(flaps(), step + 1);
    }
    // The third put-back found is the third set-back: repairs suspended, saying why; no more flaps.
    await h.advance(backoffMs(3, 1000, 60_000, 1));
    const held = await h.until((s) => s.reasonCodes[0] === 'RepairsSuspended', 'repairs suspended');
    assert.equal(held.phase, 'Degraded');
    assert.match(held.reasons[0]!, /put it back itself .*EHOSTUNREACH/);
    // The resyncs go on (a pass each second), and flap nothing.
    await h.advance(10_000);
    assert.equal(flaps(), 3, 'no flap after the suspension');
    assert.equal(r.dp.nextHopOf('10.96.0.0/16'), 'via 172.18.0.1 dev br-ex mtu 1400', 'IPv4 left as it was');
    assert.ok(dumps <= 50, `the loop never ran away (${dumps} dumps)`);
    assert.ok(r.dp.consumed.has('replace-v6-unreachable'));
  } finally {
    await h.agent.stop();
  }
});

test('after a failed pass, a change by someone else still wakes a pass at once; the echo of its own writes does not', async () => {
  const r = rig();
  const v6 = 'fd00:10:96::/112';
  r.dp.setRoute(v6, 'fd00:18::1', 'br-ex', 1400);
  r.dp.injectStanding('replace-v6-unreachable');
  const h = makeAgent(r, seedConfig({ serviceCidrs: [parseCidr('10.96.0.0/16'), parseCidr(v6)] }));
  h.agent.start();
  try {
    await h.until((s) => s.reasonCodes[0] === 'ReconcileFailed', 'the refused replace');
    await h.flush();
    assert.equal(h.seen.length, 1);
    // The on-link route is back (the fault cleared) and an address event says mp0 changed: a pass at once, which migrates.
    r.dp.clear('replace-v6-unreachable');
    r.dp.emit({ kind: 'address', op: 'new', address: r.dp.addressList[2]! });
    await h.until((s) => s.routes.every((x) => x.observed?.dev === 'ovn-k8s-mp0' && x.inSync), 'both migrated', 1);
  } finally {
    await h.agent.stop();
  }
});

/** --restart signal, played: the target found is the process /proc shows then (r.ovnkube), and a hook may change it first. */
class SignalStub extends FakeStrategy {
  beforeFind: (() => void) | null = null;
  signalled: string[] = [];
  constructor(private readonly r: { ovnkube: OvnkubeObservation }) {
    super('signal');
  }
  override async find(): Promise<TargetLookup> {
    const hook = this.beforeFind;
    this.beforeFind = null;
    hook?.();
    return { target: { id: this.r.ovnkube.id!, describe: `pid ${this.r.ovnkube.pid}` } };
  }
  override async restart(t: RestartTarget): Promise<void> {
    this.calls++;
    this.signalled.push(t.id);
  }
}

test('signal: kubelet restarts ovnkube-node between the observation and the lookup of the target: the new one is never signalled, and it proves the migration (no restart by the agent)', async () => {
  const r = rig();
  const stub = new SignalStub(r);
  r.strategy = stub;
  const B = successor('local');
  let finds = 0;
  const find = stub.find.bind(stub);
  stub.find = async () => {
    // The second lookup is the restart's: kubelet restarted A just before it (liveness, OOM).
    if (++finds === 2) stub.beforeFind = () => (r.ovnkube = B);
    return find();
  };
  const h = makeAgent(r);
  h.agent.start();
  try {
    const looked = await h.until(
      (s) => /changed while it was looked at .*pid 43/.test(s.reasons[0] ?? ''),
      'the decision looking again',
    );
    assert.equal(looked.phase, 'Progressing');
    assert.deepEqual(stub.signalled, [], 'B not signalled');
    // The look again, a moment later: B runs local and is not the one the migration began with.
    await h.advance(1000);
    const settling = await h.until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.equal(settling.restart?.migration?.restart, 'done');
    assert.deepEqual(stub.signalled, [], 'nothing signalled: not B, and A was gone');
    await h.advance(60_000);
    await h.until((s) => s.phase === 'Converged', 'Converged');
    assert.deepEqual(stub.signalled, []);
    assert.equal(r.journal.data.restarts.length, 0, 'no restart requested');
  } finally {
    await h.agent.stop();
  }
});

test('signal: a new ovnkube-node found as a migration would begin: nothing replaced on the old observation; the migration begins with the new one, and its restart goes to it', async () => {
  const r = rig();
  const stub = new SignalStub(r);
  r.strategy = stub;
  // B started before the routes were replaced: it owes its restart like A did.
  const B = successor('local');
  stub.beforeFind = () => (r.ovnkube = B);
  const h = makeAgent(r);
  h.agent.start();
  try {
    const looked = await h.until((s) => /changed while it was looked at/.test(s.reasons[0] ?? ''), 'look again');
    assert.equal(looked.routes[0]?.observed?.dev, 'br-ex', 'nothing replaced on a stale observation');
    assert.equal(r.journal.data.migration, null);
    assert.equal(r.dp.replaces.length, 0);
    await h.advance(1000);
    // B is now the observed one: the migration owes B's restart, and B is what is signalled.
    await h.until(() => stub.signalled.length > 0, 'the restart');
    assert.deepEqual(stub.signalled, ['pid 43 start 2']);
    // Read afresh: the assert above narrowed r.journal.data.migration to null.
    const journaled = (): JournalData => r.journal.data;
    assert.equal(journaled().migration?.ovnkubeBefore, 'pid 43 start 2');
  } finally {
    await h.agent.stop();
  }
});

test("the rollout's new ovnkube-node wakes the waiting agent by its flush of ovn-k8s-mp0 (an address notification): acted on with no timer fired", async () => {
  const r = rig({
    ovnkube: { mode: 'shared', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null, modes: ['shared'] },
  });
  const { agent, until, seen } = makeAgent(r);
  agent.start();
  try {
    await until((s) => s.reasonCodes.includes('OvnkubeOtherMode'), 'waiting on the shared ovnkube-node');
    // The rollout: a local ovnkube-node starts and, first thing (4.8/4.9's
    // createPlatformManagementPort), flushes and re-adds mp0's address; no timer is advanced.
    r.ovnkube = successor('local');
    const from = seen.length;
    const probes = r.probes!.length;
    const mp0 = r.dp.addressList[0]!;
    r.dp.emit({ kind: 'address', op: 'new', address: mp0 });
    await until((s) => s.routes[0]?.observed?.dev === 'ovn-k8s-mp0', 'the route replaced', from);
    assert.equal(r.probes![probes], false, 'the pass it woke scanned /proc in full');
  } finally {
    await agent.stop();
  }
});

test('a write the kernel took without a word (a no-op replace sends no notification) leaves no echo expected past its window: the next change by someone else of that prefix wakes a pass', async () => {
  await whenConverged(['10.96.0.0/16'], async ({ r, until, advance, from, replaced }) => {
    // Someone sets the route back; the agent's repair is taken silently, as a replace to what the route already is.
    r.dp.inject('replace-unannounced');
    setBack(r, '10.96.0.0/16');
    await until((s) => s.routes[0]?.observed?.dev === 'ovn-k8s-mp0', 'the repair', from);
    assert.equal(r.dp.replaces.length, replaced + 1);
    // Well past the echo's window, someone sets it back again: this notification is theirs.
    await advance(2000);
    const again = r.dp.replaces.length;
    const next = from + 1;
    setBack(r, '10.96.0.0/16');
    await until(
      (s) => s.routes[0]?.observed?.dev === 'ovn-k8s-mp0' && r.dp.replaces.length === again + 1,
      'the second repair, woken by its notification',
      next,
    );
  });
});

test('a kernel slow to answer a replace: the echo of that write, read before its answer, still wakes no pass', async () => {
  await whenConverged(['10.96.0.0/16'], async ({ r, until, flush, seen, from, replaced }) => {
    const replace = r.dp.replaceRoute.bind(r.dp);
    // The answer takes 600 ms (the route table's lock held elsewhere): the notification is sent meanwhile.
    r.dp.replaceRoute = async (x) => {
      r.now += 600;
      await replace(x);
    };
    setBack(r, '10.96.0.0/16');
    await until((s) => s.routes[0]?.observed?.dev === 'ovn-k8s-mp0', 'the repair', from);
    await flush();
    assert.equal(r.dp.replaces.length, replaced + 1);
    assert.equal(seen.length - from, 1, 'one pass: the repair, and none woken by its own echo');
  });
});

test('after a rollback killed half way, the node back at shared and then at local again: a new migration that owes, and gets, its restart', async () => {
  const key = { prefix: '10.96.0.0/16', family: 4, table: 254, priority: 0 } as const;
  const r = rig({ read: { mode: 'shared', error: null }, ovnkube: successor('shared') });
  r.journal.data = {
    version: 3,
    restarts: [],
    migration: {
      mode: 'local',
      startedAt: 1,
      identity: 'container',
      ovnkubeBefore: 'c0',
      routes: [
        {
          key,
          from: { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 },
          to: { dev: 'ovn-k8s-mp0', oif: 3, gateway: '10.244.1.1', mtu: null },
        },
      ],
      restart: 'done',
      doneAt: 2,
      attempts: 1,
      last: null,
      rollback: { startedAt: 3, doneAt: null },
    },
  };
  const { agent, until } = makeAgent(r);
  await agent.init();
  agent.start();
  try {
    await until((s) => s.phase === 'Converged' && s.desiredMode === 'shared', 'Converged at shared');
    assert.deepEqual(
      [r.journal.data.migration?.restart, r.journal.data.migration?.rollback?.doneAt],
      ['none', null],
      'the unfinished rollback stays on record, owing nothing',
    );
    r.read = { mode: 'local', error: null };
    r.ovnkube = { ...successor('local'), pid: 44, id: 'pid 44 start 3' };
    agent.kick('test');
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling after the restart');
    assert.equal(r.strategy.stops, 1);
    assert.deepEqual([r.journal.data.migration?.rollback, r.journal.data.migration?.restart], [null, 'done']);
  } finally {
    await agent.stop();
  }
});
