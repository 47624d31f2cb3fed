// What kubelet does with a rendered pod spec, as far as the image test needs it: the
// CRI sandbox and container configs (namespaces, env, mounts, security context) read
// from the manifest, hostPath volumes under a test "host" root, ConfigMap volumes
// projected the way kubelet's atomic writer does (..data swapped by rename), CRI log
// lines, and a process's effective capabilities. Anything the translation does not
// know fails loudly instead of being left out: the test must run what the manifest says.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

// Manifests are untyped YAML.
export type Manifest = Record<string, any>;

/** Linux capability numbers (linux/capability.h), index = bit. */
const CAPS = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
];

/** The named set (CapEff, CapBnd, ...) of /proc/PID/status (or that file's path), as names without CAP_. */
export function capabilities(pid: number | string, set = 'CapEff'): string[] {
  const file = typeof pid === 'number' ? `/proc/${pid}/status` : pid;
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${set}:`));
  if (!line) throw new Error(`no ${set} in ${file}`);
  const bits = BigInt(`0x${line.split(/\s+/)[1]}`);
  return CAPS.filter((_, i) => (bits >> BigInt(i)) & 1n).sort();
}

/** Where kubelet's node filesystem lives for the test: hostPath P is root + P. */
export class HostRoot {
  constructor(readonly root: string) {}

  path(hostPath: string): string {
    return path.join(this.root, hostPath);
  }

  /** The host path behind a path inside the container, through the container's mounts. */
  fromContainer(container: Manifest, volumes: Manifest[], inside: string): string {
    const mount = (container.volumeMounts as Manifest[])
      .filter((m) => inside === m.mountPath || inside.startsWith(`${m.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!mount) throw new Error(`${inside} is on no volume of ${container.name}`);
    const volume = volumes.find((v) => v.name === mount.name);
    if (!volume?.hostPath) throw new Error(`${inside} is not on a hostPath volume`);
    return this.path(path.join(volume.hostPath.path, path.relative(mount.mountPath, inside)));
  }
}

/**
 * A ConfigMap volume as kubelet's atomic writer lays it out: the data in a timestamped
 * directory, `..data` pointing at it, and each key a symlink through `..data`.
 * update() swaps `..data` by a rename, which is what a watcher of the key never sees.
 */
export class ConfigMapVolume {
  private generation = 0;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  update(data: Record<string, string>): void {
    const name = `..gen_${++this.generation}`;
    mkdirSync(path.join(this.dir, name));
    for (const [k, v] of Object.entries(data)) writeFileSync(path.join(this.dir, name, k), v);
    symlinkSync(name, path.join(this.dir, '..data_tmp'));
    const current = path.join(this.dir, '..data');
    const old = existsSync(current) ? path.join(this.dir, readlinkSync(current)) : undefined;
    renameSync(path.join(this.dir, '..data_tmp'), path.join(this.dir, '..data'));
    for (const k of Object.keys(data)) {
      if (!existsSync(path.join(this.dir, k))) symlinkSync(path.join('..data', k), path.join(this.dir, k));
    }
    if (old) rmSync(old, { recursive: true, force: true });
  }
}

const NAMESPACE = { NODE: 'NODE', POD: 'POD', CONTAINER: 'CONTAINER' } as const;

/** The sandbox config kubelet makes for the pod of a DaemonSet. */
export function sandboxConfig(ds: Manifest, podName: string, logDirectory: string): Manifest {
  const spec = ds.spec.template.spec;
  const known = new Set([
    'hostNetwork',
    'hostPID',
    'dnsPolicy',
    'priorityClassName',
    'tolerations',
    'terminationGracePeriodSeconds',
    'containers',
    'volumes',
    'serviceAccountName',
    'automountServiceAccountToken',
    'securityContext',
    'nodeSelector',
    'affinity',
  ]);
  const unknown = Object.keys(spec).filter((k) => !known.has(k));
  if (unknown.length) throw new Error(`the test's kubelet does not know pod fields ${unknown.join(', ')}`);
  const namespaceOptions = {
    network: spec.hostNetwork ? NAMESPACE.NODE : NAMESPACE.POD,
    pid: spec.hostPID ? NAMESPACE.NODE : NAMESPACE.CONTAINER,
    ipc: NAMESPACE.POD,
  };
  return {
    metadata: { name: podName, uid: `uid-${podName}`, namespace: ds.metadata.namespace, attempt: 0 },
    hostname: '',
    logDirectory,
    labels: {
      ...ds.spec.template.metadata.labels,
      'io.kubernetes.pod.namespace': ds.metadata.namespace,
      'io.kubernetes.pod.name': podName,
    },
    linux: { securityContext: { namespaceOptions } },
  };
}

