// Node's compile cache goes only where no one but the caller could have written it.
import { strict as assert } from 'node:assert';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { compileCacheDir } from '../../src/cli/compile-cache.js';

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
