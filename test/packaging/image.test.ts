// The image, built by `npm run image`, run in a real containerd the way kubelet runs the
// rendered DaemonSet (`kubectl kustomize` of an overlay that sets the image, the service
// CIDR and a short settle window, as an operator's would). Everything else (command,
// args, env, mounts, capabilities, read-only root, user, namespaces, probes) is read from
// the rendered manifest by test/helpers/kubelet.ts; the test restates none of it.
// The node is the seed's, in a network namespace that is the pod's host network.
import { writeOsRelease } from '../helpers/os-release.js';
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import type { StatusReport } from '../../src/status/report.js';
import { curl } from '../helpers/agent.js';
import { Containerd, containerdSkipReason, ovnkubeCommand, type Pod } from '../helpers/containerd.js';
import {
  capabilities,
  ConfigMapVolume,
  containerConfig,
  criLogLines,
  HostRoot,
  sandboxConfig,
  type Manifest,
} from '../helpers/kubelet.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { echoTagged, LEFTOVER, staleCheckout } from '../helpers/stale-checkout.js';
import { within } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LOCAL_V4 = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const SHARED_V4 = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
// The agent's default socket (docs/install.md, "Settings": `--socket`); the manifest mounts its directory.
const SOCKET = '/run/ovn-gwmode-agent/agent.sock';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Why the image cannot be built here, or undefined. GWMODE_IMAGE_ARCHIVE reuses a built archive. */
function imageSkipReason(): string | undefined {
  if (process.env.GWMODE_IMAGE_ARCHIVE) return undefined;
  for (const tool of ['buildah', 'dpkg-deb', 'apt-get', 'strip']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      return `${tool} is not installed (apt-get install buildah binutils; .ci/run does)`;
  }
  return undefined;
}

/**
 * `npm run image` in a copy of the checkout whose dist/ is stale (its main.js exits 97): the image
 * holds what src/ compiles to, not the stale dist/ (checked in its layers here, and by every step
 * below, which runs it).
 */
