// A real containerd serving CRI runtime.v1 on a socket of our own, started inside a
// test network namespace (so host-network pods share the agent's namespace), with a
// tiny image built by hand (no registry is reachable). The test plays kubelet.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IDLE } from '../../src/demo/fake-ovnkube.js';
import type { Netns } from './netns.js';

const PROTO = fileURLToPath(new URL('../../../test/fixtures/cri-testbed.proto', import.meta.url));
export const IMAGE = 'docker.io/library/gwmode-test:1';

/** Why containerd tests cannot run here, or undefined. */
export const containerdSkipReason: string | undefined = (() => {
  for (const tool of ['containerd', 'runc', 'ctr', 'busybox', 'tar']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      return `${tool} is not installed (apt-get install containerd runc busybox-static; .ci/run does)`;
    }
  }
  return undefined;
})();

type Unary = (req: object, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Copies a dynamically linked binary and the libraries it needs into a rootfs. */
function copyWithLibraries(binary: string, rootfs: string, as: string): void {
  mkdirSync(path.dirname(path.join(rootfs, as)), { recursive: true });
  copyFileSync(binary, path.join(rootfs, as));
  // ldd fails on a static binary ("not a dynamic executable"): then there is nothing to copy.
  const ldd = spawnSync('ldd', [binary], { encoding: 'utf8' }).stdout ?? '';
  for (const m of ldd.matchAll(/(\/\S+)/g)) {
    const lib = m[1]!;
    const target = path.join(rootfs, lib);
    mkdirSync(path.dirname(target), { recursive: true });
    if (!existsSync(target)) copyFileSync(realpathSync(lib), target);
  }
}

function buildImageTar(dir: string): string {
  const rootfs = path.join(dir, 'rootfs');
  mkdirSync(path.join(rootfs, 'bin'), { recursive: true });
  copyWithLibraries(
    realpathSync(execFileSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).trim()),
    rootfs,
    'bin/busybox',
  );
  for (const applet of ['sh', 'sleep', 'true']) symlinkSync('busybox', path.join(rootfs, 'bin', applet));
  // The stand-in ovnkube-node: dash under the name ovnkube, so that its command line
  // reads `/usr/bin/ovnkube -c <loop> ovnkube --init-node ... --gateway-mode MODE`.
  // The image's own command (the pod sandbox's) waits for SIGTERM, like a pause container.
  copyWithLibraries('/bin/dash', rootfs, 'usr/bin/ovnkube');
  mkdirSync(path.join(rootfs, 'etc'));
  mkdirSync(path.join(rootfs, 'tmp'));

  const layout = path.join(dir, 'layout');
  const blobs = path.join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const layerTar = path.join(dir, 'layer.tar');
  execFileSync('tar', ['-C', rootfs, '-cf', layerTar, '.']);
  const layer = readFileSync(layerTar);
  const layerDigest = sha256(layer);
  writeFileSync(path.join(blobs, layerDigest), layer);
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const config = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: 'linux',
      config: { Cmd: ['/bin/sh', '-c', IDLE], Env: ['PATH=/usr/bin:/bin'] },
      rootfs: { type: 'layers', diff_ids: [`sha256:${layerDigest}`] },
    }),
  );
  writeFileSync(path.join(blobs, sha256(config)), config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: `sha256:${sha256(config)}`,
        size: config.length,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: `sha256:${layerDigest}`, size: layer.length },
      ],
    }),
  );
  writeFileSync(path.join(blobs, sha256(manifest)), manifest);
  writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${sha256(manifest)}`,
          size: manifest.length,
          annotations: { 'io.containerd.image.name': IMAGE, 'org.opencontainers.image.ref.name': '1' },
        },
      ],
    }),
  );
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const tar = path.join(dir, 'image.tar');
  execFileSync('tar', ['-C', layout, '-cf', tar, '.']);
  return tar;
}

export interface Pod {
  sandboxId: string;
  config: object;
}

export class Containerd {
  readonly socket: string;
  private readonly child: ChildProcess;
  private client: grpc.Client | undefined;
  log = '';

  private constructor(
    ns: Netns,
    readonly dir: string,
    socket?: string,
  ) {
    this.socket = socket ?? path.join(dir, 'containerd.sock');
    const config = path.join(dir, 'config.toml');
    writeFileSync(
      config,
      [
        'version = 2',
        `root = "${dir}/root"`,
        `state = "${dir}/state"`,
        '[grpc]',
        `  address = "${this.socket}"`,
        '[ttrpc]',
        `  address = "${this.socket}.ttrpc"`,
        '[plugins."io.containerd.grpc.v1.cri"]',
        `  sandbox_image = "${IMAGE}"`,
        '  restrict_oom_score_adj = true',
        '  disable_apparmor = true',
        '  [plugins."io.containerd.grpc.v1.cri".containerd]',
        '    snapshotter = "overlayfs"',
        '    default_runtime_name = "runc"',
        '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
        '      runtime_type = "io.containerd.runc.v2"',
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
        '        SystemdCgroup = false',
        '  [plugins."io.containerd.grpc.v1.cri".cni]',
        `    bin_dir = "${dir}/cni/bin"`,
        `    conf_dir = "${dir}/cni/conf"`,
        '',
      ].join('\n'),
    );
    // nsenter, not `ip netns exec`: the latter also remounts /sys in a mount namespace
    // of its own, which hides the cgroup mounts runc needs.
    this.child = spawn('nsenter', [`--net=/run/netns/${ns.name}`, 'containerd', '--config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d: Buffer) => (this.log += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.log += d.toString()));
  }

  /**
   * Starts containerd in the namespace, imports the test image and connects over CRI.
   * socket: where CRI is served (default in dir), e.g. where a manifest expects it.
   */
  static async start(ns: Netns, dir: string, options: { socket?: string } = {}): Promise<Containerd> {
    mkdirSync(dir, { recursive: true });
    if (options.socket) mkdirSync(path.dirname(options.socket), { recursive: true });
    const c = new Containerd(ns, dir, options.socket);
    for (let i = 0; i < 200 && !existsSync(c.socket); i++) await pause(50);
    if (!existsSync(c.socket)) throw new Error(`containerd did not start:\n${c.log.slice(-3000)}`);
    const tar = buildImageTar(path.join(dir, 'image'));
    execFileSync('ctr', ['-a', c.socket, '-n', 'k8s.io', 'images', 'import', '--no-unpack=false', tar], {
      stdio: 'pipe',
    });
    const def = grpc.loadPackageDefinition(
      protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true }),
    ) as unknown as { runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } } };
    c.client = new def.runtime.v1.RuntimeService(`unix://${c.socket}`, grpc.credentials.createInsecure());
    return c;
  }

  call<T = unknown>(method: string, req: object): Promise<T> {
    // The generated client has a method per RPC of runtime.proto.
    const fn = (this.client as unknown as Record<string, Unary>)[method]!;
    return new Promise((resolve, reject) =>
      fn.call(this.client, req, { deadline: Date.now() + 30_000 }, (err, res) =>
        err ? reject(err) : resolve(res as T),
      ),
    );
  }

  /** A host-network pod, as kubelet would make for ovnkube-node. */
  async runPod(namespace: string, name: string): Promise<Pod> {
    const config = {
      metadata: { name, uid: `uid-${name}`, namespace, attempt: 0 },
      hostname: '',
      logDirectory: path.join(this.dir, 'logs', name),
      labels: { 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.name': name },
      linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
    mkdirSync(config.logDirectory, { recursive: true });
    const res = await this.call<{ podSandboxId: string }>('RunPodSandbox', { config });
    return { sandboxId: res.podSandboxId, config };
  }

  /** Creates and starts a container the way kubelet labels it; returns its id. */
  async startContainer(pod: Pod, name: string, attempt: number, command: string[]): Promise<string> {
    const meta = (pod.config as { metadata: { name: string; namespace: string } }).metadata;
    const created = await this.call<{ containerId: string }>('CreateContainer', {
      podSandboxId: pod.sandboxId,
      sandboxConfig: pod.config,
      config: {
        metadata: { name, attempt },
        image: { image: IMAGE },
        command,
        labels: {
          'io.kubernetes.pod.namespace': meta.namespace,
          'io.kubernetes.pod.name': meta.name,
          'io.kubernetes.container.name': name,
        },
        logPath: `${name}-${attempt}.log`,
        linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
      },
    });
    await this.call('StartContainer', { containerId: created.containerId });
    return created.containerId;
  }

  async state(containerId: string): Promise<string> {
    const res = await this.call<{ status: { state: string } }>('ContainerStatus', { containerId });
    return res.status.state;
  }

  async stop(pods: Pod[]): Promise<void> {
    for (const p of pods) {
      await this.call('StopPodSandbox', { podSandboxId: p.sandboxId }).catch(() => undefined);
      await this.call('RemovePodSandbox', { podSandboxId: p.sandboxId }).catch(() => undefined);
    }
    this.client?.close();
    this.child.kill('SIGTERM');
    await new Promise((r) => (this.child.exitCode !== null ? r(null) : this.child.once('exit', r)));
    // containerd leaves its overlay and shm mounts under its root: unmount before removing.
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m.startsWith(this.dir))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The command of the stand-in ovnkube-node container (it exits 0 on SIGTERM). */
export function ovnkubeCommand(mode: string): string[] {
  return ['/usr/bin/ovnkube', '-c', IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', mode];
}
