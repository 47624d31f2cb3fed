// The npm package as a user gets it: `npm pack` (with its `prepack` and `prepare`, as `npm
// publish` runs them), in a copy of the checkout whose dist/ is stale, then `npm install -g` of the tarball into a temporary prefix, which compiles the
// addon (the package's `install` script) and links the CLI into PREFIX/bin.
// The install resolves the dependencies' version ranges (a tarball carries no lockfile):
// the npm cache filled by `npm ci` serves the tarballs (--prefer-offline), the registry the
// version lists; without the registry the test is skipped, saying so.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LEFTOVER, staleCheckout } from '../helpers/stale-checkout.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ADDON = 'native/build/Release/gwmode_native.node';

/** What no user of the agent needs: tests and their fixtures, the demo, the benchmarks, sources and maps. */
const NOT_SHIPPED = /(^|\/)(test|tests|fixtures|demo|bench)(\/|$)|\.test\.|\.map$|^src\/.*\.ts$|^dist\/(test|bench)\//;

function registrySkipReason(): string | undefined {
  const r = spawnSync('npm', ['ping', '--fetch-timeout=20000', '--fetch-retries=1'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `the npm registry is unreachable: ${(r.stderr || '').trim().split('\n').pop()}`;
}

test(
  'npm pack gives a tarball without tests, demo or bench code that installs globally into a prefix, compiles the addon at install and runs --help',
  { timeout: 10 * 60_000 },
  (t) => {
    const why = registrySkipReason();
    if (why) {
      process.stderr.write(`SKIPPED (${why}): ${t.name}\n`);
      t.skip(why);
      return;
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-npm-'));
    try {
      const checkout = staleCheckout(ROOT, path.join(dir, 'checkout'));
      const packed = spawnSync('npm', ['pack', '--json', '--pack-destination', dir], {
        cwd: checkout,
        encoding: 'utf8',
      });
      assert.equal(packed.status, 0, packed.stderr);
      // `prepare` (tsc) prints to stdout before npm's JSON.
      const info = (
        JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[\n'))) as Array<{
          filename: string;
          size: number;
          files: Array<{ path: string }>;
        }>
      )[0]!;
      const files = info.files.map((f) => f.path);
      process.stderr.write(`npm pack: ${info.filename}, ${info.size} bytes, ${files.length} files\n`);

      for (const shipped of [
        'dist/src/cli/main.js',
        'dist/src/native/addon.js',
        'native/binding.gyp',
        'native/src/lock.c',
        'src/cri/runtime.proto',
        'systemd/ovn-gwmode-agent.service',
        'packaging/kubernetes/daemonset.yaml',
        'packaging/kubernetes/containerd/kustomization.yaml',
        'packaging/openshift/daemonset.yaml',
        'packaging/man/ovn-gwmode-agent.8',
        'README.md',
        'docs/README.md',
        'docs/install.md',
        'docs/operate.md',
        'docs/status.md',
      ]) {
        assert.ok(files.includes(shipped), `${shipped} is shipped`);
      }
      assert.deepEqual(
        files.filter((f) => NOT_SHIPPED.test(f)),
        [],
        'no test, demo, bench, source or map file',
      );
      assert.deepEqual(
        files.filter((f) => f.startsWith('native/build/')),
        [],
        'no prebuilt addon: it is compiled at install',
      );
      // prepack removed the stale dist/ and prepare compiled src/ afresh.
      assert.equal(files.includes(LEFTOVER), false, `${LEFTOVER} (a stale dist/'s) is not shipped`);
      assert.equal(
        spawnSync('tar', ['-xzOf', path.join(dir, info.filename), 'package/dist/src/cli/main.js'], { encoding: 'utf8' })
          .stdout,
        readFileSync(path.join(ROOT, 'dist/src/cli/main.js'), 'utf8'),
        'the packed main.js is compiled from src/',
      );
      // The figures' page stays out: the largest, and no user of the package needs it.
      assert.equal(files.includes('docs/benchmarks.md'), false, 'docs/benchmarks.md is not shipped');
      // docs/install.md's figure: under 210 kB (139 kB at 1ba4631 with README.md; 174 kB with docs/; 199 kB with the
      // docs of issue 23, the man page generator left out).
      assert.ok(info.size < 210_000, `${info.size} bytes, docs/install.md says under 210 kB`);

      const prefix = path.join(dir, 'prefix');
      const installed = spawnSync(
        'npm',
        [
          'install',
          '-g',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--prefix',
          prefix,
          path.join(dir, info.filename),
        ],
        { encoding: 'utf8', timeout: 8 * 60_000 },
      );
      assert.equal(installed.status, 0, `${installed.stdout}\n${installed.stderr}`);
      const pkg = path.join(prefix, 'lib/node_modules/ovn-gwmode-agent');
      assert.ok(existsSync(path.join(pkg, ADDON)), 'the addon was compiled at install');
      assert.equal(existsSync(path.join(pkg, 'node_modules/typescript')), false, 'no devDependency installed');
      // package.json's "man": npm links the manual page where man finds it (PREFIX/share/man).
      assert.ok(existsSync(path.join(prefix, 'share/man/man8/ovn-gwmode-agent.8')), 'the manual page is installed');

      // --help loads every command's modules, the addon among them (a missing one exits 1).
      const help = spawnSync(path.join(prefix, 'bin/ovn-gwmode-agent'), ['--help'], { encoding: 'utf8' });
      assert.equal(help.status, 0, help.stderr);
      for (const command of ['run', 'status', 'health', 'plan', 'apply', 'rollback'])
        assert.match(help.stdout, new RegExp(`ovn-gwmode-agent ${command}\\b`));

      // Uninstalling, as docs/operate.md says, with the same prefix.
      const uninstalled = spawnSync('npm', ['uninstall', '-g', '--prefix', prefix, 'ovn-gwmode-agent'], {
        encoding: 'utf8',
      });
      assert.equal(uninstalled.status, 0, uninstalled.stderr);
      assert.equal(existsSync(path.join(prefix, 'bin/ovn-gwmode-agent')), false);
      assert.equal(existsSync(path.join(prefix, 'share/man/man8/ovn-gwmode-agent.8')), false);
      assert.equal(existsSync(pkg), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
