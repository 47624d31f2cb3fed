// The owner loop under injected faults, on a stateful fake dataplane. Each test
// asserts the fault it injected was consumed, and what the agent did about it.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { pino } from 'pino';
import { Agent, backoffMs } from '../../src/agent/agent.js';
import type { GatewayMode } from '../../src/core/types.js';
import type { ModeRead } from '../../src/mode/source.js';
import { seedConfig } from '../helpers/config.js';
import type { StatusReport } from '../../src/status/report.js';
import { FakeDataplane, type Fault } from '../helpers/fake-dataplane.js';

function makeAgent(dp: FakeDataplane, mode: () => ModeRead) {
  const agent = new Agent(
    {
      dataplane: dp,
      probe: async () => ({ mode: 'local' as GatewayMode, pid: 42, detail: null }),
      log: pino({ level: 'silent' }),
      readMode: async () => mode(),
      watchMode: () => ({ close: async () => undefined }),
      now: () => new Date(),
      random: () => 0.5,
    },
    {
      config: seedConfig(),
      modePath: '/etc/mode',
      resyncIntervalMs: 3_600_000,
      retryBaseMs: 5,
      retryMaxMs: 20,
    },
  );
  const seen: StatusReport[] = [];
  const waiters: Array<() => void> = [];
  agent.onStatus((s) => {
    seen.push(s);
    for (const w of waiters.splice(0)) w();
  });
  const until = async (pred: (s: StatusReport) => boolean): Promise<StatusReport> => {
    for (;;) {
      const hit = seen.find(pred);
      if (hit) return hit;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { agent, seen, until };
}

const LOCAL = (s: StatusReport) => s.phase === 'Converged' && s.routes[0]?.observed?.dev === 'ovn-k8s-mp0';

const faults: Array<{ fault: Fault; expectError: RegExp }> = [
  { fault: 'replace-eperm', expectError: /EPERM/ },
  { fault: 'replace-silently-ignored', expectError: /after replacing, still out of sync/ },
  { fault: 'dump-interrupted', expectError: /interrupted 5 times in a row/ },
];

for (const { fault, expectError } of faults) {
  test(`fault ${fault}: phase Degraded with the error, retried with backoff, then converged`, async () => {
    const dp = new FakeDataplane();
    dp.inject(fault);
    const { agent, until } = makeAgent(dp, () => ({ mode: 'local', error: null }));
    agent.start();
    try {
      const degraded = await until((s) => s.phase === 'Degraded');
      assert.match(degraded.lastError ?? '', expectError);
      assert.match(degraded.reasons[0] ?? '', /reconcile failed \(attempt 1, retrying in \d+ ms\)/);
      const done = await until(LOCAL);
      assert.equal(done.lastError, null);
      assert.ok(dp.consumed.has(fault), 'the injected fault fired');
    } finally {
      await agent.stop();
    }
  });
}

test('a lost notification forces a full pass that repairs what no event announced', async () => {
  const dp = new FakeDataplane();
  const { agent, seen, until } = makeAgent(dp, () => ({ mode: 'local', error: null }));
  agent.start();
  try {
    await until(LOCAL);
    dp.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    const passes = seen.length;
    dp.emit({ kind: 'lost', error: new Error('ENOBUFS') });
    await until((s) => seen.indexOf(s) >= passes && LOCAL(s));
    assert.equal(dp.replaces.length, 2);
  } finally {
    await agent.stop();
  }
});

test('nothing is applied before the first valid mode, and a bad mode later keeps the last good one', async () => {
  const dp = new FakeDataplane();
  let read: ModeRead = { mode: null, error: 'the file is empty' };
  const { agent, until } = makeAgent(dp, () => read);
  agent.start();
  try {
    const waiting = await until((s) => s.lastReconcile !== null);
    assert.equal(waiting.phase, 'Waiting');
    assert.equal(dp.replaces.length, 0);
    read = { mode: 'local', error: null };
    agent.kick('test');
    await until(LOCAL);
    read = { mode: null, error: 'garbage' };
    agent.kick('test');
    const kept = await until((s) => s.modeSource.error === 'garbage');
    assert.equal(kept.desiredMode, 'local');
    assert.equal(dp.replaces.length, 1);
  } finally {
    await agent.stop();
  }
});

test('backoff doubles from the base, is capped, and is jittered between half and all of it', () => {
  assert.deepEqual([1, 2, 3, 4, 10].map((n) => backoffMs(n, 1000, 60_000, 1)), [1000, 2000, 4000, 8000, 60_000]);
  assert.equal(backoffMs(3, 1000, 60_000, 0), 2000);
});
