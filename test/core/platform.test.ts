// os-release as RHCOS writes it, read by the pure core: the fields the release is taken from.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseOsRelease } from '../../src/core/platform.js';
import { rhcosOsRelease } from '../helpers/os-release.js';
import { RHCOS_49_OS_RELEASE } from '../helpers/agent.js';

test('os-release: RHCOS 4.9 gives its ID, OpenShift version and build version', () => {
  assert.deepEqual(parseOsRelease(rhcosOsRelease('4.9'), '/etc/os-release'), {
    path: '/etc/os-release',
    id: 'rhcos',
    openshiftVersion: '4.9',
    version: '49.84.202212201621-0',
    versionId: '4.9',
    error: null,
  });
});

test('os-release: unquoted, single-quoted and escaped values; comments, blank and malformed lines skipped', () => {
  const o = parseOsRelease(
    '# comment\n\nID=rhcos\nOPENSHIFT_VERSION=\'4.8\'\nVERSION="48.84 \\"x\\""\nnot a line\n',
    'f',
  );
  assert.deepEqual([o.id, o.openshiftVersion, o.version], ['rhcos', '4.8', '48.84 "x"']);
});

test('os-release: an empty value is no value', () => {
  assert.deepEqual(parseOsRelease('ID=""\nOPENSHIFT_VERSION=\n', 'f').openshiftVersion, null);
});

test("os-release: the agent tests' fixture is the demo's RHCOS 4.9 os-release", () => {
  assert.equal(readFileSync(RHCOS_49_OS_RELEASE, 'utf8'), rhcosOsRelease('4.9'));
});
