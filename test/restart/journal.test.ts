// The migration journal on a real file system: atomic writes, and a corrupt journal
// kept aside and reported rather than a crash loop.
import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { Journal, JournalError, EMPTY_JOURNAL } from '../../src/restart/journal.js';
import { NoRestart } from '../../src/restart/strategy.js';
import { seedConfig } from '../helpers/config.js';
import { FakeDataplane } from '../helpers/fake-dataplane.js';

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
    assert.deepEqual(readdirSync(path.join(dir, 'state', 'deep')), ['migration-journal.json'], 'no temporary file left');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('journal: a corrupt file is an error with a code, and is set aside, not deleted', async () => {
  const dir = scratch();
  try {
    const j = new Journal(dir);
    writeFileSync(j.file, '{"version": 2, "migra');
    await assert.rejects(j.load(), (err: JournalError) => err.code === 'ERR_GWMODE_JOURNAL' && /is corrupt/.test(err.message));
    const aside = await j.setAside(42);
    assert.equal(readFileSync(aside, 'utf8'), '{"version": 2, "migra');
    assert.equal(existsSync(j.file), false);
    assert.deepEqual(await j.load(), EMPTY_JOURNAL);
  } finally {
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
    writeFileSync(path.join(dir, 'restart-journal.json'), JSON.stringify({ restarts: [{ mode: 'shared', at: 10, target: 'pid 1', result: 'stopped', error: null }, { mode: 'local', at: 20, target: 'pid 2', result: 'stopped', error: null }] }));
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
        probe: async () => ({ mode: 'local', pid: 42, id: 'pid 42 start 1', detail: null }),
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
        restart: { strategy: 'none', limit: { minIntervalMs: 0, maxPerHour: 3 }, timeoutMs: 1000, settleMs: 0, retryBaseMs: 1000, retryMaxMs: 1000, modeChecked: true },
      },
    );
    await agent.init();
    const s = agent.status();
    assert.ok(s.warnings.some((w) => /is corrupt: .*kept as .*\.corrupt-1000000/.test(w)), JSON.stringify(s.warnings));
    assert.ok(existsSync(`${journal.file}.corrupt-1000000`));
    await agent.settle();
    await agent.stop();
    assert.equal(agent.status().routes[0]?.observed?.dev, 'ovn-k8s-mp0', 'the routes are still managed');
    assert.equal(JSON.parse(readFileSync(journal.file, 'utf8')).migration.mode, 'local', 'a fresh journal records the migration');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
