import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { configMapMode, parseModeContent } from '../../src/mode/parse.js';
import { parseDuration } from '../../src/clock.js';
import { parseOvnkubeConf } from '../../src/config/ovnkube-conf.js';
import { addressInSubnet, parseAddress, parseCidr } from '../../src/net/cidr.js';

const ok: Array<[string, string, string]> = [
  ['a bare word', 'local', 'local'],
  ['a bare word with whitespace', '  shared\n\n', 'shared'],
  ['a bare word with a line break (the host case: `echo local > mode`)', 'local\n', 'local'],
  [
    'the ConfigMap as YAML',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gateway-mode-config\n  namespace: openshift-network-operator\ndata:\n  mode: "local"\n',
    'local',
  ],
  [
    'the ConfigMap as JSON',
    '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gateway-mode-config"},"data":{"mode":"shared"}}',
    'shared',
  ],
];
for (const [name, content, mode] of ok) {
  test(`mode file: ${name} gives ${mode}`, () => assert.deepEqual(parseModeContent(content), { mode }));
}

const AS_CNO = 'shared, as the cluster network operator reads it';

/** A ConfigMap's mode value (undefined: no key) and what CNO 4.8/4.9 makes of it, with the agent's why. */
const CONFIGMAP: Array<[string | undefined, 'local' | 'shared', string | undefined]> = [
  ['local', 'local', undefined],
  ['shared', 'shared', undefined],
  ['local\n', 'shared', `"local\\n" is not exactly "local": ${AS_CNO}`],
  [' local', 'shared', `" local" is not exactly "local": ${AS_CNO}`],
  ['Local', 'shared', `"Local" is not exactly "local": ${AS_CNO}`],
  ['SHARED ', 'shared', `"SHARED " is not exactly "shared": ${AS_CNO}`],
  ['hybrid', 'shared', `"hybrid" is neither "local" nor "shared": ${AS_CNO}`],
  ['', 'shared', `"" is neither "local" nor "shared": ${AS_CNO}`],
  [undefined, 'shared', `no key "mode": ${AS_CNO}`],
];

test('a ConfigMap value is read as the cluster network operator reads it: exactly local or shared, anything else (and no key) shared, saying why', () => {
  for (const [value, mode, detail] of CONFIGMAP)
    assert.deepEqual(configMapMode(value), detail === undefined ? { mode } : { mode, detail }, JSON.stringify(value));
});

test('a ConfigMap manifest holding each value reads the same, as YAML (a block scalar keeps its line break) and as JSON; other keys play no part', () => {
  const manifest = (data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'gateway-mode-config', namespace: 'openshift-network-operator' },
    data,
  });
  for (const [value, mode, detail] of CONFIGMAP) {
    const data: Record<string, string> = {
      'disable-snat-multiple-gws': 'true',
      other: 'local',
      ...(value === undefined ? {} : { mode: value }),
    };
    const expected = detail === undefined ? { mode } : { mode, detail };
    assert.deepEqual(
      parseModeContent(JSON.stringify(manifest(data), null, 2)),
      expected,
      `JSON ${JSON.stringify(value)}`,
    );
    assert.deepEqual(parseModeContent(stringify(manifest(data))), expected, `YAML ${JSON.stringify(value)}`);
  }
  // What `kubectl create configmap --from-file=mode` makes of a file ending in a line break.
  assert.deepEqual(
    parseModeContent(
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gateway-mode-config\ndata:\n  mode: |\n    local\n',
    ),
    { mode: 'shared', detail: `"local\\n" is not exactly "local": ${AS_CNO}` },
  );
  assert.deepEqual(parseModeContent('kind: ConfigMap\n'), { mode: 'shared', detail: `no key "mode": ${AS_CNO}` });
  assert.deepEqual(
    parseModeContent('kind: ConfigMap\nbinaryData:\n  mode: bG9jYWw=\n'),
    { mode: 'shared', detail: `no key "mode": ${AS_CNO}` },
    'CNO reads data only',
  );
});

const NETWORK =
  /^a Network manifest is not read: spec\.defaultNetwork\.ovnKubernetesConfig\.gatewayConfig\.routingViaHost exists only from OpenShift 4\.10, where the agent never acts; on 4\.8\/4\.9 the mode is the ConfigMap gateway-mode-config \(namespace openshift-network-operator, key mode\)$/;