async function buildImage(out: string): Promise<string> {
  const checkout = staleCheckout(ROOT, path.join(path.dirname(out), 'checkout'));
  const child = spawn('npm', ['run', 'image', '--', out], { cwd: checkout, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const code = await within(new Promise<number | null>((r) => child.on('exit', r)), 600_000, 'npm run image').catch(
    (err: Error) => {
      child.kill('SIGTERM');
      throw err;
    },
  );
  assert.equal(code, 0, `npm run image failed:\n${log.slice(-4000)}`);
  echoTagged(log, 'image');
  const main = 'opt/ovn-gwmode-agent/dist/src/cli/main.js';
  const layers = imageLayers(out);
  const shipped = layers.flatMap((l) => l.files);
  assert.equal(shipped.filter((f) => f.endsWith(path.basename(LEFTOVER))).length, 0, `no ${LEFTOVER} in the image`);
  const withMain = layers.filter((l) => l.files.includes(main));
  assert.equal(withMain.length, 1, `one layer holds ${main}`);
  const text = spawnSync('sh', ['-c', 'tar -xOf "$1" "$2" | tar -xzO "$3"', 'sh', out, withMain[0]!.blob, main], {
    encoding: 'utf8',
  }).stdout;
  assert.equal(text, readFileSync(path.join(ROOT, 'dist/src/cli/main.js'), 'utf8'), `${main} is compiled from src/`);
  return out;
}

/** The image's layers in an OCI archive (gzipped tars): each blob's path and the files it lists. */
function imageLayers(archive: string): Array<{ blob: string; files: string[] }> {
  const read = (file: string) => spawnSync('tar', ['-xOf', archive, file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  const blob = (digest: string) => `blobs/sha256/${digest.replace(/^sha256:/, '')}`;
  const index = JSON.parse(read('index.json').stdout) as { manifests: Array<{ digest: string }> };
  const manifest = JSON.parse(read(blob(index.manifests[0]!.digest)).stdout) as {
    layers: Array<{ digest: string; mediaType: string }>;
  };
  return manifest.layers.map((l) => {
    assert.match(l.mediaType, /tar\+gzip$/);
    const listed = spawnSync('sh', ['-c', 'tar -xOf "$1" "$2" | tar -tz', 'sh', archive, blob(l.digest)], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    assert.equal(listed.status, 0, listed.stderr);
    return { blob: blob(l.digest), files: listed.stdout.split('\n').map((f) => f.replace(/^\.\//, '')) };
  });
}

function render(dir: string): Manifest[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Manifest);
}

/** Polls until fn returns a value; the bound is a safety net, not a speed assertion. */
async function until<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  what: string,
  dump: () => string,
  ms = 90_000,
): Promise<T> {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    const v = await fn();
    if (v !== undefined) return v;
    await pause(100);
  }
  throw new Error(`never saw ${what}\n${dump()}`);
}

test(
  'the image runs as the rendered DaemonSet says: converges the seed node, passes its probes, answers on the host socket, logs JSON, follows a ConfigMap swap and stops on SIGTERM',
  { timeout: 15 * 60_000 },
  async (t) => {
    if (skipWithoutKernel(t)) return;
    const skip = containerdSkipReason ?? imageSkipReason();
    if (skip) {
      process.stderr.write(`SKIPPED (${skip}): ${t.name}\n`);
      t.skip(skip);
      return;
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-image-'));
    const ns = seedNode({ gw0: true });
    const pods: Pod[] = [];
    let cd: Containerd | undefined;
    try {
      const archive = process.env.GWMODE_IMAGE_ARCHIVE ?? (await buildImage(path.join(dir, 'image.oci.tar')));
      const index = JSON.parse(
        spawnSync('tar', ['-xOf', archive, 'index.json'], { encoding: 'utf8' }).stdout,
      ) as Manifest;
      const imageName = index.manifests[0].annotations['org.opencontainers.image.ref.name'] as string;

      // The operator's overlay: this image, the seed node's service CIDR, a short settle, and
      // (the runtime here being containerd) the containerd Component, as docs/install.md says.
      const base = render(path.join(ROOT, 'packaging/kubernetes'));
      const baseDs = base.find((d) => d.kind === 'DaemonSet')!;
      const baseContainer = baseDs.spec.template.spec.containers[0];
      const overlay = path.join(dir, 'overlay');
      mkdirSync(overlay);
      const [newName, newTag] = [
        imageName.slice(0, imageName.lastIndexOf(':')),
        imageName.slice(imageName.lastIndexOf(':') + 1),
      ];
      writeFileSync(
        path.join(overlay, 'kustomization.yaml'),
        stringify({
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          resources: [path.relative(overlay, path.join(ROOT, 'packaging/kubernetes'))],
          components: [path.relative(overlay, path.join(ROOT, 'packaging/kubernetes/containerd'))],
          images: [{ name: baseContainer.image.replace(/:[^:/]+$/, ''), newName, newTag }],
          patches: [
            {
              target: { kind: 'DaemonSet', name: baseDs.metadata.name },
              patch: stringify({
                apiVersion: 'apps/v1',
                kind: 'DaemonSet',
                metadata: { name: baseDs.metadata.name },
                spec: {
                  template: {
                    spec: {
                      containers: [
                        {
                          name: baseContainer.name,
                          env: [
                            { name: 'OVN_GWMODE_SERVICE_CIDR', value: '10.96.0.0/16' },
                            { name: 'OVN_GWMODE_SETTLE', value: '1' },
                          ],
                        },
                      ],
                    },
                  },
                },
              }),
            },
          ],
        }),
      );
      const docs = render(overlay);
      const ds = docs.find((d) => d.kind === 'DaemonSet')!;
      const spec = ds.spec.template.spec;
      const agentSpec = spec.containers[0] as Manifest;
      assert.equal(agentSpec.image, imageName, 'the overlay points the DaemonSet at the built image');

      // The node's filesystem under dir/host; the CRI socket where the manifest's env and
      // mounts expect it; the mode ConfigMap projected as kubelet does.
      const host = new HostRoot(path.join(dir, 'host'));
      const env = Object.fromEntries((agentSpec.env as Manifest[]).map((e) => [e.name, e.value as string]));
      const criSocket = host.fromContainer(agentSpec, spec.volumes, env.OVN_GWMODE_CRI_ENDPOINT);
      // An RHCOS 4.9 node, its /etc/os-release a symlink to ../usr/lib/os-release as on RHCOS: the
      // runtime's bind mount follows it on the host.
      mkdirSync(host.path('/usr/lib'), { recursive: true });
      mkdirSync(host.path('/etc'), { recursive: true });
      writeOsRelease(host.path('/usr/lib'), '4.9');
      symlinkSync('../usr/lib/os-release', host.path('/etc/os-release'));
      assert.equal(criSocket, host.path('/run/containerd/containerd.sock'), "containerd's own socket on the host");
      cd = await Containerd.start(ns, path.join(dir, 'containerd'), { socket: criSocket });
      const imported = spawnSync('ctr', ['-a', cd.socket, '-n', 'k8s.io', 'images', 'import', archive], {
        encoding: 'utf8',
      });
      assert.equal(imported.status, 0, imported.stderr);

      const configMaps: Record<string, string> = {};
      const modeVolumes: ConfigMapVolume[] = [];
      for (const cm of docs.filter((d) => d.kind === 'ConfigMap')) {
        const volume = new ConfigMapVolume(path.join(dir, 'configmaps', cm.metadata.name));
        volume.update(cm.data);
        configMaps[cm.metadata.name] = volume.dir;
        modeVolumes.push(volume);
      }
      const modeConfigMap = docs.find((d) => d.kind === 'ConfigMap')!;
      const modeVolume = modeVolumes[0]!;

      // ovnkube-node in shared mode, as the rendered ConfigMap says the cluster runs.
      const ovnPod = await cd.runPod('openshift-ovn-kubernetes', 'ovnkube-node-im4ge');
      pods.push(ovnPod);
      const ovn0 = await cd.startContainer(ovnPod, 'ovnkube-node', 0, ovnkubeCommand(modeConfigMap.data.mode));

      // The agent's pod, as kubelet makes it from the rendered DaemonSet.
      const podName = `${ds.metadata.name}-im4ge`;
      const logDirectory = path.join(dir, 'pods', podName);
      mkdirSync(path.join(logDirectory, agentSpec.name), { recursive: true });
      const sandbox = sandboxConfig(ds, podName, logDirectory);
      const { podSandboxId } = await cd.call<{ podSandboxId: string }>('RunPodSandbox', { config: sandbox });
      pods.push({ sandboxId: podSandboxId, config: sandbox });
      const config = containerConfig(ds, agentSpec, { podName, host, configMapDirs: configMaps });
      const { containerId } = await cd.call<{ containerId: string }>('CreateContainer', {
        podSandboxId,
        sandboxConfig: sandbox,
        config,
      });
      await cd.call('StartContainer', { containerId });

      const socket = host.fromContainer(agentSpec, spec.volumes, SOCKET);
      const logFile = path.join(logDirectory, config.logPath);
      const dump = () =>
        `container log:\n${existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-4000) : '(none)'}\ncontainerd:\n${cd!.log.slice(-2000)}`;
      const statusWhen = (pred: (s: StatusReport) => boolean, what: string) =>
        until(
          () => {
            const r = curl(socket, '/status');
            return r.code === 200 && pred(r.body as StatusReport) ? (r.body as StatusReport) : undefined;
          },
          what,
          dump,
        );

      // Converges the seed node in the ConfigMap's mode; the host path answers curl.
      let s = await statusWhen((s) => s.phase === 'Converged', `Converged in ${modeConfigMap.data.mode} mode`);
      assert.equal(s.desiredMode, modeConfigMap.data.mode);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);

      // The probes, exactly as rendered, exec'd in the container.
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        const p = agentSpec[probe] as { exec: { command: string[] }; timeoutSeconds: number };
        const r: { exitCode: number; stdout: Buffer; stderr: Buffer } = await cd.call<{
          exitCode: number;
          stdout: Buffer;
          stderr: Buffer;
        }>('ExecSync', { containerId, cmd: p.exec.command, timeout: p.timeoutSeconds });
        assert.equal(r.exitCode, 0, `${probe} ${p.exec.command.join(' ')}: ${r.stdout}${r.stderr}`);
      }
      // No shell in the image.
      const shell = await cd
        .call<{ exitCode: number }>('ExecSync', { containerId, cmd: ['/bin/sh', '-c', 'true'], timeout: 10 })
        .catch((err: Error) => err);
      assert.ok(shell instanceof Error || shell.exitCode !== 0, 'the image has no /bin/sh');

      // The agent runs with exactly the capabilities the manifest adds, as the manifest's user.
      const verbose = await cd.call<{ info: Record<string, string> }>('ContainerStatus', {
        containerId,
        verbose: true,
      });
      const pid = (JSON.parse(verbose.info.info!) as { pid: number }).pid;
      const sc = agentSpec.securityContext;
      assert.deepEqual(capabilities(pid), [...sc.capabilities.add].sort());
      const procStatus = readFileSync(`/proc/${pid}/status`, 'utf8');
      assert.equal(procStatus.match(/^Uid:\s+(\d+)/m)![1], String(sc.runAsUser));
      assert.equal(procStatus.match(/^NoNewPrivs:\s+(\d)/m)![1], sc.allowPrivilegeEscalation === false ? '1' : '0');
      if (spec.securityContext?.seccompProfile?.type === 'RuntimeDefault')
        assert.match(procStatus, /^Seccomp:\s+2$/m, "the runtime's seccomp filter");
      assert.equal(
        readlinkSync(`/proc/${pid}/exe`),
        '/usr/local/bin/node',
        'the entrypoint is node: no shell or wrapper in between',
      );
      // The daemon's memory settings (test/packaging/launch-flags.test.ts checks each launcher's text).
      assert.deepEqual(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1, 3), [
        '--max-semi-space-size=1',
        '--v8-pool-size=1',
      ]);
      // hostNetwork: the node's namespace.
      assert.equal(readlinkSync(`/proc/${pid}/ns/net`), `net:[${statSync(`/run/netns/${ns.name}`).ino}]`);

      // A ConfigMap update (kubelet swaps ..data) to local; the operator rolls ovnkube-node
      // out in local mode (the test plays kubelet); the agent moves the route and restarts
      // ovnkube-node once through CRI; the test plays kubelet again.
      modeVolume.update({ ...modeConfigMap.data, mode: 'local' });
      await statusWhen((s) => s.desiredMode === 'local', 'the new desired mode');
      await cd.call('StopContainer', { containerId: ovn0, timeout: 5 });
      const ovn1 = await cd.startContainer(ovnPod, 'ovnkube-node', 1, ovnkubeCommand('local'));
      await until(
        async () => ((await cd!.state(ovn1)) === 'CONTAINER_EXITED' ? true : undefined),
        'the agent stopping ovnkube-node through CRI',
        dump,
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      await cd.startContainer(ovnPod, 'ovnkube-node', 2, ovnkubeCommand('local'));
      s = await statusWhen((s) => s.phase === 'Converged' && s.desiredMode === 'local', 'Converged in local mode');
      assert.equal(s.restart?.count, 1);
      assert.equal(s.restart?.strategy, 'cri');

      // Logs: JSON lines on the container's stdout, the replace among them.
      const lines = criLogLines(logFile);
      const stdout = lines.filter((l) => l.stream === 'stdout');
      assert.ok(stdout.length > 0, 'logs on stdout');
      const parsed = stdout.map((l) => JSON.parse(l.line) as Record<string, unknown>);
      assert.ok(
        parsed.some((l) => String(l.msg).startsWith('replaced route')),
        'the replace is logged',
      );
      assert.deepEqual(
        lines.filter((l) => l.stream === 'stderr').map((l) => l.line),
        [],
      );

      // SIGTERM (StopContainer with the pod's grace period): exit 0, the socket removed.
      await cd.call('StopContainer', { containerId, timeout: spec.terminationGracePeriodSeconds });
      const stopped = await cd.call<{ status: { state: string; exitCode: number } }>('ContainerStatus', {
        containerId,
      });
      assert.equal(stopped.status.state, 'CONTAINER_EXITED');
      assert.equal(stopped.status.exitCode, 0, dump());
      assert.equal(existsSync(socket), false, 'the socket is removed on SIGTERM');
    } finally {
      await cd?.stop(pods);
      ns.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
