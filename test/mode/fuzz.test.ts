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
import { bytes, int, pick, prng, seedFrom, type Rng } from '../helpers/prng.js';

type Expect = 'local' | 'shared' | 'error' | 'any';
interface FileCase {
  kind: string;
  content: Buffer;
  expect: Expect;
}

const MODES = ['local', 'shared'] as const;

const configMap = (mode: string, style: 'yaml' | 'json') =>
  style === 'yaml'
    ? `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gateway-mode-config\n  namespace: openshift-network-operator\ndata:\n  mode: ${mode}\n`
    : JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gateway-mode-config' }, data: { mode } }, null, 2);
const network = (rvh: string) =>
  `apiVersion: operator.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\nspec:\n  defaultNetwork:\n    type: OVNKubernetes\n    ovnKubernetesConfig:\n      gatewayConfig:\n        routingViaHost: ${rvh}\n`;

/** A valid document and the mode it says. */
function valid(rng: Rng): { text: string; mode: 'local' | 'shared' } {
  const mode = pick(rng, MODES);
  const text = pick(rng, [
    () => `${pick(rng, ['', ' ', '\n', '\t'])}${mode}${pick(rng, ['', '\n', ' \n', '\r\n'])}`,
    () => configMap(mode, 'yaml'),
    () => configMap(mode, 'json'),
    () => network(mode === 'local' ? 'true' : 'false'),
  ])();
  return { text, mode };
}

const WRONG_VALUES = ['Local', 'LOCAL', 'Shared', 'SHARED', 'locale', 'loca', '1', '0', 'true', 'null', '~', '[local]', '{local: 1}', '"local "', "'shared\\n'", '!!binary bG9jYWw=', '2026-12-02', '0x10', '.inf', '*a', 'local shared'];

const MAKERS: Record<string, (rng: Rng) => FileCase> = {
  valid: (rng) => {
    const v = valid(rng);
    return { kind: 'valid', content: Buffer.from(v.text), expect: v.mode };
  },
  'with a BOM': (rng) => {
    const v = valid(rng);
    return { kind: 'with a BOM', content: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(v.text)]), expect: v.mode };
  },
  truncated: (rng) => {
    const v = valid(rng);
    const cut = int(rng, v.text.length);
    // A cut word or manifest may still read as one (`loc` does not; `{"a"` does not; a YAML cut at a line end may).
    return { kind: 'truncated', content: Buffer.from(v.text.slice(0, cut)), expect: cut === 0 ? 'error' : 'any' };
  },
  'byte flips': (rng) => {
    const b = Buffer.from(valid(rng).text);
    for (let i = 0, n = 1 + int(rng, 4); i < n; i++) b[int(rng, b.length)] = int(rng, 256);
    return { kind: 'byte flips', content: b, expect: 'any' };
  },
  binary: (rng) => ({ kind: 'binary', content: bytes(rng, int(rng, 2048)), expect: 'any' }),
  'NUL and control bytes': (rng) => ({ kind: 'NUL and control bytes', content: Buffer.from(`${pick(rng, MODES)}\0${pick(rng, ['', '\x1b[2J', '\x07'])}`), expect: 'error' }),
  'mixed case or wrong word': (rng) => ({ kind: 'mixed case or wrong word', content: Buffer.from(pick(rng, WRONG_VALUES.filter((w) => /^[A-Za-z]+$/.test(w)))), expect: 'error' }),
  'wrong type': (rng) => {
    const value = pick(rng, WRONG_VALUES);
    const text = pick(rng, [() => configMap(value, 'yaml'), () => network(pick(rng, ['"true"', 'yes', '1', '[true]', '{}', 'local']))])();
    return { kind: 'wrong type', content: Buffer.from(text), expect: 'error' };
  },
  huge: (rng) => {
    const v = valid(rng);
    const pad = pick(rng, [64 * 1024, 64 * 1024 + 1, 100_000, 1 << 20]);
    return { kind: 'huge', content: Buffer.from(v.text + ' '.repeat(pad)), expect: 'error' };
  },
  'deep YAML': (rng) => {
    const depth = pick(rng, [40, 200, 5000, 30_000]);
    const text = pick(rng, [() => '['.repeat(depth) + ']'.repeat(depth), () => '{a: '.repeat(depth), () => '- '.repeat(depth) + 'local', () => `kind: ConfigMap\ndata:\n  mode: ${'['.repeat(depth)}`])();
    return { kind: 'deep YAML', content: Buffer.from(text), expect: 'error' };
  },
  aliases: (rng) => {
    const text = pick(rng, [
      () => `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nkind: ConfigMap\ndata: {mode: local}`,
      () => 'kind: ConfigMap\ndata: &d {mode: *d}',
      () => 'kind: &k [*k]',
      () => 'kind: ConfigMap\nmetadata: {name: &n [*n]}\ndata: {mode: local}',
      () => network('&r [*r]'),
      () => 'kind: ConfigMap\ndata: {mode: *undefined}',
    ])();
    return { kind: 'aliases', content: Buffer.from(text), expect: 'error' };
  },
  'duplicate keys and documents': (rng) => {
    const text = pick(rng, [
      () => 'kind: ConfigMap\ndata:\n  mode: local\n  mode: shared\n',
      () => `${configMap('local', 'yaml')}---\n${configMap('shared', 'yaml')}`,
      () => '{"kind":"ConfigMap","data":{"mode":"local","mode":"shared"}}',
    ])();
    return { kind: 'duplicate keys and documents', content: Buffer.from(text), expect: 'error' };
  },
  'other objects': (rng) => ({
    kind: 'other objects',
    content: Buffer.from(pick(rng, ['kind: Secret\ndata: {mode: bG9jYWw=}', 'kind: ConfigMap\nmetadata: {name: other}\ndata: {mode: local}', 'apiVersion: config.openshift.io/v1\nkind: Network\nspec: {}', '[]', '"local"', '42', 'null', '{}', 'kind: ConfigMap'])),
    expect: 'error',
  }),
};

