// What the owner loop tells its recorder (metrics, events), on the stateful fake
// dataplane: the steps as they were carried out, including the fault paths the
// real-kernel tests cannot reach (a refused replace and its put-back, lost
// notifications), and a recorder that throws does not break the loop.
import { strict as assert } from 'node:assert';
import { mock, test } from 'node:test';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { recorders, type AgentRecorder, type ReplaceRecord, type RestartRecord } from '../../src/core/recorder.js';
import type { RestartTarget, TargetLookup } from '../../src/core/migration.js';
import { parseCidr } from '../../src/net/cidr.js';
import { EMPTY_JOURNAL, type JournalData } from '../../src/restart/journal.js';
import type { RestartStrategy } from '../../src/restart/strategy.js';
import type { StatusReport } from '../../src/status/report.js';
import { seedConfig } from '../helpers/config.js';
import { FakeDataplane } from '../helpers/fake-dataplane.js';

class Recorded implements AgentRecorder {
  readonly log: string[] = [];
  replace(r: ReplaceRecord) {
    this.log.push(`replace ${r.cidr} ${r.result} ${r.mode}${r.code ? ` ${r.code}` : ''}: ${r.before} -> ${r.after}`);
  }
  restart(r: RestartRecord) {
    this.log.push(`restart ${r.strategy} ${r.result}`);
  }
  desiredModeChanged(from: string | null, to: string) {
    this.log.push(`desired ${from} -> ${to}`);
  }
  modeFileError() {
    this.log.push('mode file error');
  }
  notificationsLost() {
    this.log.push('lost');
  }
  reconciled(startedAt: number, endedAt: number, code: string | null) {
    assert.ok(endedAt >= startedAt);
    if (code) this.log.push(`pass failed ${code}`);
  }
}

/** Stops the container it is given; kubelet (the fake) starts the next one at once. */
class FakeStrategy implements RestartStrategy {
  readonly name = 'cri' as const;
  container = 1;
  async find(): Promise<TargetLookup> {
    return { target: { id: `c${this.container}`, describe: `container c${this.container}` } };
  }
  async restart(_t: RestartTarget): Promise<void> {
    this.container++;
  }
  close(): void {}
}

function makeAgent(dp: FakeDataplane, recorder: AgentRecorder, cidrs = ['10.96.0.0/16']) {
  let journal: JournalData = EMPTY_JOURNAL;
  const agent = new Agent(
    {
      dataplane: dp,
      strategy: new FakeStrategy(),
      journal: {
        load: async () => journal,
        save: async (d: JournalData) => void (journal = structuredClone(d)),
        setAside: async () => 'nowhere',
      },
      probe: async () => ({
        mode: 'local',
        pid: 42,
        id: 'pid 42 start 1',
        detail: null,
        release410Plus: null,
        modes: ['local'],
      }),
      log: pino({ level: 'silent' }),
      readMode: async () => ({ mode: 'local', error: null }),
      watchMode: () => ({ close: async () => undefined }),
      clock: { now: () => 1_000_000_000, wall: () => 1_000_000_000 },
      random: () => 1,
      recorder,
    },
    {
      config: seedConfig({ serviceCidrs: cidrs.map(parseCidr) }),
      modePath: '/etc/mode',
      resyncIntervalMs: 3_600_000,
      restart: {
        strategy: 'cri',
        limit: { minIntervalMs: 300_000, maxPerHour: 3 },
        timeoutMs: 300_000,
        settleMs: 60_000,
        retryBaseMs: 5000,
        retryMaxMs: 300_000,
        modeChecked: true,
      },
    },
  );
  const seen: StatusReport[] = [];
  agent.onStatus((s) => seen.push(s));
  /** Turns the event loop a bounded number of times until a status matches. */
  const until = async (pred: (s: StatusReport) => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 2000; i++) {
      if (seen.some(pred)) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.fail(`never saw ${what}; last: ${JSON.stringify(seen.at(-1)?.reasonCodes)}`);
  };
  return { agent, until };
}

test.beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }));
test.afterEach(() => mock.timers.reset());

test('a migration is recorded step by step: the desired mode, the replace before and after, the restart stopped then completed', async () => {
  const dp = new FakeDataplane();
  const rec = new Recorded();
  const { agent, until } = makeAgent(dp, rec);
  agent.start();
  try {
    await until((s) => s.reasonCodes[0] === 'Settling', 'Settling');
    assert.deepEqual(rec.log, [
      'desired null -> local',
      'replace 10.96.0.0/16 done local: via 172.18.0.1 dev br-ex mtu 1400 -> via 10.244.1.1 dev ovn-k8s-mp0',
      'restart cri stopped',
      'restart cri completed',
    ]);
  } finally {
    await agent.stop();
  }
});

test('a refused second replace is recorded as failed with its code, and the first as put back; lost notifications too', async () => {
  const dp = new FakeDataplane();
  dp.setRoute('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400);
  dp.inject('replace-v6-eperm');
  const rec = new Recorded();
  const { agent, until } = makeAgent(dp, rec, ['10.96.0.0/16', 'fd00:10:96::/112']);
  agent.start();
  try {
    await until((s) => s.phase === 'Degraded', 'Degraded');
    assert.ok(dp.consumed.has('replace-v6-eperm'));
    assert.deepEqual(rec.log.slice(0, 5), [
      'desired null -> local',
      'replace 10.96.0.0/16 done local: via 172.18.0.1 dev br-ex mtu 1400 -> via 10.244.1.1 dev ovn-k8s-mp0',
      'replace fd00:10:96::/112 failed local EPERM: via fd00:18::1 dev br-ex mtu 1400 -> via fd00:10:244:1::1 dev ovn-k8s-mp0',
      'replace 10.96.0.0/16 put_back local: via 10.244.1.1 dev ovn-k8s-mp0 -> via 172.18.0.1 dev br-ex mtu 1400',
      'pass failed EPERM',
    ]);
    dp.emit({ kind: 'lost', error: new Error('ENOBUFS') });
    assert.ok(rec.log.includes('lost'));
  } finally {
    await agent.stop();
  }
});

test('a recorder that throws is reported and the others still hear of every step', () => {
  const errors: unknown[] = [];
  const a = new Recorded();
  const b = new Recorded();
  const broken = new Recorded();
  broken.notificationsLost = () => {
    throw new Error('boom');
  };
  const all = recorders([a, broken, b], (err) => errors.push(err));
  all.notificationsLost();
  all.desiredModeChanged('shared', 'local');
  assert.deepEqual(a.log, ['lost', 'desired shared -> local']);
  assert.deepEqual(b.log, a.log);
  assert.equal(errors.length, 1);
});
