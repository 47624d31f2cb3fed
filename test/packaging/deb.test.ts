// The Debian package as an admin gets it: `npm run deb` builds it, lintian finds no error in
// it, and in the systemd test bed (systemd 252 as PID 1 of its own namespaces, in the seed
// node's network namespace; its root an overlay, so the host's dpkg database is never
// written) it is installed with `dpkg -i`, configured, upgraded to a second build, removed
// and purged, with what Debian policy asks of a service checked at each step.
import { rhcosOsRelease } from '../helpers/os-release.js';
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import { test, after, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { kernelSkipReason, seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { echoTagged, LEFTOVER, staleCheckout } from '../helpers/stale-checkout.js';
import { SystemdBed, systemdSkipReason } from '../helpers/systemd.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PKG = 'ovn-gwmode-agent';
const UNIT = `${PKG}.service`;
const MAN_PAGE = `./usr/share/man/man8/${PKG}.8.gz`;
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const UPGRADE = `${VERSION}+test2`;
const LOCAL_V4 = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const IDLE = "trap 'exit 0' TERM; while :; do sleep 1; done";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function debSkipReason(): string | undefined {
  for (const tool of ['dpkg-deb', 'strip', 'make', 'g++']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  return undefined;
}

function skip(t: TestContext, why: string | undefined): boolean {
  if (!why) return false;
  process.stderr.write(`SKIPPED (${why}): ${t.name}\n`);
  t.skip(why);
  return true;
}

const out = mkdtempSync(path.join(tmpdir(), 'gwmode-deb-test-'));
after(() => rmSync(out, { recursive: true, force: true }));
// Built from a copy of the checkout whose dist/ is stale: the package holds what src/ compiles to.
const checkout = path.join(out, 'checkout');

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: checkout, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(log) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${log.slice(-4000)}`)),
    );
  });
}

let first: Promise<string> | undefined;
/** `npm run deb` into a temporary folder, once for the file. */
function buildFirst(): Promise<string> {
  first ??= Promise.resolve(staleCheckout(ROOT, checkout))
    .then(() => run('npm', ['run', 'deb', '--', out]))
    .then((log) => {
      echoTagged(log, 'deb');
      return path.join(out, `${PKG}_${VERSION}_amd64.deb`);
    });
  return first;
}

let second: Promise<string> | undefined;
/**
 * The upgrade's package: the first one under another version (DEBIAN/control's, and the agent's
 * package.json with its md5sum), repacked uncompressed: all that an upgrade changes for dpkg and
 * the agent, without a second build. The first test starts it beside lintian; it is awaited by
 * the second test only.
 */
function buildSecond(): Promise<string> {
  second ??= buildFirst().then(async (v1) => {
    const tree = path.join(out, 'v2');
    await run('dpkg-deb', ['-R', v1, tree]);
    const edit = (file: string, change: (text: string) => string) =>
      writeFileSync(path.join(tree, file), change(readFileSync(path.join(tree, file), 'utf8')));
    const manifest = `usr/lib/${PKG}/package.json`;
    edit(manifest, (text) => text.replace(`"version": "${VERSION}"`, `"version": "${UPGRADE}"`));
    const md5 = createHash('md5')
      .update(readFileSync(path.join(tree, manifest)))
      .digest('hex');
    edit('DEBIAN/md5sums', (text) => text.replace(new RegExp(`^\\w+(  ${manifest})$`, 'm'), `${md5}$1`));
    edit('DEBIAN/control', (text) => text.replace(/^Version: .*$/m, `Version: ${UPGRADE}`));
    const deb = path.join(out, `${PKG}_${UPGRADE}_amd64.deb`);
    await run('dpkg-deb', ['--root-owner-group', '-Znone', '--build', tree, deb]);
    return deb;
  });
  return second;
}

test(
  'npm run deb builds a package lintian finds no error in, with the manual page, and the README with the docs pages its links lead to',
  { timeout: 10 * 60_000 },
  async (t) => {
    if (skip(t, debSkipReason())) return;
    const deb = await buildFirst();
    // Not awaited here: a failure of the second build fails the test that installs it.
    if (!systemdSkipReason && !kernelSkipReason) buildSecond().catch(() => undefined);
    const fields = spawnSync('dpkg-deb', ['--field', deb, 'Package', 'Version', 'Architecture'], {
      encoding: 'utf8',
    }).stdout;
    assert.equal(fields, `Package: ${PKG}\nVersion: ${VERSION}\nArchitecture: amd64\n`);
    const files = spawnSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout;
    for (const f of [
      `./usr/bin/${PKG}`,
      `./usr/lib/${PKG}/bin/node`,
      `./usr/lib/${PKG}/dist/src/cli/main.js`,
      `./usr/lib/${PKG}/native/build/Release/gwmode_native.node`,
      `./lib/systemd/system/${UNIT}`,
      `./etc/default/${PKG}`,
      `./usr/share/doc/${PKG}/copyright`,
      MAN_PAGE,
    ]) {
      assert.ok(files.includes(` ${f}\n`), `${f} is in the package`);
    }
    assert.doesNotMatch(files, /\/dist\/src\/demo\/|\/dist\/test\/|\.map\n/, 'no demo, test or source map');
    // The JavaScript is compiled from src/ by the build, not taken from the checkout's stale dist/.
    assert.ok(!files.includes(`/${LEFTOVER}\n`), `${LEFTOVER} (a stale dist/'s) is not in the package`);
    const main = spawnSync(
      'sh',
      ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -xO "$2"', 'sh', deb, `./usr/lib/${PKG}/dist/src/cli/main.js`],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    assert.equal(
      main.stdout,
      readFileSync(path.join(ROOT, 'dist/src/cli/main.js'), 'utf8'),
      'main.js is compiled from src/',
    );
    // The README as in the source, beside every docs page it links to: its relative links resolve there.
    const doc = `./usr/share/doc/${PKG}`;
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const linked = [...new Set([...readme.matchAll(/\]\((docs\/[^)#\s]+)/g)].map((m) => m[1]!))];
    assert.ok(
      linked.includes('docs/operate.md') && linked.includes('docs/status.md'),
      `the README's links: ${linked.join(', ')}`,
    );
    for (const f of [`${doc}/README.md`, ...linked.map((l) => `${doc}/${l}`)])
      assert.ok(files.includes(` ${f}\n`), `${f} is in the package`);
    const shipped = spawnSync(
      'sh',
      ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -xO "$2"', 'sh', deb, `${doc}/README.md`],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    assert.equal(shipped.stdout, readme, "the package's README.md is the repository's");
    // The manual page is the repository's, gzipped.
    const page = spawnSync('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -xO "$2"', 'sh', deb, MAN_PAGE], {
      maxBuffer: 1 << 20,
    });
    assert.equal(page.status, 0, page.stderr.toString());
    assert.equal(
      gunzipSync(page.stdout).toString('utf8'),
      readFileSync(path.join(ROOT, 'packaging/man', `${PKG}.8`), 'utf8'),
    );
    if (spawnSync('sh', ['-c', 'command -v lintian']).status !== 0) {
      process.stderr.write(`SKIPPED (lintian is not installed; .ci/run installs it): lintian check of ${t.name}\n`);
      return;
    }
    // --fail-on error: warnings are reported (below), errors fail. Not run: binaries/spelling, whose one
    // tag (spelling-error-in-binary) is info, never shown without -I, and which reads every string of
    // the 100 MB node binary (lintian 24 -> 21 s here without it).
    const lint = spawnSync(
      'lintian',
      ['--fail-on', 'error', '--tag-display-limit', '0', '--dont-check-part', 'binaries/spelling', deb],
      { encoding: 'utf8' },
    );
    const tags = lint.stdout.split('\n').filter((l) => /^[EWIO]: /.test(l));
    process.stderr.write(
      `lintian: ${tags.filter((l) => l.startsWith('E:')).length} errors, ${tags.filter((l) => l.startsWith('W:')).length} warnings\n${tags.map((l) => `  ${l}\n`).join('')}`,
    );
    assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`);
    assert.deepEqual(
      tags.filter((l) => l.startsWith('E:')),
      [],
    );
    // The manual page is there and sound: neither missing nor one man or groff complains about.
    assert.deepEqual(
      tags.filter((l) => /no-manual-page|manpage-/.test(l)),
      [],
    );
    // The documentation draws no tag (nor the README and docs/ uncompressed, as their links need).
    assert.deepEqual(
      tags.filter((l) => l.includes('usr/share/doc/')),
      [],
    );
  },
);

test(
  'the package under a real systemd: dpkg -i enables and starts the unit, the admin configures it, an upgrade restarts it keeping the settings, remove stops it keeping settings and state, purge removes them',
  { timeout: 15 * 60_000 },
  async (t) => {
    if (skipWithoutKernel(t)) return;
    if (skip(t, systemdSkipReason ?? debSkipReason())) return;
    const [v1, v2] = await Promise.all([buildFirst(), buildSecond()]);
    const ns = seedNode({ gw0: true });
    let bed: SystemdBed | undefined;
    try {
      bed = await SystemdBed.boot(ns);
      const b = bed;
      const journal = () => b.run(['journalctl', '-u', UNIT, '-o', 'cat', '--no-pager']).stdout;
      const dump = () =>
        `systemctl status:\n${b.run(['systemctl', 'status', '--no-pager', '-l', UNIT]).stdout}\njournal:\n${journal().slice(-4000)}`;
      const until = async <T>(fn: () => T | undefined, what: string): Promise<T> => {
        for (const deadline = Date.now() + 60_000; Date.now() < deadline; await pause(100)) {
          const v = fn();
          if (v !== undefined) return v;
        }
        throw new Error(`never saw ${what}\n${dump()}`);
      };
      const dpkg = (...args: string[]) => {
        const r = b.run(['dpkg', ...args]);
        assert.equal(r.status, 0, `dpkg ${args.join(' ')}: ${r.stdout}${r.stderr}`);
        return r.stdout;
      };
      const dpkgStatus = () => b.run(['dpkg-query', '-W', '-f', '${Status} ${Version}', PKG]).stdout;
      const brief = () => b.run([`/usr/bin/${PKG}`, 'status', '--brief']).stdout.trim();
      // lstat: an enablement link points at an absolute path of the bed, not of the host.
      const exists = (p: string) => lstatSync(b.path(p), { throwIfNoEntry: false }) !== undefined;
      // This machine was made from a container image whose policy-rc.d forbids every service
      // start (exit 101), which deb-systemd-invoke obeys; a node has none.
      b.run(['rm', '-f', '/usr/sbin/policy-rc.d']);
      // An RHCOS 4.9 node: the packaged unit reads the release from /etc/os-release, its default.
      b.write('/etc/os-release', rhcosOsRelease('4.9'));
      copyFileSync(v1, b.path('/root/v1.deb'));
      copyFileSync(v2, b.path('/root/v2.deb'));

      // A local-mode ovnkube-node, restarted by systemd as kubelet would (as in the unit's test).
      copyFileSync('/bin/sh', b.path('/usr/local/bin/ovnkube'));
      b.write(
        '/etc/systemd/system/ovnkube-node.service',
        `[Service]\nExecStart=/usr/local/bin/ovnkube -c "${IDLE}" ovnkube --init-node node1 --gateway-mode local\nRestart=always\nRestartSec=200ms\n`,
      );
      assert.equal(b.run(['systemctl', 'daemon-reload']).status, 0);
      assert.equal(b.run(['systemctl', 'start', 'ovnkube-node.service']).status, 0);

      // 1. dpkg -i: installed, enabled and started. Unconfigured (no mode file), the agent
      //    exits 2 naming the setting, and the unit stays failed instead of restarting.
      dpkg('-i', '/root/v1.deb');
      assert.equal(dpkgStatus(), `install ok installed ${VERSION}`);
      assert.equal(b.run(['systemctl', 'is-enabled', UNIT]).stdout.trim(), 'enabled');
      assert.ok(exists(`/etc/systemd/system/multi-user.target.wants/${UNIT}`));
      await until(() => (b.show(UNIT, 'ActiveState') === 'failed' ? true : undefined), 'the unconfigured unit failed');
      assert.equal(b.show(UNIT, 'ExecMainStatus'), '2');
      assert.equal(b.show(UNIT, 'NRestarts'), '0', 'RestartPreventExitStatus=2');
      assert.match(journal(), /--mode-file: required/);
      assert.match(b.run([`/usr/lib/${PKG}/bin/node`, '--version']).stdout, /^v24\./, 'the bundled Node.js');
      assert.equal(b.run([`/usr/bin/${PKG}`, '--help']).status, 0);
      const unit = readFileSync(b.path(`/lib/systemd/system/${UNIT}`), 'utf8');
      assert.match(
        unit,
        new RegExp(
          `^ExecStart=/usr/lib/${PKG}/bin/node --max-semi-space-size=1 --v8-pool-size=1 /usr/lib/${PKG}/dist/src/cli/main\\.js run$`,
          'm',
        ),
      );
      // The rest of the unit is the repository's.
      const body = (u: string) =>
        u
          .split('\n')
          .filter((l) => !/^(#|ExecStart=|Documentation=)/.test(l))
          .join('\n');
      assert.equal(body(unit), body(readFileSync(path.join(ROOT, 'systemd', UNIT), 'utf8')));
      const sample = readFileSync(path.join(ROOT, 'systemd/ovn-gwmode-agent.default'), 'utf8');
      assert.equal(readFileSync(b.path(`/etc/default/${PKG}`), 'utf8'), sample);
      assert.match(
        b.run(['dpkg-query', '-W', '-f', '${Conffiles}', PKG]).stdout,
        new RegExp(`^ /etc/default/${PKG} [0-9a-f]{32}$`, 'm'),
      );

      // 2. The admin fills in the settings and restarts: the route moves, with one restart
      //    of ovnkube-node.
      const settings = `${sample}\n# This node:\nOVN_GWMODE_MODE_FILE=/etc/ovn-gwmode-agent/mode\nOVN_GWMODE_SERVICE_CIDR=10.96.0.0/16\nOVN_GWMODE_MTU=1400\nOVN_GWMODE_RESTART=signal\nOVN_GWMODE_SETTLE=1\n`;
      b.write(`/etc/default/${PKG}`, settings);
      b.write('/etc/ovn-gwmode-agent/mode', 'local\n');
      const restarted = await b.runAsync(['systemctl', 'restart', UNIT], 60_000);
      assert.equal(restarted.status, 0, `${restarted.stderr}\n${dump()}`);
      await until(() => (brief().startsWith('Converged desired=local') ? true : undefined), 'Converged');
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      assert.equal(b.show('ovnkube-node.service', 'NRestarts'), '1');
      const pid1 = Number(b.show(UNIT, 'MainPID'));
      assert.match(
        readFileSync(b.path(`/proc/${pid1}/cmdline`), 'utf8')
          .split('\0')
          .join(' '),
        new RegExp(
          `^/usr/lib/${PKG}/bin/node --max-semi-space-size=1 --v8-pool-size=1 /usr/lib/${PKG}/dist/src/cli/main\\.js run`,
        ),
      );
      assert.equal(JSON.parse(b.run([`/usr/bin/${PKG}`, 'status', '--json']).stdout).version, VERSION);

      // 3. Upgrade: restarted on the new files, the admin's settings kept as they are (the
      //    package's conffile did not change, so dpkg neither asks nor leaves a copy), the
      //    migration not redone (no second ovnkube-node restart).
      dpkg('-i', '/root/v2.deb');
      assert.equal(dpkgStatus(), `install ok installed ${UPGRADE}`);
      const pid2 = await until(() => {
        const p = Number(b.show(UNIT, 'MainPID'));
        return p && p !== pid1 && b.show(UNIT, 'ActiveState') === 'active' ? p : undefined;
      }, 'the agent restarted by the upgrade');
      assert.ok(pid2);
      await until(
        () =>
          JSON.parse(b.run([`/usr/bin/${PKG}`, 'status', '--json']).stdout || '{}').version === UPGRADE
            ? true
            : undefined,
        `the agent of ${UPGRADE}`,
      );
      await until(
        () => (brief().startsWith('Converged desired=local') ? true : undefined),
        'Converged after the upgrade',
      );
      assert.equal(readFileSync(b.path(`/etc/default/${PKG}`), 'utf8'), settings);
      for (const leftover of ['.dpkg-new', '.dpkg-dist', '.dpkg-old'])
        assert.equal(exists(`/etc/default/${PKG}${leftover}`), false, leftover);
      assert.equal(b.show('ovnkube-node.service', 'NRestarts'), '1');
      assert.equal(b.run(['systemctl', 'is-enabled', UNIT]).stdout.trim(), 'enabled');

      // 4. Remove: stopped (the socket gone), the program and unit gone; the settings and the
      //    state (the restart journal) kept; the route left as the agent made it.
      dpkg('-r', PKG);
      assert.equal(dpkgStatus(), `deinstall ok config-files ${UPGRADE}`);
      assert.equal(existsSync(b.path(`/proc/${pid2}`)), false, 'the agent stopped');
      assert.notEqual(b.show(UNIT, 'ActiveState'), 'active');
      assert.equal(exists('/run/ovn-gwmode-agent/agent.sock'), false);
      for (const gone of [`/usr/bin/${PKG}`, `/usr/lib/${PKG}`, `/lib/systemd/system/${UNIT}`])
        assert.equal(exists(gone), false, `${gone} removed`);
      assert.equal(readFileSync(b.path(`/etc/default/${PKG}`), 'utf8'), settings, 'settings kept');
      assert.ok(exists(`/var/lib/${PKG}/migration-journal.json`), 'state kept');
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);

      // 5. Purge: the settings, the state and every enablement link gone.
      dpkg('-P', PKG);
      assert.equal(b.run(['dpkg-query', '-W', PKG]).status, 1, 'not known to dpkg any more');
      for (const gone of [
        `/etc/default/${PKG}`,
        `/var/lib/${PKG}`,
        `/etc/systemd/system/multi-user.target.wants/${UNIT}`,
        `/etc/systemd/system/${UNIT}`,
        `/var/lib/systemd/deb-systemd-helper-enabled/${UNIT}`,
        `/var/lib/systemd/deb-systemd-helper-masked/${UNIT}`,
      ]) {
        assert.equal(exists(gone), false, `${gone} removed`);
      }
      assert.equal(b.show(UNIT, 'LoadState'), 'not-found');
    } finally {
      await bed?.shutdown();
      ns.destroy();
    }
  },
);
