// The native socket's own error paths, driven by a preloaded library that makes one
// setsockopt() fail: the only way to fail a call that never fails on a sane kernel.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const addonModule = fileURLToPath(new URL('../../src/native/addon.js', import.meta.url));

// setsockopt(SOL_NETLINK, NETLINK_GET_STRICT_CHK) fails with EPERM; everything else is real.
const shim = `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
int setsockopt(int fd, int level, int name, const void *value, socklen_t length) {
  static int (*real)(int, int, int, const void *, socklen_t);
  if (level == 270 && name == 12) { errno = EPERM; return -1; }
  if (!real) real = (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
  return real(fd, level, name, value, length);
}
`;

// Every property lookup of the options runs JavaScript that leaves errno at ENOENT
// (a failed access()), as any N-API call made after the failure could.
const script = `
import { existsSync } from 'node:fs';
const { addon } = await import(${JSON.stringify(addonModule)});
const options = new Proxy({ strictCheck: true }, {
  has(target, key) { existsSync('/nonexistent/gwmode'); return Reflect.has(target, key); },
});
try {
  addon.netlinkOpen(options, () => undefined);
  console.log(JSON.stringify({ opened: true }));
} catch (err) {
  console.log(JSON.stringify({ code: err.code, errno: err.errno, syscall: err.syscall }));
}
`;

test('a setsockopt that fails in open() is reported with its own errno, not one a later call left behind', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-shim-'));
  try {
    writeFileSync(path.join(dir, 'shim.c'), shim);
    const cc = spawnSync(
      'cc',
      ['-shared', '-fPIC', '-o', path.join(dir, 'shim.so'), path.join(dir, 'shim.c'), '-ldl'],
      { encoding: 'utf8' },
    );
    if (cc.error || cc.status !== 0) {
      const reason = `needs a C compiler for the setsockopt shim: ${cc.error?.message ?? cc.stderr.trim()}`;
      process.stderr.write(`SKIPPED (${reason}): ${t.name}\n`);
      t.skip(reason);
      return;
    }
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, LD_PRELOAD: path.join(dir, 'shim.so') },
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.trim()), {
      code: 'EPERM',
      errno: 1,
      syscall: 'setsockopt(NETLINK_GET_STRICT_CHK)',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