/**
 * The container config kubelet makes from a container of the pod spec: command, args,
 * env, mounts (hostPath under the host root; configMap volumes from configMapDirs,
 * read-only as kubelet mounts them), security context; labels as kubelet sets them.
 */
export function containerConfig(
  ds: Manifest,
  container: Manifest,
  opts: { podName: string; host: HostRoot; configMapDirs: Record<string, string>; attempt?: number },
): Manifest {
  const spec = ds.spec.template.spec;
  const sc = container.securityContext ?? {};
  const known = new Set([
    'capabilities',
    'readOnlyRootFilesystem',
    'runAsUser',
    'runAsNonRoot',
    'allowPrivilegeEscalation',
    'seccompProfile',
    'privileged',
  ]);
  const unknown = Object.keys(sc).filter((k) => !known.has(k));
  if (unknown.length) throw new Error(`the test's kubelet does not know securityContext fields ${unknown.join(', ')}`);
  if (sc.privileged) throw new Error('a privileged container is not what the test runs');

  const envs = ((container.env ?? []) as Manifest[]).map((e) => {
    if (e.value === undefined) throw new Error(`env ${e.name}: only plain values are supported by the test's kubelet`);
    return { key: e.name, value: String(e.value) };
  });
  const mounts = ((container.volumeMounts ?? []) as Manifest[]).map((m) => {
    if (m.subPath) throw new Error(`mount ${m.name}: subPath is not supported by the test's kubelet`);
    const volume = (spec.volumes as Manifest[]).find((v) => v.name === m.name);
    if (volume?.hostPath) {
      const hostPath = opts.host.path(volume.hostPath.path);
      if (volume.hostPath.type === 'DirectoryOrCreate') mkdirSync(hostPath, { recursive: true, mode: 0o755 });
      // kubelet's check of type File (stat: a symlink to a file passes, as on RHCOS's /etc/os-release).
      if (volume.hostPath.type === 'File' && !statSync(hostPath, { throwIfNoEntry: false })?.isFile())
        throw new Error(`hostPath ${volume.hostPath.path}: not a file`);
      return { containerPath: m.mountPath, hostPath, readonly: Boolean(m.readOnly) };
    }
    if (volume?.configMap) {
      const dir = opts.configMapDirs[volume.configMap.name];
      if (!dir) throw new Error(`no projection of ConfigMap ${volume.configMap.name}`);
      return { containerPath: m.mountPath, hostPath: dir, readonly: true };
    }
    throw new Error(`volume ${m.name}: only hostPath and configMap are supported by the test's kubelet`);
  });
  const seccomp = sc.seccompProfile ?? spec.securityContext?.seccompProfile;
  const attempt = opts.attempt ?? 0;
  return {
    metadata: { name: container.name, attempt },
    image: { image: container.image },
    command: container.command ?? [],
    args: container.args ?? [],
    envs,
    mounts,
    labels: {
      'io.kubernetes.pod.namespace': ds.metadata.namespace,
      'io.kubernetes.pod.name': opts.podName,
      'io.kubernetes.container.name': container.name,
    },
    logPath: `${container.name}/${attempt}.log`,
    linux: {
      securityContext: {
        capabilities: { addCapabilities: sc.capabilities?.add ?? [], dropCapabilities: sc.capabilities?.drop ?? [] },
        namespaceOptions: {
          network: spec.hostNetwork ? NAMESPACE.NODE : NAMESPACE.POD,
          pid: spec.hostPID ? NAMESPACE.NODE : NAMESPACE.CONTAINER,
          ipc: NAMESPACE.POD,
        },
        ...(sc.runAsUser !== undefined ? { runAsUser: { value: String(sc.runAsUser) } } : {}),
        readonlyRootfs: Boolean(sc.readOnlyRootFilesystem),
        noNewPrivs: sc.allowPrivilegeEscalation === false,
        ...(seccomp
          ? {
              seccomp: {
                profileType:
                  seccomp.type === 'Localhost'
                    ? 'Localhost'
                    : seccomp.type === 'Unconfined'
                      ? 'Unconfined'
                      : 'RuntimeDefault',
                localhostRef: seccomp.localhostProfile ?? '',
              },
            }
          : {}),
      },
    },
  };
}

/** A CRI log file: { stream, line } per complete line (partial P lines joined). */
export function criLogLines(file: string): Array<{ stream: string; line: string }> {
  const out: Array<{ stream: string; line: string }> = [];
  let partial = '';
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\S+ (stdout|stderr) ([PF]) (.*)$/.exec(raw);
    if (!m) continue;
    partial += m[3];
    if (m[2] === 'F') {
      out.push({ stream: m[1]!, line: partial });
      partial = '';
    }
  }
  return out;
}
