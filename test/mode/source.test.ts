// Reading and watching the mode file on the real file system.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ModeReader, readModeSource, watchModeSource } from '../../src/mode/source.js';
import { QUIET_MS } from '../../src/mode/settled.js';
import { ConfigMapVolume } from '../helpers/kubelet.js';
import { within } from '../helpers/wait.js';

test('a FIFO as the mode file (or as the mode key of a directory) is refused at once, not waited on', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-fifo-'));
  const fifo = path.join(dir, 'mode');
  const mkfifo = spawnSync('mkfifo', [fifo]);
  assert.equal(mkfifo.status, 0, String(mkfifo.stderr));
  try {
    for (const source of [fifo, dir]) {
      assert.deepEqual(await within(readModeSource(source), 10_000, `reading ${source}`), {
        mode: null,
        error: `${fifo} is not a regular file`,
      });
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
  const watch = watchModeSource(source, () => wake());
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

test('a watch says when it is in place, and a watch closed first does not leave its readiness hanging', async () => {
  const base = mkdtempSync(path.join(tmpdir(), 'gwmode-ready-'));
  try {
    const placed = watchModeSource(path.join(base, 'mode'), () => undefined);
    await within(placed.ready, 15_000, 'the watch in place');
    await placed.close();
    const early = watchModeSource(path.join(base, 'mode'), () => undefined);
    await early.close();
    await within(early.ready, 15_000, 'the readiness of a closed watch');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

/** A ConfigMap volume as kubelet's atomic writer makes it (ConfigMapVolume); swap() is its update. */
function volume(root: string, mode: string) {
  const v = new ConfigMapVolume(path.join(root, 'volume'));
  v.update({ mode });
  return { dir: v.dir, swap: (to: string) => v.update({ mode: to }) };
}

test('a ConfigMap volume swap is reported at once and its new mode taken by the first read, written a moment ago or not', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-swap-'));
  const v = volume(root, 'shared');
  let wake: () => void = () => undefined;
  const watch = watchModeSource(v.dir, () => wake());
  try {
    // The clock says the files were written this very millisecond: no quiet time for a volume.
    const reader = new ModeReader(v.dir, () => statSync(path.join(v.dir, 'mode')).mtimeMs);
    assert.deepEqual(await reader.read(), { mode: 'shared', error: null });
    await within(watch.ready, 15_000, 'the watch in place (its initial scan)'); // not a debounce
    const called = within(new Promise<void>((resolve) => (wake = resolve)), 15_000, 'the callback after the swap');
    v.swap('local');
    await called;
    assert.deepEqual(await reader.read(), { mode: 'local', error: null });
  } finally {
    await watch.close();
    rmSync(root, { recursive: true, force: true });
  }
});

/** Fails if an inotify handle is left open (the process would never exit); chokidar closes them a few turns later. */
async function noWatchLeft() {
  const open = () => process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length;
  for (let i = 0; i < 100 && open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(open(), 0, 'an inotify handle left open');
}

/** Replaced by rename, as editors, `kubectl cp` and config tools do. */
function replace(file: string, content: string) {
  writeFileSync(file + '.tmp', content);
  renameSync(file + '.tmp', file);
}

/** A watch of source, counting its calls; reported(what, change) makes change once the calls before have stopped and waits for a call after it. */
function watched(source: string) {
  const seen = { calls: 0 };
  let wake: () => void = () => undefined;
  const watch = watchModeSource(source, () => (seen.calls++, wake()));
  const reported = async (what: string, change: () => void) => {
    for (let last = -1; last !== seen.calls; await new Promise((r) => setTimeout(r, 300))) last = seen.calls;
    const called = within(new Promise<void>((resolve) => (wake = resolve)), 15_000, `the callback after ${what}`);
    change();
    await called;
  };
  return { watch, seen, reported };
}

/** Runs body with a watch in place of root/`name` (set up by setUp in a fresh root with etc/ in it); closes it, and checks no inotify handle is left. */
async function linkCase(
  name: string,
  setUp: (root: string, source: string) => void,
  body: (w: ReturnType<typeof watched>, root: string) => Promise<void>,
) {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-link-'));
  mkdirSync(path.join(root, 'etc'));
  const source = path.join(root, name);
  setUp(root, source);
  const w = watched(source);
  try {
    await within(w.watch.ready, 15_000, 'the watch in place');
    await body(w, root);
  } finally {
    await within(w.watch.close(), 5_000, 'closing the watch');
    rmSync(root, { recursive: true, force: true });
  }
  await noWatchLeft();
}

test('a mode file that is a symlink into another directory is reported when its target is replaced by rename, and after the link is pointed elsewhere', async () => {
  const dirs = (root: string) => ['srv', 'opt'].map((d) => path.join(root, d)) as [string, string];
  await linkCase(
    'etc/mode',
    (root, source) => {
      for (const d of dirs(root)) {
        mkdirSync(d);
        replace(path.join(d, 'mode'), 'shared\n');
      }
      symlinkSync(path.join(root, 'srv', 'mode'), source);
    },
    async ({ reported }, root) => {
      const [srv, opt] = dirs(root);
      const source = path.join(root, 'etc', 'mode');
      // Each time: a watch of the target file itself (inotify follows links) would see the first only.
      for (const [dir, modes] of [[srv, ['local', 'shared', 'local']] as const, [opt, ['local', 'shared']] as const]) {
        if (dir === opt) {
          await reported('the link is pointed elsewhere', () => {
            symlinkSync(path.join(opt, 'mode'), source + '.tmp');
            renameSync(source + '.tmp', source);
          });
          assert.deepEqual(await readModeSource(source), { mode: 'shared', error: null });
        }
        for (const mode of modes) {
          await reported(`${dir}/mode is replaced (${mode})`, () => replace(path.join(dir, 'mode'), `${mode}\n`));
          assert.deepEqual(await readModeSource(source), { mode, error: null });
        }
      }
    },
  );
});

test('a mode file (plain, or a symlink to it) is still reported after its directory was removed and made again, at once or later', async () => {
  for (const [name, later] of [
    ['srv/mode', false],
    ['srv/mode', true],
    ['etc/mode', false],
    ['etc/mode', true],
  ] as const) {
    await linkCase(
      name,
      (root, source) => {
        mkdirSync(path.join(root, 'srv'));
        replace(path.join(root, 'srv', 'mode'), 'shared\n');
        if (name === 'etc/mode') symlinkSync(path.join(root, 'srv', 'mode'), source);
      },
      async ({ reported }, root) => {
        const srv = path.join(root, 'srv');
        // At once, as a script does (the new directory may well get the old one's inode), or
        // once the removal was told (then the link leads nowhere for a while).
        await reported('the directory is removed', () => {
          rmSync(srv, { recursive: true });
          if (!later) mkdirSync(srv);
        });
        for (const mode of ['local', 'shared']) {
          await reported(`${name}: srv/mode is replaced (${mode})`, () => {
            mkdirSync(srv, { recursive: true });
            replace(path.join(srv, 'mode'), `${mode}\n`);
          });
          assert.deepEqual(await readModeSource(path.join(root, name)), { mode, error: null });
        }
      },
    );
  }
});

test("a relative symlink is followed from the link's real directory, as the kernel does: etc/gw -> x/gw, x/gw/mode -> ../srv/mode leads to x/srv/mode", async () => {
  await linkCase(
    'etc/gw/mode',
    (root) => {
      for (const d of ['x/gw', 'x/srv']) mkdirSync(path.join(root, d), { recursive: true });
      replace(path.join(root, 'x', 'srv', 'mode'), 'shared\n');
      symlinkSync('../srv/mode', path.join(root, 'x', 'gw', 'mode'));
      symlinkSync(path.join(root, 'x', 'gw'), path.join(root, 'etc', 'gw'));
    },
    async ({ reported }, root) => {
      for (const mode of ['local', 'shared']) {
        await reported(`x/srv/mode is replaced (${mode})`, () =>
          replace(path.join(root, 'x', 'srv', 'mode'), `${mode}\n`),
        );
        assert.deepEqual(await readModeSource(path.join(root, 'etc', 'gw', 'mode')), { mode, error: null });
      }
    },
  );
});

test('a watch makes no call at start: of a symlink, a link in its own directory, a ConfigMap volume or one of its keys', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-start-'));
  volume(root, 'shared');
  replace(path.join(root, 'real'), 'shared\n');
  symlinkSync(path.join(root, 'real'), path.join(root, 'mode'));
  symlinkSync('real', path.join(root, 'near'));
  const sources = ['mode', 'near', 'volume', 'volume/mode'].map((s) => path.join(root, s));
  const ws = sources.map(watched);
  try {
    await within(Promise.all(ws.map((w) => w.watch.ready)), 15_000, 'the watches in place');
    // Well past the trailing re-report (TRAILING_MS) of a call at start.
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      ws.map((w) => w.seen.calls),
      sources.map(() => 0),
      sources.join(', '),
    );
  } finally {
    await Promise.all(ws.map((w) => w.watch.close()));
    rmSync(root, { recursive: true, force: true });
  }
  await noWatchLeft();
});

test('a key of a ConfigMap volume given as the mode file is reported at each swap of `..data`, the old directory removed, and leaves no watch open', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-key-'));
  const v = volume(root, 'shared');
  const source = path.join(v.dir, 'mode');
  let wake: () => void = () => undefined;
  const watch = watchModeSource(source, () => wake());
  try {
    await within(watch.ready, 15_000, 'the watch in place');
    for (const mode of ['local', 'shared', 'local', 'shared', 'local']) {
      const called = within(
        new Promise<void>((resolve) => (wake = resolve)),
        15_000,
        `the callback after the swap (${mode})`,
      );
      v.swap(mode);
      await called;
      assert.deepEqual(await readModeSource(source), { mode, error: null });
    }
  } finally {
    await within(watch.close(), 5_000, 'closing the watch');
    rmSync(root, { recursive: true, force: true });
  }
  await noWatchLeft();
});

test('a host file written in place is not taken half-written: half a ConfigMap manifest (valid YAML saying shared: no key) waits, the whole one is taken', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-inplace-'));
  const file = path.join(root, 'mode');
  const whole = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: gateway-mode-config',
    '  namespace: openshift-network-operator',
    'data:',
    '  mode: local',
    '',
  ].join('\n');
  const half = whole.slice(0, whole.indexOf('\ndata:') + 1);
  let now = 0;
  const reader = new ModeReader(file, () => now);
  try {
    writeFileSync(file, half);
    // Read at once, as an in-place write's event brings it: half the manifest is "shared" to a parser.
    assert.deepEqual(await readModeSource(file), {
      mode: 'shared',
      error: null,
      detail: 'no key "mode": shared, as the cluster network operator reads it',
    });
    now = statSync(file).mtimeMs;
    const first = await reader.read();
    assert.ok('pending' in first, JSON.stringify(first));
    // The writer goes on: the same file, the rest of the content.
    writeFileSync(file, whole);
    now = statSync(file).mtimeMs + 1;
    assert.ok('pending' in (await reader.read()));
    // Garbage while being written is not an error yet either.
    writeFileSync(file, 'kind: [');
    now = statSync(file).mtimeMs;
    assert.ok('pending' in (await reader.read()));
    writeFileSync(file, whole);
    now = statSync(file).mtimeMs + QUIET_MS;
    assert.deepEqual(await reader.read(), { mode: 'local', error: null });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a host file left alone is read as it is: a valid mode taken, garbage an error', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-quiet-'));
  const file = path.join(root, 'mode');
  const reader = new ModeReader(file, () => statSync(file).mtimeMs + QUIET_MS);
  try {
    writeFileSync(file, 'local\n');
    assert.deepEqual(await reader.read(), { mode: 'local', error: null });
    writeFileSync(file, 'garbage');
    assert.deepEqual(await reader.read(), {
      mode: null,
      error: 'the mode is "garbage"; expected exactly "local" or "shared"',
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * A mode file whose every write carries an old mtime (cp -p, rsync -t): each read is
 * settled at once, with no re-read for quiet time. Starts as "shared".
 */
function oldMtimeFile(): { root: string; file: string; writeOld: (content: string) => void } {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-trailing-'));
  const file = path.join(root, 'mode');
  const writeOld = (content: string) => {
    writeFileSync(file, content);
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
  };
  writeOld('shared\n');
  return { root, file, writeOld };
}

test('a second write within 50 ms of the first (which chokidar passes over) is still reported when the first was taken at once', async () => {
  const { root, file, writeOld } = oldMtimeFile();
  const reader = new ModeReader(file);
  let wake: () => void = () => undefined;
  const watch = watchModeSource(file, () => wake());
  const nextCall = (what: string) => within(new Promise<void>((resolve) => (wake = resolve)), 15_000, what);
  try {
    await within(watch.ready, 15_000, 'the watch in place');
    const first = nextCall('the first change reported');
    writeOld('shared\n');
    await first;
    assert.deepEqual(await reader.read(), { mode: 'shared', error: null });
    // At once, inside chokidar's 50 ms window after the change it reported (on a slow
    // machine maybe not: then chokidar reports it itself). Only a call after it counts.
    let written = false;
    let afterWrite: () => void = () => undefined;
    const second = within(
      new Promise<void>((resolve) => (afterWrite = resolve)),
      15_000,
      'a call after the second write',
    );
    wake = () => {
      if (written) afterWrite();
    };
    writeOld('local\n');
    written = true;
    await second;
    assert.deepEqual(await reader.read(), { mode: 'local', error: null });
  } finally {
    await watch.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('writes every 20 ms (each with an old mtime): the last one is reported after it was written, whichever the watcher passed over', async () => {
  const { root, file, writeOld } = oldMtimeFile();
  const reader = new ModeReader(file);
  let lastWritten = false;
  let afterLast: () => void = () => undefined;
  const seen = within(new Promise<void>((resolve) => (afterLast = resolve)), 15_000, 'a call after the last write');
  const watch = watchModeSource(file, () => {
    if (lastWritten) afterLast();
  });
  try {
    await within(watch.ready, 15_000, 'the watch in place');
    for (let i = 0; i < 15; i++) {
      writeOld(i % 2 === 0 ? 'local\n' : 'shared\n');
      await new Promise((r) => setTimeout(r, 20));
    }
    writeOld('local\n');
    lastWritten = true;
    await seen;
    assert.deepEqual(await reader.read(), { mode: 'local', error: null });
  } finally {
    await watch.close();
    rmSync(root, { recursive: true, force: true });
  }
});

/** A ConfigMap volume of the given data as kubelet's atomic writer lays it out: keys linked through `..data`; no data, an empty one. */
function configMapVolume(root: string, name: string, data: Record<string, string>): string {
  const dir = path.join(root, name);
  const ts = path.join(dir, '..2026_12_02_10_00_00.123456789');
  mkdirSync(ts, { recursive: true });
  for (const [key, value] of Object.entries(data)) writeFileSync(path.join(ts, key), value);
  symlinkSync(path.basename(ts), path.join(dir, '..data'));
  for (const key of Object.keys(data)) symlinkSync(`..data/${key}`, path.join(dir, key));
  return dir;
}

const AS_CNO = 'shared, as the cluster network operator reads it';

test('a ConfigMap volume is read as the cluster network operator reads gateway-mode-config: exactly local or shared, anything else, no key or an empty volume shared, saying why', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-cm-'));
  try {
    const cases: Array<[string, Record<string, string>, 'local' | 'shared', string | undefined]> = [
      ['local', { mode: 'local' }, 'local', undefined],
      ['shared', { mode: 'shared' }, 'shared', undefined],
      [
        'local\\n (kubectl create configmap --from-file)',
        { mode: 'local\n' },
        'shared',
        `"local\\n" is not exactly "local": ${AS_CNO}`,
      ],
      ['space local', { mode: ' local' }, 'shared', `" local" is not exactly "local": ${AS_CNO}`],
      ['Local', { mode: 'Local' }, 'shared', `"Local" is not exactly "local": ${AS_CNO}`],
      ['other keys beside local', { mode: 'local', 'disable-snat-multiple-gws': 'true' }, 'local', undefined],
      [
        'other keys, no mode',
        { other: 'local' },
        'shared',
        'no key "mode" in the ConfigMap volume DIR (an optional ConfigMap that does not exist, or one without the key): ' +
          AS_CNO,
      ],
      [
        'empty (an optional volume of a ConfigMap that does not exist)',
        {},
        'shared',
        'no key "mode" in the ConfigMap volume DIR (an optional ConfigMap that does not exist, or one without the key): ' +
          AS_CNO,
      ],
    ];
    for (const [i, [what, data, mode, detail]] of cases.entries()) {
      const dir = configMapVolume(root, `v${i}`, data);
      const expected = { mode, error: null, ...(detail ? { detail: detail.replace('DIR', dir) } : {}) };
      assert.deepEqual(await readModeSource(dir), expected, `${what}: the volume directory`);
      if ('mode' in data) assert.deepEqual(await readModeSource(path.join(dir, 'mode')), expected, `${what}: its key`);
      // The running agent's reader takes a volume at once, written this very millisecond or not.
      assert.deepEqual(
        await new ModeReader(dir, () => statSync(path.join(dir, '..data')).mtimeMs).read(),
        expected,
        `${what}: the agent's reader`,
      );
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a plain host file keeps its reading: local\\n is local, a stray word an error; a source not there yet is waited for, not read as shared', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-plain-'));
  try {
    const file = path.join(root, 'mode');
    writeFileSync(file, 'local\n');
    assert.deepEqual(await readModeSource(file), { mode: 'local', error: null });
    // A directory without ..data is no ConfigMap volume: its mode file is read as a host file.
    assert.deepEqual(await readModeSource(root), { mode: 'local', error: null });
    writeFileSync(file, 'Local\n');
    assert.deepEqual(await readModeSource(file), {
      mode: null,
      error: 'the mode is "Local"; expected exactly "local" or "shared"',
    });
    const unmounted = path.join(root, 'not-mounted-yet');
    assert.deepEqual(await readModeSource(unmounted), { mode: null, error: `${unmounted} does not exist` });
    mkdirSync(unmounted);
    assert.deepEqual(
      await readModeSource(unmounted),
      {
        mode: null,
        error: `${unmounted} is a directory with no file "mode" and no ConfigMap volume (no ..data): expected one of the two`,
      },
      'an empty directory without ..data is not a volume, and the error says what the directory is',
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
