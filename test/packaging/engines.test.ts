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
  assert.equal(lock.packages['']!.engines && !Array.isArray(lock.packages['']!.engines) ? lock.packages['']!.engines.node : undefined, declared, 'the lock is of this package.json');
  const lowest = semver.minVersion(declared)?.version;
  assert.ok(lowest, `engines.node ${declared} admits no version`);
  const refusing = Object.entries(lock.packages)
    .filter(([where, p]) => where !== '' && p.engines && !Array.isArray(p.engines) && p.engines.node !== undefined && !semver.satisfies(lowest, p.engines.node))
    .map(([where, p]) => `${where}@${p.version} needs node ${(p.engines as { node: string }).node}`);
  assert.deepEqual(refusing, [], `packages that refuse Node ${lowest}`);
});
