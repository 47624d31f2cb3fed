// The migration journal on a real file system: atomic writes, and a corrupt journal
// kept aside and reported rather than a crash loop.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { Journal, JournalError, EMPTY_JOURNAL, MAX_JOURNAL_BYTES } from '../../src/restart/journal.js';
import { NoRestart } from '../../src/restart/strategy.js';
import { loadOffset, stableOffset, toMonotonic, toWall, underFreshNote } from '../../src/restart/journal-time.js';
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

test('journal: a migration missing its fields is not trusted', async () => {
  const dir = scratch();
  try {
    const j = new Journal(dir);
    writeFileSync(j.file, JSON.stringify({ version: 2, restarts: [], migration: { mode: 'local' } }));
    await assert.rejects(j.load(), /its migration is incomplete/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: the journal of version 0.1 is read on upgrade: its restarts still count, its last mode is done', async () => {
  const dir = scratch();
  try {
    writeFileSync(
      path.join(dir, 'restart-journal.json'),
      JSON.stringify({
        restarts: [
          { mode: 'shared', at: 10, target: 'pid 1', result: 'stopped', error: null },
          { mode: 'local', at: 20, target: 'pid 2', result: 'stopped', error: null },
        ],
      }),
    );
    const data = await new Journal(dir).load();
    assert.deepEqual(data.restarts, [10, 20]);
    assert.deepEqual([data.migration?.mode, data.migration?.restart], ['local', 'done']);
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
        probe: async () => ({ mode: 'local', pid: 42, id: 'pid 42 start 1', detail: null, release410Plus: null }),
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
  const m = {
    mode: 'local' as const,
    startedAt: 5000,
    identity: 'process' as const,
    ovnkubeBefore: null,
    routes: [],
    restart: 'done' as const,
    attempts: 1,
    lastAttemptAt: 6000,
    lastError: null,
    stopped: null,
    stoppedAs: null,
    outcome: null,
    doneAt: 7000,
    rollback: { startedAt: 8000, doneAt: null },
  };
  const mono = { ...EMPTY_JOURNAL, migration: m, restarts: [6000] };
  const disk = toWall(mono, 1_000_000, 'b1');
  assert.deepEqual(
    [disk.migration?.startedAt, disk.migration?.doneAt, disk.migration?.rollback, disk.restarts, disk.clock],
    [
      1_005_000,
      1_007_000,
      { startedAt: 1_008_000, doneAt: null },
      [1_006_000],
      { bootId: 'b1', wallMinusMonotonicMs: 1_000_000 },
    ],
  );
  // Same boot, the wall clock stepped since (the offset of now is 999_000_000): exact.
  assert.deepEqual(toMonotonic(disk, loadOffset(disk, 'b1', 999_000_000), 10_000), mono);
  // Another boot: the offset of now; times after now (10_000) are now.
  const other = toMonotonic(disk, loadOffset(disk, 'b2', 1_000_000 - 2000), 10_000);
  assert.deepEqual(
    [other.migration?.startedAt, other.migration?.doneAt, other.migration?.rollback?.startedAt, other.restarts],
    [7000, 9000, 10_000, [8000]],
  );
  assert.equal(toWall(mono, 0, null).clock, undefined, 'no boot id, no note');
});

test('journal times: an offset within the jitter of the noted one is kept, so a journal read and saved again in one boot keeps its times to the millisecond; a real step renews the note', () => {
  assert.equal(stableOffset(1_000_000, 1_000_001), 1_000_000);
  assert.equal(stableOffset(1_000_000, 999_999), 1_000_000);
  assert.equal(stableOffset(1_000_000, 1_000_000 + 120_000), 1_120_000, 'a 2-minute step forward renews it');
  assert.equal(stableOffset(null, 42), 42);
  const data = {
    ...EMPTY_JOURNAL,
    restarts: [1_699_000_004_123],
    clock: { bootId: 'b', wallMinusMonotonicMs: 1_699_000_000_000 },
  };
  // Read back and written again a moment later, the two clocks read a millisecond apart.
  const again = underFreshNote(data, 'b', { now: () => 5_000.4, wall: () => 1_699_000_005_001 });
  assert.deepEqual(again.restarts, [1_699_000_004_123]);
});
