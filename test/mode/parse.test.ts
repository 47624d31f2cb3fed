import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { parseModeContent } from '../../src/mode/parse.js';
import { parseDuration } from '../../src/config/duration.js';
import { parseOvnkubeConf } from '../../src/config/ovnkube-conf.js';
import { addressInSubnet, parseAddress, parseCidr } from '../../src/net/cidr.js';

const ok: Array<[string, string, string]> = [
  ['a bare word', 'local', 'local'],
  ['a bare word with whitespace', '  shared\n\n', 'shared'],
  ['the ConfigMap as YAML', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gateway-mode-config\n  namespace: openshift-network-operator\ndata:\n  mode: "local"\n', 'local'],
  ['the ConfigMap as JSON', '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gateway-mode-config"},"data":{"mode":"shared"}}', 'shared'],
  ['Network with routingViaHost true', 'apiVersion: operator.openshift.io/v1\nkind: Network\nspec:\n  defaultNetwork:\n    ovnKubernetesConfig:\n      gatewayConfig:\n        routingViaHost: true\n', 'local'],
  ['Network without gatewayConfig', 'apiVersion: operator.openshift.io/v1\nkind: Network\nspec: {}\n', 'shared'],
];
for (const [name, content, mode] of ok) {
  test(`mode file: ${name} gives ${mode}`, () => assert.deepEqual(parseModeContent(content), { mode }));
}

const bad: Array<[string, string, RegExp]> = [
  ['an empty file', '   \n', /empty/],
  ['another word (CNO would fall back to shared)', 'Local', /expected exactly "local" or "shared"/],
  ['garbage', '{{{ not yaml', /neither a mode word nor valid YAML/],
  ['a ConfigMap of another name', 'kind: ConfigMap\nmetadata:\n  name: other\ndata:\n  mode: local\n', /is not gateway-mode-config/],
  ['a ConfigMap with a bad mode', 'kind: ConfigMap\ndata:\n  mode: hybrid\n', /data.mode is "hybrid"/],
  ['a ConfigMap without mode', 'kind: ConfigMap\ndata: {}\n', /data.mode is missing/],
  ['routingViaHost not a boolean', 'apiVersion: operator.openshift.io/v1\nkind: Network\nspec:\n  defaultNetwork:\n    ovnKubernetesConfig:\n      gatewayConfig:\n        routingViaHost: "yes"\n', /expected true or false/],
  ['the config.openshift.io Network', 'apiVersion: config.openshift.io/v1\nkind: Network\nspec: {}\n', /no gateway settings/],
  ['another kind', 'kind: Pod\n', /neither ConfigMap/],
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
  const conf = parseOvnkubeConf('[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="10.96.0.0/16,fd00:10:96::/112"\n[gateway]\nmode=local\nnext-hop="172.18.0.1"\n');
  assert.deepEqual(conf, {
    serviceCidrs: ['10.96.0.0/16', 'fd00:10:96::/112'],
    mtu: 1400,
    nextHop: ['172.18.0.1'],
    mode: 'local',
    masqueradeSubnets: [],
    platformType: null,
    keys: new Set(['default.mtu', 'kubernetes.service-cidrs', 'gateway.mode', 'gateway.next-hop']),
  });
});

test('ovnkube.conf: routable-mtu is the cluster MTU when set; the masquerade subnets of 4.10+', () => {
  const conf = parseOvnkubeConf('[default]\nmtu="1500"\nroutable-mtu="1400"\n[gateway]\nv4-masquerade-subnet="169.254.64.0/18"\nv6-masquerade-subnet="fd69::/112"\n');
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
