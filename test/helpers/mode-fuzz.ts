// Generators of mode files for the fuzz of the mode file (test/mode/fuzz.test.ts) and
// the real agent's sample of them (test/agent/bad-input.test.ts). Each case says what a
// read must give: a mode, an error, or either ('any': a cut or flipped file may still read).
// A ConfigMap manifest is read as the cluster network operator reads it: a value that is
// not exactly local or shared is shared; a Network manifest is refused.
import { bytes, int, pick, type Rng } from './prng.js';

// 'not local': shared or an error, never local (a ConfigMap value that is not exactly "local").
export type Expect = 'local' | 'shared' | 'error' | 'not local' | 'any';
export interface FileCase {
  kind: string;
  content: Buffer;
  expect: Expect;
}

const MODES = ['local', 'shared'] as const;

const configMap = (mode: string, style: 'yaml' | 'json') =>
  style === 'yaml'
    ? `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gateway-mode-config\n  namespace: openshift-network-operator\ndata:\n  mode: ${mode}\n`
    : JSON.stringify(
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gateway-mode-config' }, data: { mode } },
        null,
        2,
      );
const network = (rvh: string) =>
  `apiVersion: operator.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\nspec:\n  defaultNetwork:\n    type: OVNKubernetes\n    ovnKubernetesConfig:\n      gatewayConfig:\n        routingViaHost: ${rvh}\n`;

/** A valid document and the mode it says. */
function valid(rng: Rng): { text: string; mode: 'local' | 'shared' } {
  const mode = pick(rng, MODES);
  const text = pick(rng, [
    () => `${pick(rng, ['', ' ', '\n', '\t'])}${mode}${pick(rng, ['', '\n', ' \n', '\r\n'])}`,
    () => configMap(mode, 'yaml'),
    () => configMap(mode, 'json'),
  ])();
  return { text, mode };
}

const WRONG_VALUES = [
  'Local',
  'LOCAL',
  'Shared',
  'SHARED',
  'locale',
  'loca',
  '1',
  '0',
  'true',
  'null',
  '~',
  '[local]',
  '{local: 1}',
  '"local "',
  "'shared\\n'",
  '!!binary bG9jYWw=',
  '2026-12-02',
  '0x10',
  '.inf',
  '*a',
  'local shared',
];

export const MAKERS: Record<string, (rng: Rng) => FileCase> = {
  valid: (rng) => {
    const v = valid(rng);
    return { kind: 'valid', content: Buffer.from(v.text), expect: v.mode };
  },
  'with a BOM': (rng) => {
    const v = valid(rng);
    return {
      kind: 'with a BOM',
      content: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(v.text)]),
      expect: v.mode,
    };
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
  'NUL and control bytes': (rng) => ({
    kind: 'NUL and control bytes',
    content: Buffer.from(`${pick(rng, MODES)}\0${pick(rng, ['', '\x1b[2J', '\x07'])}`),
    expect: 'error',
  }),
  'mixed case or wrong word': (rng) => ({
    kind: 'mixed case or wrong word',
    content: Buffer.from(
      pick(
        rng,
        WRONG_VALUES.filter((w) => /^[A-Za-z]+$/.test(w)),
      ),
    ),
    expect: 'error',
  }),
  // As YAML, most are strings CNO reads as shared; the others (1, null, a list) are no string: refused.
  'wrong value in a ConfigMap': (rng) => ({
    kind: 'wrong value in a ConfigMap',
    content: Buffer.from(configMap(pick(rng, WRONG_VALUES), 'yaml')),
    expect: 'not local',
  }),
  'a Network manifest': (rng) => ({
    kind: 'a Network manifest',
    content: Buffer.from(network(pick(rng, ['true', 'false', '"true"', 'yes', '1', '[true]', '{}', 'local']))),
    expect: 'error',
  }),
  huge: (rng) => {
    const v = valid(rng);
    const pad = pick(rng, [64 * 1024, 64 * 1024 + 1, 100_000, 1 << 20]);
    return { kind: 'huge', content: Buffer.from(v.text + ' '.repeat(pad)), expect: 'error' };
  },
  'deep YAML': (rng) => {
    const depth = pick(rng, [40, 200, 5000, 30_000]);
    const text = pick(rng, [
      () => '['.repeat(depth) + ']'.repeat(depth),
      () => '{a: '.repeat(depth),
      () => '- '.repeat(depth) + 'local',
      () => `kind: ConfigMap\ndata:\n  mode: ${'['.repeat(depth)}`,
    ])();
    return { kind: 'deep YAML', content: Buffer.from(text), expect: 'error' };
  },
  aliases: (rng) => {
    const text = pick(rng, [
      () =>
        `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nkind: ConfigMap\ndata: {mode: local}`,
      () => 'kind: ConfigMap\ndata: &d {mode: *d}',
      () => 'kind: &k [*k]',
      () => 'kind: ConfigMap\nmetadata: {name: &n [*n]}\ndata: {mode: local}',
      () => `kind: ConfigMap\ndata: {mode: &m [*m]}`,
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
    content: Buffer.from(
      pick(rng, [
        'kind: Secret\ndata: {mode: bG9jYWw=}',
        'kind: ConfigMap\nmetadata: {name: other}\ndata: {mode: local}',
        'apiVersion: config.openshift.io/v1\nkind: Network\nspec: {}',
        '[]',
        '"local"',
        '42',
        'null',
        '{}',
        'kind: ConfigMap\ndata: [mode]',
      ]),
    ),
    expect: 'error',
  }),
};

export const KINDS = Object.keys(MAKERS);

/** One generated case. */
export const modeCase = (rng: Rng): FileCase => MAKERS[pick(rng, KINDS)]!(rng);
