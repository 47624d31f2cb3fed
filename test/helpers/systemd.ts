// A real systemd (the machine's, 252 on Debian 12) as PID 1 of its own mount, PID,
// cgroup, UTS and IPC namespaces, in a test node's network namespace: the recipe of
// shared/notes/testbed.md. Its root is an overlay of / on a tmpfs, so the host's root
// is never written and this checkout is visible at its own path. It enables none of
// the host's units: the bed is a node with only what the test installs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { Netns } from './netns.js';

const SYSTEMD = '/lib/systemd/systemd';

/** Why a systemd bed cannot be booted here, or undefined. */
export const systemdSkipReason: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root (namespaces, mounts, cgroups)';
  if (!existsSync(SYSTEMD)) return 'systemd is not installed';
  for (const tool of ['unshare', 'nsenter', 'pivot_root']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (util-linux)`;
  }
  if (!cgroup2()) return 'no cgroup2 hierarchy is mounted';
  return undefined;
})();

function cgroup2(): string | undefined {
  const r = spawnSync('findmnt', ['-rn', '-t', 'cgroup2', '-o', 'TARGET'], { encoding: 'utf8' });
  return r.stdout.split('\n')[0]?.trim() || undefined;
}

// PID 1 of the new namespaces: a root of its own, then exec systemd.
/** Where the checkout is seen inside the bed. */
export const BED_CHECKOUT = '/opt/ovn-gwmode-checkout';

const INNER = String.raw`
set -euo pipefail
W=$1
mount --make-rprivate /
mount -t tmpfs -o mode=0755 tmpfs "$W"
mkdir -p "$W/upper" "$W/work" "$W/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$W/upper,workdir=$W/work" "$W/root"
R=$W/root
mount -t proc proc "$R/proc"
mount -t sysfs -o ro sysfs "$R/sys"
mount -t cgroup2 cgroup2 "$R/sys/fs/cgroup"
mount -t tmpfs -o mode=0755 tmpfs "$R/dev"
for d in null zero full random urandom tty; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
touch "$R/dev/console"; mount --bind /dev/null "$R/dev/console"
mkdir "$R/dev/pts" "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
mount -t tmpfs tmpfs "$R/dev/shm"
mount -t tmpfs tmpfs "$R/run"
mount -t tmpfs tmpfs "$R/tmp"
# The checkout the unit runs from, at a fixed path: CI may clone under /tmp, which is a
# tmpfs here and private to the unit (PrivateTmp).
mkdir -p "$R${BED_CHECKOUT}"
mount --bind "$2" "$R${BED_CHECKOUT}"
# None of the host's enabled units, nothing from its fstab, no login prompts.
rm -rf "$R"/etc/systemd/system/*.wants
: > "$R/etc/fstab"
for u in getty@.service console-getty.service serial-getty@.service systemd-timesyncd.service \
         systemd-networkd.service systemd-resolved.service systemd-firstboot.service; do
  ln -sf /dev/null "$R/etc/systemd/system/$u"
done
ln -sf /lib/systemd/system/multi-user.target "$R/etc/systemd/system/default.target"
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$R/etc/machine-id"
mkdir -p "$R/oldroot"
cd "$R"
pivot_root . oldroot
umount -l /oldroot
exec env -i container=gwmode-test PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${SYSTEMD} --system
`;

/** The repository root (dist/test/helpers -> ../../..). */
const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A pause that does not keep the process alive (a race's losing side). */
const bound = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

export class SystemdBed {
  private readonly launcher: ChildProcess;
  private readonly cgroup: string;
  private readonly dir: string;
  output = '';
  /** systemd's PID on the host. */
  pid = 0;

  private constructor(ns: Netns) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'gwmode-systemd-'));
    this.cgroup = path.join(cgroup2()!, path.basename(this.dir));
    mkdirSync(this.cgroup);
    writeFileSync(path.join(this.dir, 'inner.sh'), INNER);
    mkdirSync(path.join(this.dir, 'bed'));
    this.launcher = spawn(
      'bash',
      [
        '-c',
        'echo $$ > "$1/cgroup.procs" && exec nsenter --net="/run/netns/$2" unshare --mount --pid --fork --cgroup --uts --ipc --kill-child bash "$3/inner.sh" "$3/bed" "$4"',
        'launcher',
        this.cgroup,
        ns.name,
        this.dir,
        CHECKOUT,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    this.launcher.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.launcher.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Boots systemd and waits until it is running (or degraded: the bed is not a whole machine). */
  static async boot(ns: Netns): Promise<SystemdBed> {
    const bed = new SystemdBed(ns);
    try {
      for (let i = 0; i < 200 && !bed.pid; i++) {
        await pause(50);
        const children = readFileSync(`/proc/${bed.launcher.pid}/task/${bed.launcher.pid}/children`, 'utf8').trim();
        const pid = Number(children.split(' ')[0]);
        if (pid && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'systemd') bed.pid = pid;
      }
      if (!bed.pid) throw new Error(`systemd did not start:\n${bed.output}`);
      // Until its private bus socket exists, systemctl cannot connect.
      for (let i = 0; i < 200 && !existsSync(bed.path('/run/systemd/private')); i++) await pause(50);
      const r = await bed.runAsync(['systemctl', 'is-system-running', '--wait'], 60_000);
      if (!['running', 'degraded'].includes(r.stdout.trim()))
        throw new Error(`systemd is ${r.stdout.trim()}: ${r.stderr}\n${bed.output}`);
      return bed;
    } catch (err) {
      await bed.shutdown();
      throw err;
    }
  }

  /** A path of the bed's filesystem, seen from the host. */
  path(inside: string): string {
    return path.join(`/proc/${this.pid}/root`, inside);
  }

  /** Runs a command in the bed's namespaces. */
  run(cmd: string[]): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync('nsenter', ['-t', String(this.pid), '-m', '-p', '-u', '-i', '-n', '-C', '--', ...cmd], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  }

  /** Like run, without blocking the event loop (for commands that wait). */
  runAsync(cmd: string[], timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn('nsenter', ['-t', String(this.pid), '-m', '-p', '-u', '-i', '-n', '-C', '--', ...cmd], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('exit', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
    });
  }

  /** `systemctl show -p NAME --value UNIT` */
  show(unit: string, property: string): string {
    return this.run(['systemctl', 'show', '-p', property, '--value', unit]).stdout.trimEnd();
  }

  write(inside: string, content: string, mode = 0o644): void {
    const p = this.path(inside);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content, { mode });
  }

  async shutdown(): Promise<void> {
    if (this.pid) this.run(['systemctl', 'poweroff', '--no-block']);
    const exited = new Promise((r) =>
      this.launcher.exitCode !== null || this.launcher.signalCode !== null ? r(null) : this.launcher.once('exit', r),
    );
    await Promise.race([exited, bound(15_000)]);
    if (this.launcher.exitCode === null && this.launcher.signalCode === null) {
      process.kill(this.launcher.pid!, 'SIGKILL');
      await Promise.race([exited, bound(5_000)]);
    }
    removeCgroup(this.cgroup);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function removeCgroup(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) removeCgroup(p);
  }
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch {
      spawnSync('sleep', ['0.1']);
    }
  }
}
