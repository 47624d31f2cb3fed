// The Node versions the package declares (package.json engines.node) are ones every
// package of the lock runs on: `npm ci` on the lowest of them warns of no EBADENGINE
// (the @kubernetes-models 5.x line needs Node 22; its 4.x line runs on 14 and later).
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

// A CommonJS package without bundled types: the two calls used here, typed.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  minVersion(range: string): { version: string } | null;
};

const ROOT = new URL('../../../', import.meta.url);
const json = (name: string) => JSON.parse(readFileSync(new URL(name, ROOT), 'utf8'));

interface Locked {
  version?: string;
  engines?: { node?: string } | string[];
}

test('every package in package-lock.json runs on the lowest Node that package.json declares: npm ci says no EBADENGINE', () => {
  const declared: string = json('package.json').engines.node;
  const lock = json('package-lock.json') as { packages: Record<string, Locked> };
  assert.equal(
    lock.packages['']!.engines && !Array.isArray(lock.packages['']!.engines)
      ? lock.packages['']!.engines.node
      : undefined,
    declared,
    'the lock is of this package.json',
  );
  const lowest = semver.minVersion(declared)?.version;
  assert.ok(lowest, `engines.node ${declared} admits no version`);
  const refusing = Object.entries(lock.packages)
    .filter(
      ([where, p]) =>
        where !== '' &&
        p.engines &&
        !Array.isArray(p.engines) &&
        p.engines.node !== undefined &&
        !semver.satisfies(lowest, p.engines.node),
    )
    .map(([where, p]) => `${where}@${p.version} needs node ${(p.engines as { node: string }).node}`);
  assert.deepEqual(refusing, [], `packages that refuse Node ${lowest}`);
});

// npm 11.16 and later list, after every `npm ci`, the dependencies whose install scripts no
// one reviewed (package.json allowScripts); npm 12 skips them. Both are reviewed here, and
// neither is needed: netlink's (node-gyp-build) builds its own netlink socket, which the
// agent does not use (its codec is plain JavaScript; the socket is native/'s), and
// protobufjs's postinstall only checks the version scheme of its dependents.
test('every dependency with an install script is reviewed in allowScripts: npm ci lists none as unreviewed', () => {
  const lock = json('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
  const withScripts = Object.entries(lock.packages)
    .filter(([where, p]) => where !== '' && p.hasInstallScript === true)
    .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length))
    .sort();
  const reviewed = json('package.json').allowScripts as Record<string, boolean>;
  assert.deepEqual(withScripts, Object.keys(reviewed).sort());
  assert.deepEqual(reviewed, { netlink: false, protobufjs: false }, 'neither script is needed');
});
