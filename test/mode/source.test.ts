// Reading and watching the mode file on the real file system.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readModeSource, watchModeSource } from '../../src/mode/source.js';
import { within } from '../helpers/wait.js';

test('a FIFO as the mode file (or as the mode key of a directory) is refused at once, not waited on', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-fifo-'));
  const fifo = path.join(dir, 'mode');
  const mkfifo = spawnSync('mkfifo', [fifo]);
  assert.equal(mkfifo.status, 0, String(mkfifo.stderr));
  try {
    for (const source of [fifo, dir]) {
      assert.deepEqual(await within(readModeSource(source), 10_000, `reading ${source}`), { mode: null, error: `${fifo} is not a regular file` });
    }
  } finally {
    // A reader stuck in open() would keep this test's process alive: a writer frees it.
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // ENXIO: no reader is waiting, as it should be.
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a mode file whose directories do not exist yet is seen when they and it appear, and followed after', async () => {
  const base = mkdtempSync(path.join(tmpdir(), 'gwmode-watch-'));
  const source = path.join(base, 'x', 'y', 'mode');
  let wake: () => void = () => undefined;
  const watch = watchModeSource(source, () => wake(), 50);
  /** Resolves at the next call of the callback; fails past a generous bound. */
  const nextCall = (what: string) => within(new Promise<void>((resolve) => (wake = resolve)), 15_000, what);
  try {
    let called = nextCall('the callback once the file appears');
    mkdirSync(path.join(base, 'x', 'y'), { recursive: true });
    writeFileSync(source, 'local\n');
    await called;
    assert.deepEqual(await readModeSource(source), { mode: 'local', error: null });

    called = nextCall('the callback on a later change');
    writeFileSync(source, 'shared\n');
    await called;
  } finally {
    await watch.close();
    rmSync(base, { recursive: true, force: true });
  }
});
