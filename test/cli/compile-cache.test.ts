// Node's compile cache goes only where no one but the caller could have written it.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import module from 'node:module';
import { test } from 'node:test';
import { compileCacheDir, compileCachePlan, enableCompileCache } from '../../src/cli/compile-cache.js';

test("the compile cache lives in the caller's own state directory, never in one others may write, a link or a missing one", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cache-'));
  try {
    const state = path.join(dir, 'state');
    const uid = process.getuid!();
    assert.equal(compileCacheDir(state, uid), null, 'no state directory yet');
    mkdirSync(state, { mode: 0o755 });
    chmodSync(state, 0o755);
    assert.equal(compileCacheDir(state, uid), path.join(state, 'compile-cache'));
    assert.equal(compileCacheDir(state, uid + 1), null, "another user's directory");
    for (const mode of [0o775, 0o757, 0o777]) {
      chmodSync(state, mode);
      assert.equal(compileCacheDir(state, uid), null, `mode ${mode.toString(8)}`);
    }
    chmodSync(state, 0o700);
    symlinkSync(state, path.join(dir, 'link'));
    assert.equal(compileCacheDir(path.join(dir, 'link'), uid), null, 'a symbolic link');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the compile-cache directory itself is made 0700, and one planted open, as a link or by another user is not used', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cache-'));
  try {
    const state = path.join(dir, 'state');
    const cache = path.join(state, 'compile-cache');
    const uid = process.getuid!();
    mkdirSync(state, { mode: 0o700 });
    chmodSync(state, 0o700);

    assert.equal(compileCacheDir(state, uid), cache);
    const made = lstatSync(cache);
    assert.ok(made.isDirectory() && made.uid === uid, 'made by the call');
    assert.equal(made.mode & 0o777, 0o700);

    for (const mode of [0o770, 0o707, 0o777, 0o720, 0o702]) {
      chmodSync(cache, mode);
      assert.equal(compileCacheDir(state, uid), null, `compile-cache of mode ${mode.toString(8)}`);
    }
    chmodSync(cache, 0o755);
    assert.equal(compileCacheDir(state, uid), cache, 'readable by others, writable by none');
    rmSync(cache, { recursive: true });

    const elsewhere = path.join(dir, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, cache);
    assert.equal(compileCacheDir(state, uid), null, 'compile-cache a link to a directory');
    rmSync(cache);

    if (uid === 0) {
      mkdirSync(cache, { mode: 0o700 });
      chownSync(cache, 65534, 65534);
      assert.equal(compileCacheDir(state, uid), null, "compile-cache another user's");
      rmSync(cache, { recursive: true });
    }

    symlinkSync(path.join(elsewhere, 'missing'), cache);
    assert.equal(compileCacheDir(state, uid), null, 'a dangling link');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('NODE_DISABLE_COMPILE_CACHE keeps the cache off, NODE_COMPILE_CACHE is left to Node, and neither touches the state directory', () => {
  assert.deepEqual(compileCachePlan({}), { kind: 'state-dir' });
  assert.deepEqual(compileCachePlan({ NODE_COMPILE_CACHE: '' }), { kind: 'state-dir' });
  assert.deepEqual(compileCachePlan({ NODE_COMPILE_CACHE: '/tmp/c' }), { kind: 'environment', dir: '/tmp/c' });
  assert.deepEqual(compileCachePlan({ NODE_DISABLE_COMPILE_CACHE: '1', NODE_COMPILE_CACHE: '/tmp/c' }), {
    kind: 'off',
  });

  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cache-'));
  try {
    chmodSync(dir, 0o700);
    for (const env of [{ NODE_DISABLE_COMPILE_CACHE: '1' }, { NODE_COMPILE_CACHE: path.join(dir, 'env') }]) {
      assert.equal(enableCompileCache(dir, env), null, JSON.stringify(env));
      assert.ok(!existsSync(path.join(dir, 'compile-cache')), JSON.stringify(env));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const MODULE = new URL('../../src/cli/compile-cache.js', import.meta.url).href;

test('where this Node has a compile cache, it is turned on in the checked directory, unless the environment says otherwise', (t) => {
  if (!('enableCompileCache' in module))
    return void t.skip(`Node ${process.version} has no module.enableCompileCache (22.8+)`);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cache-'));
  try {
    chmodSync(dir, 0o700);
    const script = `import m from 'node:module'; const { enableCompileCache } = await import(${JSON.stringify(MODULE)}); console.log(JSON.stringify([enableCompileCache(process.argv[1]), m.getCompileCacheDir() ?? null]));`;
    const run = (env: Record<string, string>) => {
      const clean = Object.fromEntries(
        Object.entries(process.env).filter(
          ([k]) => !k.startsWith('NODE_COMPILE_CACHE') && k !== 'NODE_DISABLE_COMPILE_CACHE',
        ),
      );
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
        encoding: 'utf8',
        env: { ...clean, ...env },
      });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as [string | null, string | null];
    };
    const [used, node] = run({});
    assert.equal(used, path.join(dir, 'compile-cache'));
    assert.ok(node?.startsWith(path.join(dir, 'compile-cache') + '/'), String(node));
    rmSync(path.join(dir, 'compile-cache'), { recursive: true });

    const [usedEnv, nodeEnv] = run({ NODE_COMPILE_CACHE: path.join(dir, 'env') });
    assert.ok(nodeEnv?.startsWith(path.join(dir, 'env') + '/') && usedEnv === nodeEnv, String(nodeEnv));
    assert.deepEqual(run({ NODE_DISABLE_COMPILE_CACHE: '1' }), [null, null]);
    assert.ok(!existsSync(path.join(dir, 'compile-cache')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
