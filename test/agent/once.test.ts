// The one-shot pass (src/agent/engine.ts, once) on the fake kernel, for what the real one
// cannot be made to do on cue: a route changed by someone else right after a put-back.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { pino } from 'pino';
import { JournalKeeper } from '../../src/agent/journal-keeper.js';
import { once } from '../../src/agent/engine.js';
import { VerifyError } from '../../src/agent/execute.js';
import type { Migration } from '../../src/core/migration.js';
import { rollingBack } from '../../src/core/migration.js';
import { seedConfig } from '../helpers/config.js';
import { FakeDataplane } from '../helpers/fake-dataplane.js';
import { MemoryJournal } from '../helpers/loop-rig.js';

const NOW = 1_000_000_000;
const BR = { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 };
const MP = { dev: 'ovn-k8s-mp0', oif: 4, gateway: '10.244.1.1', mtu: null };

test('rollback --yes whose put-back is changed by someone else at once is not recorded done: a VerifyError, the rollback still under way', async () => {
  const dp = new FakeDataplane();
  dp.setRoute('10.96.0.0/16', MP.gateway, MP.dev, null);
  const migration: Migration = {
    mode: 'local',
    startedAt: NOW - 60_000,
    routes: [{ key: { prefix: '10.96.0.0/16', family: 4, table: 254, priority: 0 }, from: BR, to: MP }],
    identity: 'process',
    ovnkubeBefore: 'pid 42 start 1',
    attempts: 1,
    last: null,
    rollback: null,
    restart: 'done',
    doneAt: NOW - 30_000,
  };
  const memory = new MemoryJournal();
  memory.data = { version: 3, migration, restarts: [] };
  const clock = { now: () => NOW, wall: () => NOW };
  const log = pino({ level: 'silent' });
  const journal = new JournalKeeper({ journal: memory, clock, bootId: null, log });
  await journal.load(true);
  // Put back as recorded, then at once set by someone else to a next hop neither recorded one is.
  dp.afterReplace = () => dp.setRoute('10.96.0.0/16', BR.gateway, BR.dev, 1500);
  // ovnkube-node stopped, as the operator says (rollback acts only then: core/rollback.ts, rule 6).
  const stopped = { mode: null, modes: [], pid: null, id: null, detail: 'stopped', release410Plus: null };
  const config = { ...seedConfig(), ovnkubeModeCheck: 'off' as const };
  await assert.rejects(
    once({ dataplane: dp, probe: async () => stopped, log, clock, journal, act: true }, config, {
      rollback: { cidrsFrom: '--service-cidr' },
    }),
    (err) => err instanceof VerifyError && /not as written: 10\.96\.0\.0\/16/.test(err.message),
  );
  assert.equal(dp.replaces.length, 1, 'the one put-back was made');
  assert.equal(rollingBack(memory.data.migration), true, 'the rollback is still under way on record');
});
