// A seeded fuzz of the mode file (GWMODE_MODE_SEED=<seed> reproduces a run): 2,400
// generated files and ConfigMap volumes, read through readModeSource as the agent
// reads them. Every read must end in a mode or an error string, never a throw, and
// where the case's expectation is known (a valid file, a refused one) it must be met.
// The real agent with a sample of these is in test/agent/bad-input.test.ts.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseModeContent } from '../../src/mode/parse.js';
import { readModeSource } from '../../src/mode/source.js';
import { modeCase } from '../helpers/mode-fuzz.js';
import { fuzzCount, prng, seedFrom } from '../helpers/prng.js';

test('2,400 generated mode files: each read is a mode or an error, never a throw; valid ones read right, refused ones refused', async (t) => {
  const seed = seedFrom('GWMODE_MODE_SEED', 9);
  const rng = prng(seed);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-modefuzz-'));
  const counts: Record<string, number> = {};
  let slowest = { ms: 0, kind: '' };
  try {
    for (let i = 0, n = fuzzCount(2400); i < n; i++) {
      const c = modeCase(rng);
      counts[c.kind] = (counts[c.kind] ?? 0) + 1;
      const file = path.join(dir, `mode-${i}`);
      writeFileSync(file, c.content);
      const what = `case ${i} (${c.kind}, seed ${seed}): ${JSON.stringify(c.content.toString('latin1').slice(0, 120))}`;
      const started = performance.now();
      const read = await readModeSource(file);
      const ms = performance.now() - started;
      if (ms > slowest.ms) slowest = { ms, kind: c.kind };
      assert.ok((read.mode === 'local' || read.mode === 'shared') === (read.error === null), what);
      if (read.error !== null)
        assert.ok(typeof read.error === 'string' && read.error.length > 0 && read.error.length < 400, what);
      if (c.expect === 'error') assert.equal(read.mode, null, what);
      else if (c.expect === 'not local') assert.notEqual(read.mode, 'local', what);
      else if (c.expect !== 'any') assert.equal(read.mode, c.expect, `${what}: ${read.error}`);
      if (c.content.length <= 64 * 1024) {
        const parsed = parseModeContent(c.content.toString('utf8'));
        assert.equal(parsed.mode ?? null, read.mode, what);
      }
      rmSync(file);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  t.diagnostic(`seed ${seed}: ${JSON.stringify(counts)}; slowest read ${slowest.ms.toFixed(0)} ms (${slowest.kind})`);
});

/** A ConfigMap volume as kubelet's atomic writer leaves it: keys -> ..data/key, ..data -> ..<timestamp>. */
function volume(root: string, name: string, steps: (v: string) => void): string {
  const v = path.join(root, name);
  mkdirSync(v);
  steps(v);
  return v;
}
const tsDir = (v: string, ts: string, mode: string | null) => {
  mkdirSync(path.join(v, ts));
  if (mode !== null) writeFileSync(path.join(v, ts, 'mode'), mode);
};

test('ConfigMap volumes mid-swap, dangling ..data, loops, FIFOs, devices and directories: a mode or a clear error', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gwmode-volumes-'));
  try {
    const cases: Array<[string, string, string | RegExp]> = [
      [
        'a volume',
        volume(
          root,
          'ok',
          (v) => (
            tsDir(v, '..2026_12_02_01', 'local'),
            symlinkSync('..2026_12_02_01', path.join(v, '..data')),
            symlinkSync('..data/mode', path.join(v, 'mode'))
          ),
        ),
        'local',
      ],
      [
        'mid-swap: the new timestamp half written, ..data still on the old one',
        volume(root, 'swap1', (v) => {
          tsDir(v, '..2026_12_02_01', 'shared');
          tsDir(v, '..2026_12_02_02', 'loc');
          symlinkSync('..2026_12_02_02', path.join(v, '..data_tmp'));
          symlinkSync('..2026_12_02_01', path.join(v, '..data'));
          symlinkSync('..data/mode', path.join(v, 'mode'));
        }),
        'shared',
      ],
      [
        'mid-swap: ..data moved on, the old timestamp not removed yet',
        volume(
          root,
          'swap2',
          (v) => (
            tsDir(v, '..2026_12_02_01', 'shared'),
            tsDir(v, '..2026_12_02_02', 'local'),
            symlinkSync('..2026_12_02_02', path.join(v, '..data')),
            symlinkSync('..data/mode', path.join(v, 'mode'))
          ),
        ),
        'local',
      ],
      [
        'a dangling ..data',
        volume(
          root,
          'dangling',
          (v) => (symlinkSync('..2026_gone', path.join(v, '..data')), symlinkSync('..data/mode', path.join(v, 'mode'))),
        ),
        /mode does not exist$/,
      ],
      // No key: what the cluster network operator makes of a ConfigMap without it, or of none.
      [
        'no mode key',
        volume(
          root,
          'nokey',
          (v) => (tsDir(v, '..2026_12_02_01', null), symlinkSync('..2026_12_02_01', path.join(v, '..data'))),
        ),
        'shared',
      ],
      [
        'the key a symlink loop',
        volume(
          root,
          'loop',
          (v) => (symlinkSync('mode2', path.join(v, 'mode')), symlinkSync('mode', path.join(v, 'mode2'))),
        ),
        /: ELOOP$/,
      ],
      [
        'the key a directory',
        volume(root, 'keydir', (v) => mkdirSync(path.join(v, 'mode'))),
        /mode is not a regular file$/,
      ],
      [
        'the key a FIFO',
        volume(root, 'fifo', (v) => execFileSync('mkfifo', [path.join(v, 'mode')])),
        /mode is not a regular file$/,
      ],
      [
        'the key a device',
        volume(root, 'dev', (v) => symlinkSync('/dev/zero', path.join(v, 'mode'))),
        /mode is not a regular file$/,
      ],
    ];
    const loop = path.join(root, 'self');
    symlinkSync('self', loop);
    cases.push(['the source a symlink loop', loop, /: ELOOP$/]);
    for (const [what, source, expected] of cases) {
      const read = await readModeSource(source);
      if (typeof expected === 'string')
        assert.deepEqual({ mode: read.mode, error: read.error }, { mode: expected, error: null }, what);
      else {
        assert.equal(read.mode, null, what);
        assert.match(read.error, expected, what);
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