const bad: Array<[string, string, RegExp]> = [
  ['an empty file', '   \n', /empty/],
  [
    'another word (a host file: no operator reads it)',
    'Local',
    /^the mode is "Local"; expected exactly "local" or "shared"$/,
  ],
  ['garbage', '{{{ not yaml', /neither a mode word nor valid YAML/],
  [
    'a ConfigMap of another name',
    'kind: ConfigMap\nmetadata:\n  name: other\ndata:\n  mode: local\n',
    /is not gateway-mode-config/,
  ],
  [
    'a ConfigMap whose mode is no string (the API server refuses it)',
    'kind: ConfigMap\ndata:\n  mode: 1\n',
    /data\.mode is 1, not a string/,
  ],
  [
    'a Network with routingViaHost true',
    'apiVersion: operator.openshift.io/v1\nkind: Network\nspec:\n  defaultNetwork:\n    ovnKubernetesConfig:\n      gatewayConfig:\n        routingViaHost: true\n',
    NETWORK,
  ],
  ['a Network without gatewayConfig', 'apiVersion: operator.openshift.io/v1\nkind: Network\nspec: {}\n', NETWORK],
  ['the config.openshift.io Network', 'apiVersion: config.openshift.io/v1\nkind: Network\nspec: {}\n', NETWORK],
  ['another kind', 'kind: Pod\n', /^a Pod manifest \(kind "Pod"\), not a ConfigMap: expected /],
  // What the file is, and what was expected: never "kind missing".
  [
    'a bare YAML map saying mode: local',
    'mode: local\n',
    /^a YAML map without kind \(keys: mode\): expected "local" or "shared" alone, a ConfigMap named gateway-mode-config \(kind: ConfigMap, data\.mode\) as YAML or JSON, or a ConfigMap volume directory; for local mode, the file may say just: local$/,
  ],
  [
    'a ConfigMap without its kind',
    'metadata:\n  name: gateway-mode-config\ndata:\n  mode: local\n',
    /^a YAML map without kind \(keys: metadata, data\): expected .*ConfigMap named gateway-mode-config \(kind: ConfigMap, data\.mode\)/,
  ],
  [
    'a YAML map whose keys are long or binary (a key is quoted and cut at 24 characters: no error of kilobytes)',
    `${'k'.repeat(500)}: 1\n"\\u0000\\u0007 ${'x'.repeat(500)}": 2\n`,
    /^a YAML map without kind \(keys: "k{20}\.\.\., "\\u0000\\u0007 x{7}\.\.\.\): expected /,
  ],
  ['a YAML list', '- local\n', /^a YAML list of 1: expected "local" or "shared" alone/],
  ['two words', 'local shared\n', /^a YAML string "local shared", not a mode word: expected "local" or "shared" alone/],
  ['a number', '42\n', /^a YAML number 42, not a mode word: expected/],
  ['a kind that is no string', 'kind: [ConfigMap]\n', /^a YAML map whose kind is \["ConfigMap"\]: expected/],
];
for (const [name, content, error] of bad) {
  test(`mode file: ${name} is refused`, () => {
    const r = parseModeContent(content);
    assert.equal(r.mode, undefined);
    assert.match(r.error ?? '', error);
  });
}

test('durations: plain seconds or with a unit', () => {
  assert.deepEqual(['60', '500ms', '2m', '1h', '1.5s'].map(parseDuration), [60_000, 500, 120_000, 3_600_000, 1500]);
  assert.throws(() => parseDuration('soon'), /not a duration/);
});

test('ovnkube.conf: service CIDRs, MTU and next hop', () => {
  const conf = parseOvnkubeConf(
    '[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="10.96.0.0/16,fd00:10:96::/112"\n[gateway]\nmode=local\nnext-hop="172.18.0.1"\n',
  );
  assert.deepEqual(conf, {
    serviceCidrs: ['10.96.0.0/16', 'fd00:10:96::/112'],
    mtu: 1400,
    nextHop: ['172.18.0.1'],
    mode: 'local',
    masqueradeSubnets: [],
    platformType: null,
  });
});

test('ovnkube.conf: routable-mtu is the cluster MTU when set; the masquerade subnets of 4.10+', () => {
  const conf = parseOvnkubeConf(
    '[default]\nmtu="1500"\nroutable-mtu="1400"\n[gateway]\nv4-masquerade-subnet="169.254.64.0/18"\nv6-masquerade-subnet="fd69::/112"\n',
  );
  assert.equal(conf.mtu, 1400);
  assert.deepEqual(conf.masqueradeSubnets, ['169.254.64.0/18', 'fd69::/112']);
});

test('CIDRs: canonical text, host bits refused, first address of a subnet', () => {
  assert.equal(parseCidr('fd00:10:96:0::/112').text, 'fd00:10:96::/112');
  assert.throws(() => parseCidr('10.96.0.1/16'), /did you mean 10\.96\.0\.0\/16/);
  assert.throws(() => parseCidr('10.96/16'), /not an IPv4 or IPv6 address/);
  assert.equal(addressInSubnet(parseAddress('10.128.2.2'), 23, 1).text, '10.128.2.1');
  assert.equal(addressInSubnet(parseAddress('fd00:10:244:1::2'), 64, 1).text, 'fd00:10:244:1::1');
});
