// ovnkube.conf as the agent takes it: what the settings make of its fields (gcfg.test.ts
// holds the syntax).
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseOvnkubeConf, readOvnkubeConf } from '../../src/config/ovnkube-conf.js';
import { ConfigError, resolvePlanSettings } from '../../src/config/settings.js';

function withConf<T>(content: string | Buffer, fn: (file: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-ovnkubeconf-'));
  const file = path.join(dir, 'ovnkube.conf');
  writeFileSync(file, content);
  return fn(file).finally(() => rmSync(dir, { recursive: true, force: true }));
}

const planSettings = (file: string) =>
  resolvePlanSettings({
    modeFile: '/x',
    ovnkubeConfig: file,
    serviceCidr: ['10.96.0.0/16'],
    gatewayInterface: 'br-ex',
    managementInterface: 'ovn-k8s-mp0',
    layout: 'auto',
    ovnkubeModeCheck: 'proc',
    logLevel: 'info',
  });

test('a masquerade subnet under [Gateway] V4-Masquerade-Subnet (names in any case) gives its .4 as a 4.10+ next hop', async () => {
  const s = await withConf('[Gateway]\nV4-Masquerade-Subnet="100.98.0.0/16"\n', planSettings);
  assert.deepEqual(s.masqueradeNexthops, ['100.98.0.4']);
});

test('lower-case masquerade subnets in every quoting keep giving their .4', async () => {
  for (const value of [
    '169.254.0.0/17',
    '"169.254.0.0/17"',
    '169.254.0.0/17 ; 4.17 default',
    '"169.254."0.0/17',
    '  169.254.0.0/17\t# x',
  ]) {
    const s = await withConf(
      `[gateway]\nv4-masquerade-subnet=${value}\nv6-masquerade-subnet="fd69::/112"\n`,
      planSettings,
    );
    assert.deepEqual(s.masqueradeNexthops, ['169.254.0.4', 'fd69::4'], value);
  }
});

test('[kubernetes] platform-type in any case; an empty masquerade subnet is none', () => {
  const conf = parseOvnkubeConf(
    '[Kubernetes]\nPlatform-Type="AWS"\nservice-cidrs=10.96.0.0/16\n[Gateway]\nV4-Masquerade-Subnet=""\n',
  );
  assert.equal(conf.platformType, 'AWS');
  assert.deepEqual(conf.masqueradeSubnets, []);
  assert.equal(conf.mode, null);
  assert.equal(parseOvnkubeConf('[default]\nmtu=1400\n').platformType, null);
});

test('a conf not read is a ConfigError naming the file, the line and why', async () => {
  const cases: Array<[string | Buffer, RegExp]> = [
    ['[gateway]\nmode local\n', /^--ovnkube-config: \S+ovnkube\.conf: line 2: not a \[section\] header/],
    ['[default]\nmtu\n', /: line 2: not a \[section\] header/],
    ['[default]\nmtu=1e3\n', /: \[default\] mtu "1e3" is not a whole number$/],
    ['[default]\nmtu=70000\n', /: \[default\] mtu 70000 is not a valid MTU$/],
    ['[default]\nmtu=1500\nroutable-mtu=9\n', /: \[default\] routable-mtu 9 is not a valid MTU$/],
    ['[default]\nmtu=abc\nroutable-mtu=1400\n', /: \[default\] mtu "abc" is not a whole number$/],
    [Buffer.from('[gateway]\nmode=\xff\n', 'latin1'), /: illegal UTF-8 encoding$/],
    ['\ufeff[gateway]\nmode=local\n', /: line 1: a NUL, a carriage return or a byte order mark$/],
  ];
  for (const [content, expected] of cases) {
    const err = await withConf(content, planSettings).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ConfigError, `${String(content)}: ${String(err)}`);
    assert.equal(err.flag, 'ovnkube-config');
    assert.match(err.message, expected);
  }
});

test('the MTU: routable-mtu over mtu, read from the file', async () => {
  assert.equal((await withConf('[default]\nmtu=1500\nRoutable-MTU=1400\n', readOvnkubeConf)).mtu, 1400);
});
