// The migration journal on a real file system: atomic writes, and a corrupt journal
// kept aside and reported rather than a crash loop.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { Journal, JournalError, EMPTY_JOURNAL, MAX_JOURNAL_BYTES } from '../../src/restart/journal.js';
import { NoRestart } from '../../src/restart/strategy.js';
import { loadOffset, stableOffset, toMonotonic, toWall } from '../../src/restart/journal-time.js';
import { JournalKeeper } from '../../src/agent/journal-keeper.js';
import type { Migration } from '../../src/core/migration.js';
import { seedConfig } from '../helpers/config.js';
import { FakeDataplane } from '../helpers/fake-dataplane.js';
import { within } from '../helpers/wait.js';

function scratch(): string {
  return mkdtempSync(path.join(tmpdir(), 'gwmode-journal-'));
}

test('journal: saved in a directory it creates, read back as written', async () => {
  const dir = scratch();
  try {
    const j = new Journal(path.join(dir, 'state', 'deep'));
    assert.deepEqual(await j.load(), EMPTY_JOURNAL);
    const data = { ...EMPTY_JOURNAL, restarts: [1, 2, 3] };
    await j.save(data);
    assert.deepEqual(await j.load(), data);
    assert.deepEqual(
      readdirSync(path.join(dir, 'state', 'deep')),
      ['migration-journal.json'],
      'no temporary file left',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: a corrupt file is an error with a code, and is set aside, not deleted', async () => {
  const dir = scratch();
  try {
    const j = new Journal(dir);
    writeFileSync(j.file, '{"version": 2, "migra');
    await assert.rejects(
      j.load(),
      (err: JournalError) => err.code === 'ERR_GWMODE_JOURNAL' && /is corrupt/.test(err.message),
    );
    const aside = await j.setAside(42);
    assert.equal(readFileSync(aside, 'utf8'), '{"version": 2, "migra');
    assert.equal(existsSync(j.file), false);
    assert.deepEqual(await j.load(), EMPTY_JOURNAL);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: a FIFO at its path is refused at once, not waited on, and set aside; so is one past the size bound', async () => {
  const dir = scratch();
  const j = new Journal(dir);
  const mkfifo = spawnSync('mkfifo', [j.file]);
  assert.equal(mkfifo.status, 0, String(mkfifo.stderr));
  try {
    await assert.rejects(
      within(j.load(), 10_000, 'loading a journal that is a FIFO'),
      (err: JournalError) => err.code === 'ERR_GWMODE_JOURNAL' && /is unreadable: not a regular file/.test(err.message),
    );
    const aside = await j.setAside(7);
    assert.ok(lstatSync(aside).isFIFO());
    assert.deepEqual(await j.load(), EMPTY_JOURNAL);
    writeFileSync(j.file, JSON.stringify({ ...EMPTY_JOURNAL, pad: ' '.repeat(MAX_JOURNAL_BYTES) }));
    await assert.rejects(j.load(), new RegExp(`is unreadable: larger than ${MAX_JOURNAL_BYTES} bytes`));
  } finally {
    // A reader stuck in open() would keep this test's process alive: a writer frees it.
    for (const fifo of [j.file, `${j.file}.corrupt-7`]) {
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // ENXIO (no reader waiting, as it should be) or not a FIFO (any more).
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: a FIFO left at its temporary path is not opened: the save makes a new file and completes', async () => {
  const dir = scratch();
  const j = new Journal(dir);
  const tmp = `${j.file}.tmp`;
  assert.equal(spawnSync('mkfifo', [tmp]).status, 0);
  try {
    await within(j.save({ ...EMPTY_JOURNAL, restarts: [5] }), 10_000, 'saving beside a FIFO at the temporary path');
    assert.deepEqual((await j.load()).restarts, [5]);
    assert.equal(existsSync(tmp), false);
  } finally {
    // A writer stuck in open() would keep this test's process alive: a reader frees it.
    try {
      closeSync(openSync(tmp, constants.O_RDONLY | constants.O_NONBLOCK));
    } catch {
      // Gone, as it should be.
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: the journal of version 0.1 (restart-journal.json) is not read', async () => {
  const dir = scratch();
  try {
    writeFileSync(path.join(dir, 'restart-journal.json'), JSON.stringify({ restarts: [{ mode: 'local', at: 20 }] }));
    assert.deepEqual(await new Journal(dir).load(), EMPTY_JOURNAL);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: a migration missing its fields, or recording a route that is not whole, is not trusted', async () => {
  const dir = scratch();
  try {
    const j = new Journal(dir);
    writeFileSync(j.file, JSON.stringify({ version: 2, restarts: [], migration: { mode: 'local' } }));
    await assert.rejects(j.load(), /its migration is incomplete/);
    // A whole state but for a route it records (read later by rollback and every pass): refused too.
    const hop = { dev: 'br-ex', oif: 3, gateway: '172.18.0.1', mtu: 1400 };
    const route = { key: { prefix: '10.96.0.0/16', family: 4, table: 254, priority: 0 }, from: hop, to: hop };
    const whole = { mode: 'local', startedAt: 1, ovnkubeBefore: null, identity: 'process', attempts: 0 };
    const state = { ...whole, last: null, rollback: null, restart: 'owed' };
    const journal = (m: object) => JSON.stringify({ version: 3, restarts: [], migration: m });
    writeFileSync(j.file, journal({ ...state, routes: [route] }));
    assert.equal((await j.load()).migration?.routes.length, 1, 'the whole state is read');
    // Null device and gateway (a link gone), no oif (an older record), IPv6: whole too.
    const v6 = {
      key: { ...route.key, prefix: 'fd00:10:96::/112', family: 6 },
      from: { ...hop, gateway: 'fd00::1' },
      to: hop,
    };
    writeFileSync(
      j.file,
      journal({ ...state, routes: [{ ...route, to: { dev: null, gateway: null, mtu: null } }, v6] }),
    );
    assert.equal((await j.load()).migration?.routes.length, 2);
    for (const routes of [
      [{ nokey: 1 }],
      [{ key: route.key }],
      [{ ...route, key: { ...route.key, prefix: '10.96.0.0/99' } }],
      [{ ...route, key: { ...route.key, family: 6 } }],
      [{ ...route, to: { ...hop, gateway: 7 } }],
      [{ ...route, from: null }],
    ]) {
      writeFileSync(j.file, journal({ ...state, routes }));
      await assert.rejects(
        j.load(),
        /is corrupt: (its migration is incomplete|.*10\.96\.0\.0\/99)/,
        JSON.stringify(routes),
      );
    }
    writeFileSync(j.file, journal({ ...state, routes: [route], rollback: { startedAt: 1, doneAt: 'soon' } }));
    await assert.rejects(j.load(), /its migration is incomplete/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an agent whose journal is corrupt keeps going: the journal is kept aside and the status warns', async () => {
  const dir = scratch();
  try {
    const journal = new Journal(dir);
    writeFileSync(journal.file, 'not json');
    const agent = new Agent(
      {
        dataplane: new FakeDataplane(),
        strategy: new NoRestart(),
        journal,
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
        clock: { now: () => 1_000_000, wall: () => 1_000_000 },
        random: () => 1,
      },
      {
        config: seedConfig(),
        modePath: '/etc/mode',
        resyncIntervalMs: 3_600_000,
        restart: {
          strategy: 'none',
          limit: { minIntervalMs: 0, maxPerHour: 3 },
          timeoutMs: 1000,
          settleMs: 0,
          retryBaseMs: 1000,
          retryMaxMs: 1000,
          modeChecked: true,
        },
      },
    );
    await agent.init();
    const s = agent.status();
    assert.ok(
      s.warnings.some((w) => /is corrupt: .*kept as .*\.corrupt-1000000/.test(w)),
      JSON.stringify(s.warnings),
    );
    assert.ok(existsSync(`${journal.file}.corrupt-1000000`));
    await agent.settle();
    await agent.stop();
    assert.equal(agent.status().routes[0]?.observed?.dev, 'ovn-k8s-mp0', 'the routes are still managed');
    assert.equal(
      JSON.parse(readFileSync(journal.file, 'utf8')).migration.mode,
      'local',
      'a fresh journal records the migration',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: the note of how its times were written (boot id, wall minus monotonic) is kept; a broken one is dropped, the times then read as plain wall times', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-journal-'));
  try {
    const journal = new Journal(dir);
    const note = { bootId: 'b1', wallMinusMonotonicMs: 1_699_000_000_000 };
    await journal.save({ ...EMPTY_JOURNAL, restarts: [1_700_000_000_000], clock: note });
    assert.deepEqual((await journal.load()).clock, note);
    writeFileSync(journal.file, JSON.stringify({ ...EMPTY_JOURNAL, restarts: [1], clock: { bootId: 7 } }));
    const loaded = await journal.load();
    assert.equal(loaded.clock, undefined);
    assert.deepEqual(loaded.restarts, [1]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal times: the same boot reads them back with the offset they were written with, another boot (or none noted) with the offset of now, and none after now', () => {
  const m: Migration = {
    mode: 'local',
    startedAt: 5000,
    identity: 'process',
    ovnkubeBefore: null,
    routes: [],
    restart: 'done',
    attempts: 1,
    last: { at: 6000, target: { id: 'pid 1 start 1', describe: 'pid 1' }, result: 'stopped', error: null },
    doneAt: 7000,
    rollback: { startedAt: 8000, doneAt: null },
  };
  const times = (d: { migration: Migration | null; restarts: number[] }) => {
    const x = d.migration!;
    return [x.startedAt, x.last?.at, x.restart === 'done' ? x.doneAt : null, x.rollback, d.restarts];
  };
  const mono = { ...EMPTY_JOURNAL, migration: m, restarts: [6000] };
  const disk = toWall(mono, 1_000_000, 'b1');
  assert.deepEqual(times(disk), [1_005_000, 1_006_000, 1_007_000, { startedAt: 1_008_000, doneAt: null }, [1_006_000]]);
  assert.deepEqual(disk.clock, { bootId: 'b1', wallMinusMonotonicMs: 1_000_000 });
  // Same boot, the wall clock stepped since (the offset of now is 999_000_000): exact.
  assert.deepEqual(toMonotonic(disk, loadOffset(disk, 'b1', 999_000_000), 10_000), mono);
  // Another boot: the offset of now; times after now (10_000) are now.
  const other = toMonotonic(disk, loadOffset(disk, 'b2', 1_000_000 - 2000), 10_000);
  assert.deepEqual(times(other), [7000, 8000, 9000, { startedAt: 10_000, doneAt: null }, [8000]]);
  assert.equal(toWall(mono, 0, null).clock, undefined, 'no boot id, no note');
});

test('journal times: an offset within the jitter of the noted one is kept, so a journal read and saved again in one boot keeps its times to the millisecond; a real step renews the note', () => {
  assert.equal(stableOffset(1_000_000, 1_000_001), 1_000_000);
  assert.equal(stableOffset(1_000_000, 999_999), 1_000_000);
  assert.equal(stableOffset(1_000_000, 1_000_000 + 120_000), 1_120_000, 'a 2-minute step forward renews it');
  assert.equal(stableOffset(null, 42), 42);
});

// test/fixtures/journal-main/: journals exactly as the agent, `apply` and `rollback` of
// version 2 wrote them (through their journal keeper, generated with that code). Each is
// read, in the same boot, into the state it recorded, to the millisecond; saved again it is
// version 3 and reads back the same.
const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/journal-main/', import.meta.url));
const BOOT = '6f1b2c3d-1111-4222-8333-944455556666';
const OFFSET = 1_709_289_400_000;

/** The journal keeper of `dir`, in the boot the fixtures were written in, its wall clock stepped a minute since. */
const keeperOf = (dir: string) =>
  new JournalKeeper({
    journal: new Journal(dir),
    clock: { now: () => 5_000_000, wall: () => 5_000_000 + OFFSET + 60_000 },
    bootId: BOOT,
    log: pino({ level: 'silent' }),
  });

async function readFixture(name: string): Promise<{ m: Migration | null; restarts: number[]; dir: string }> {
  const dir = scratch();
  copyFileSync(path.join(FIXTURES, name), path.join(dir, 'migration-journal.json'));
  const keeper = keeperOf(dir);
  await keeper.load(true);
  return { m: keeper.data.migration, restarts: keeper.data.restarts, dir };
}

test('journal: every journal version 2 wrote is read into the state it recorded (same boot: times exact), and written back as version 3 that reads the same', async () => {
  const routes = (await readFixture('owed.json')).m!.routes;
  assert.deepEqual(
    routes.map((r) => [r.key.prefix, r.key.priority, r.from.dev, r.to.gateway]),
    [
      ['172.30.0.0/16', 0, 'br-ex', '10.128.2.1'],
      ['fd02::/112', 1024, 'br-ex', 'fd01:0:0:1::1'],
    ],
  );
  const target = { id: 'c-0a1b2c', describe: 'container c-0a1b2c (pod ovnkube-node-x7k2p)' };
  const common = { mode: 'local', startedAt: 4_000_000, routes, identity: 'container', ovnkubeBefore: 'c-0a1b2c' };
  const expected: Record<string, Migration> = {
    'owed.json': { ...common, restart: 'owed', attempts: 0, last: null, rollback: null } as Migration,
    'requested.json': {
      ...common,
      restart: 'requested',
      attempts: 1,
      last: { at: 4_100_000, target, result: 'stopped', error: null },
      rollback: null,
    } as Migration,
    'failed.json': {
      ...common,
      restart: 'failed',
      attempts: 2,
      last: { at: 4_200_000, target, result: 'failed', error: 'rpc error: code = Unavailable' },
      rollback: null,
    } as Migration,
    'done.json': {
      ...common,
      restart: 'done',
      attempts: 1,
      last: { at: 4_100_000, target, result: 'stopped', error: null },
      doneAt: 4_150_000,
      rollback: null,
    } as Migration,
    'reached.json': {
      ...common,
      mode: 'shared',
      routes: [],
      identity: 'process',
      ovnkubeBefore: null,
      restart: 'none',
      attempts: 0,
      last: null,
      rollback: null,
    },
    'rolled-back.json': {
      ...common,
      identity: 'process',
      ovnkubeBefore: 'pid 4242 start 998877',
      restart: 'owed',
      attempts: 0,
      last: null,
      rollback: { startedAt: 4_300_000, doneAt: 4_300_050 },
    } as Migration,
    'rollback-unfinished.json': {
      ...common,
      identity: 'process',
      ovnkubeBefore: 'pid 4242 start 998877',
      restart: 'owed',
      attempts: 0,
      last: null,
      rollback: { startedAt: 4_300_000, doneAt: null },
    } as Migration,
  };
  assert.deepEqual(readdirSync(FIXTURES).sort(), Object.keys(expected).sort(), 'every fixture is checked');
  for (const [name, want] of Object.entries(expected)) {
    const { m, restarts, dir } = await readFixture(name);
    try {
      assert.deepEqual(m, want, name);
      assert.deepEqual(restarts, [4_100_000, 4_200_000].slice(0, want.attempts), name);
      // Saved again, as the agent does after any change: version 3, the same state.
      const keeper = keeperOf(dir);
      await keeper.load(true);
      await keeper.before(keeper.data);
      assert.equal(JSON.parse(readFileSync(path.join(dir, 'migration-journal.json'), 'utf8')).version, 3);
      const again = keeperOf(dir);
      await again.load(true);
      assert.deepEqual(again.data.migration, want, `${name}, saved again`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('journal: a version 2 journal that does not make a whole state (a restart requested with no time of request, one done with no time) is refused with a message, never guessed at', async () => {
  const dir = scratch();
  try {
    const j = new Journal(dir);
    const v2 = JSON.parse(readFileSync(path.join(FIXTURES, 'requested.json'), 'utf8'));
    for (const broken of [
      { ...v2.migration, lastAttemptAt: null },
      { ...v2.migration, restart: 'done', doneAt: null },
      { ...v2.migration, restart: 'later' },
    ]) {
      writeFileSync(j.file, JSON.stringify({ ...v2, migration: broken }));
      await assert.rejects(
        j.load(),
        (err: JournalError) =>
          err.code === 'ERR_GWMODE_JOURNAL' && /is corrupt: its migration is incomplete/.test(err.message),
      );
    }
    writeFileSync(j.file, JSON.stringify({ ...v2, version: 4 }));
    await assert.rejects(j.load(), /is corrupt: not a version 2 or 3 journal/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unreadable journal that could not be moved aside holds every save, until it is moved aside or gone (removed by hand): then the save is made', async () => {
  const refusals = [Object.assign(new Error('EPERM: operation not permitted'), { code: 'EPERM' })];
  let saved = 0;
  const keeper = new JournalKeeper({
    journal: {
      load: async () => Promise.reject(new JournalError('the journal is corrupt')),
      save: async () => void saved++,
      setAside: async () => {
        const err = refusals.shift() ?? Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
        throw err;
      },
    },
    clock: { now: () => 1, wall: () => 2 },
    bootId: null,
    log: pino({ level: 'silent' }),
  });
  assert.equal(await keeper.load(), false);
  refusals.push(Object.assign(new Error('EPERM: operation not permitted'), { code: 'EPERM' }));
  await assert.rejects(keeper.before(EMPTY_JOURNAL), /over the unreadable one, not moved aside/);
  assert.equal(saved, 0);
  // The operator removed the file: nothing is left to write over.
  await keeper.before(EMPTY_JOURNAL);
  assert.equal(saved, 1);
});