const KINDS = Object.keys(MAKERS);

test('2,400 generated mode files: each read is a mode or an error, never a throw; valid ones read right, refused ones refused', async (t) => {
  const seed = seedFrom('GWMODE_MODE_SEED', 9);
  const rng = prng(seed);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-modefuzz-'));
  const counts: Record<string, number> = {};
  let slowest = { ms: 0, kind: '' };
  try {
    for (let i = 0; i < 2400; i++) {
      const c = MAKERS[pick(rng, KINDS)]!(rng);
      counts[c.kind] = (counts[c.kind] ?? 0) + 1;
      const file = path.join(dir, `mode-${i}`);
      writeFileSync(file, c.content);
      const what = `case ${i} (${c.kind}, seed ${seed}): ${JSON.stringify(c.content.toString('latin1').slice(0, 120))}`;
      const started = performance.now();
      const read = await readModeSource(file);
      const ms = performance.now() - started;
      if (ms > slowest.ms) slowest = { ms, kind: c.kind };
      assert.ok((read.mode === 'local' || read.mode === 'shared') === (read.error === null), what);
      if (read.error !== null) assert.ok(typeof read.error === 'string' && read.error.length > 0 && read.error.length < 400, what);
      if (c.expect === 'error') assert.equal(read.mode, null, what);
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
      ['a volume', volume(root, 'ok', (v) => (tsDir(v, '..2026_12_02_01', 'local'), symlinkSync('..2026_12_02_01', path.join(v, '..data')), symlinkSync('..data/mode', path.join(v, 'mode')))), 'local'],
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
        volume(root, 'swap2', (v) => (tsDir(v, '..2026_12_02_01', 'shared'), tsDir(v, '..2026_12_02_02', 'local'), symlinkSync('..2026_12_02_02', path.join(v, '..data')), symlinkSync('..data/mode', path.join(v, 'mode')))),
        'local',
      ],
      ['a dangling ..data', volume(root, 'dangling', (v) => (symlinkSync('..2026_gone', path.join(v, '..data')), symlinkSync('..data/mode', path.join(v, 'mode')))), /mode does not exist$/],
      ['no mode key', volume(root, 'nokey', (v) => (tsDir(v, '..2026_12_02_01', null), symlinkSync('..2026_12_02_01', path.join(v, '..data')))), /mode does not exist$/],
      ['the key a symlink loop', volume(root, 'loop', (v) => (symlinkSync('mode2', path.join(v, 'mode')), symlinkSync('mode', path.join(v, 'mode2')))), /: ELOOP$/],
      ['the key a directory', volume(root, 'keydir', (v) => mkdirSync(path.join(v, 'mode'))), /mode is not a regular file$/],
      ['the key a FIFO', volume(root, 'fifo', (v) => execFileSync('mkfifo', [path.join(v, 'mode')])), /mode is not a regular file$/],
      ['the key a device', volume(root, 'dev', (v) => symlinkSync('/dev/zero', path.join(v, 'mode'))), /mode is not a regular file$/],
    ];
    const loop = path.join(root, 'self');
    symlinkSync('self', loop);
    cases.push(['the source a symlink loop', loop, /: ELOOP$/]);
    for (const [what, source, expected] of cases) {
      const read = await readModeSource(source);
      if (typeof expected === 'string') assert.deepEqual(read, { mode: expected, error: null }, what);
      else {
        assert.equal(read.mode, null, what);
        assert.match(read.error!, expected, what);
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
