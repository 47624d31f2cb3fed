// The operator's guide (docs/operate.md), run as written: its kustomize and ConfigMap commands with
// the real kubectl (offline), its cluster commands against a stand-in kubectl that execs into
// real agents, and every step of the walk-through on a real agent and a seed node.
import { strict as assert } from 'node:assert';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { parseModeContent } from '../src/mode/parse.js';
import { IDLE } from '../src/demo/fake-ovnkube.js';
import { writeOsRelease } from './helpers/os-release.js';
import { AgentProcess, CLI, FakeOvnkube, Scratch, waitForStatus } from './helpers/agent.js';
import { ConfigMapVolume, type Manifest } from './helpers/kubelet.js';
import { seedNode, skipWithoutKernel, type Netns } from './helpers/netns.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GUIDE = readFileSync(path.join(ROOT, 'docs', 'operate.md'), 'utf8');
const BLOCKS = [...GUIDE.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));

/** The one command block holding `needle`. */
function block(needle: string): string {
  const found = BLOCKS.filter((b) => b.text.includes(needle));
  assert.equal(found.length, 1, `exactly one block of the guide holds ${needle}`);
  return found[0]!.text;
}

/** The one line of the guide's blocks that holds every needle. */
function line(...needles: string[]): string {
  const found = BLOCKS.flatMap((b) => b.text.split('\n')).filter((l) => needles.every((n) => l.includes(n)));
  assert.equal(found.length, 1, `exactly one line of the guide holds ${needles.join(' ')}`);
  return found[0]!;
}

/** The words of a shell line, with single quotes removed (the guide quotes only JSON). */
const words = (l: string) => [...l.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);

function kubectl(t: TestContext, args: string[], input?: string): string | undefined {
  const r = spawnSync('kubectl', args, { encoding: 'utf8', input });
  if (r.error) {
    process.stderr.write(`SKIPPED (kubectl not installed): ${t.name}\n`);
    t.skip('kubectl not installed');
    return undefined;
  }
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const render = (t: TestContext, dir: string): Manifest[] | undefined => {
  const out = kubectl(t, ['kustomize', dir]);
  return out === undefined ? undefined : parseAllDocuments(out).map((d) => d.toJS() as Manifest);
};

/** The guide's `kubectl -n NS <verb> <kind> NAME ...` lines: the namespace and name they act on. */
function target(l: string): { namespace: string; name: string } {
  const w = words(l);
  const ns = w[w.indexOf('-n') + 1]!;
  const verb = w.findIndex((x) => ['patch', 'create', 'set', 'rollout', 'exec'].includes(x));
  const name = w[verb + 2]!.replace(/^\w+\//, '');
  return { namespace: ns, name };
}

/** Step 1's overlay as written. */
const OVERLAY = () => block('my-agent/kustomization.yaml');
/** The entries step 3 deletes: each `- name:` line after step 1's dry-run comment, with its `value:` line. */
const DRY_RUN_ENTRIES = () =>
  [
    ...OVERLAY()
      .split(/^.*Step 2's dry run.*\n/m)[1]!
      .matchAll(/^\s*- name: OVN_GWMODE_\w+\n\s*value: .*\n/gm),
  ].map((m) => m[0]);
/** Step 3: the dry-run lines deleted. */
const ARMED = () => {
  const armed = DRY_RUN_ENTRIES()
    .reduce((text, entry) => text.replace(entry, ''), OVERLAY())
    .replace(/^.*Step 2's dry run.*\n/m, '');
  assert.equal(OVERLAY().split('\n').length - armed.split('\n').length, 3, 'the comment and the two lines');
  return armed;
};
/** Step 1's overlay with any part of step 3 done: every subset of its dry-run entries deleted. */
const PARTIALLY_ARMED = () => {
  const entries = DRY_RUN_ENTRIES();
  return Array.from({ length: 2 ** entries.length }, (_, mask) =>
    entries.reduce((text, entry, i) => (mask & (1 << i) ? text.replace(entry, '') : text), OVERLAY()),
  );
};

/** Renders a my-agent/kustomization.yaml in a directory beside a checkout called ovn-gwmode-agent, as step 1 lays it out. */
function renderOverlay(t: TestContext, kustomization: string): Manifest[] | undefined {
  const base = mkdtempSync(path.join(tmpdir(), 'gwmode-guide-'));
  try {
    symlinkSync(ROOT, path.join(base, 'ovn-gwmode-agent'));
    mkdirSync(path.join(base, 'my-agent'));
    writeFileSync(path.join(base, 'my-agent', 'kustomization.yaml'), kustomization);
    return render(t, path.join(base, 'my-agent'));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/**
 * What a rendering gives the agent: its container's environment. Its mode is the cluster
 * network operator's own ConfigMap, mounted (optional) in the operator's namespace, and the
 * rendering holds no ConfigMap nor Namespace of its own: the test's kubelet fills the volume
 * with what the operator's ConfigMap holds at each step.
 */
function deployed(docs: Manifest[]): { env: NodeJS.ProcessEnv } {
  const ds = docs.find((d) => d.kind === 'DaemonSet')!;
  assert.equal(ds.metadata.namespace, 'openshift-network-operator');
  assert.deepEqual(ds.spec.template.spec.volumes.find((v: Manifest) => v.configMap).configMap, {
    name: 'gateway-mode-config',
    optional: true,
  });
  assert.deepEqual(
    docs.filter((d) => d.kind === 'ConfigMap' || d.kind === 'Namespace'),
    [],
    "nothing of the operator's is rendered",
  );
  return { env: Object.fromEntries(ds.spec.template.spec.containers[0].env.map((e: Manifest) => [e.name, e.value])) };
}

/** The data of the operator's ConfigMap as the guide's command line makes it (kubectl, offline). */
function operatorConfigMap(t: TestContext, l: string): Record<string, string> | undefined {
  const made = kubectl(t, [...words(l).slice(1), '--dry-run=client', '-o', 'yaml']);
  return made === undefined ? undefined : (parseYaml(made) as Manifest).data;
}

test("the guide's overlay renders the OpenShift DaemonSet with your image, on the operator's ConfigMap, in dry run, then armed; its commands name what it renders", (t) => {
  const docs = renderOverlay(t, OVERLAY());
  if (!docs) return;
  const ds = docs.find((d) => d.kind === 'DaemonSet')!;
  const kustomization = parseYaml(OVERLAY()) as Manifest;
  const image = kustomization.images[0];
  assert.equal(ds.spec.template.spec.containers[0].image, `${image.newName}:${image.newTag}`);
  const dry = deployed(docs);
  assert.equal(dry.env.OVN_GWMODE_SERVICE_CIDR, '172.30.0.0/16', 'OpenShift service network');
  assert.equal(dry.env.OVN_GWMODE_MTU, '1400');
  // No --layout legacy set blind: the release comes from the host's os-release, which the DaemonSet mounts.
  assert.deepEqual(
    [dry.env.OVN_GWMODE_DRY_RUN, dry.env.OVN_GWMODE_OVNKUBE_MODE_CHECK, dry.env.OVN_GWMODE_LAYOUT],
    ['true', undefined, undefined],
  );
  const osRelease = ds.spec.template.spec.containers[0].volumeMounts.find(
    (m: Manifest) => m.mountPath === dry.env.OVN_GWMODE_OS_RELEASE,
  );
  assert.equal(osRelease?.readOnly, true, 'OVN_GWMODE_OS_RELEASE names a read-only mount');
  assert.deepEqual(ds.spec.template.spec.volumes.find((v: Manifest) => v.name === osRelease.name).hostPath, {
    path: '/etc/os-release',
    type: 'File',
  });
  const armed = deployed(renderOverlay(t, ARMED())!);
  assert.deepEqual(
    [
      armed.env.OVN_GWMODE_DRY_RUN,
      armed.env.OVN_GWMODE_OVNKUBE_MODE_CHECK,
      armed.env.OVN_GWMODE_LAYOUT,
      armed.env.OVN_GWMODE_MTU,
    ],
    [undefined, undefined, undefined, '1400'],
  );

  // The DaemonSet the guide's commands name is the rendered one, and so are the one-liner's pods.
  const ns = ds.metadata.namespace;
  assert.deepEqual(target(line('rollout status ds/ovn-gwmode-agent')), { namespace: ns, name: ds.metadata.name });
  const selector = Object.entries(ds.spec.selector.matchLabels as Record<string, string>)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  assert.ok(block('while read -r node pod').includes(`-n ${ns} get pods -l ${selector} `));

  // Removing the agent leaves exactly the node paths the guide says, besides the CRI socket.
  const hostPaths = ds.spec.template.spec.volumes
    .filter((v: Manifest) => v.hostPath)
    .map((v: Manifest) => v.hostPath.path as string);
  const rm = /rm -rf ([^`]+)`/.exec(GUIDE.replace(/\n/g, ' '))![1]!.trim().split(/\s+/);
  assert.deepEqual(hostPaths.filter((p: string) => !/crio|containerd|os-release/.test(p)).sort(), rm.sort());
  assert.ok(block('kubectl delete -k').includes('kubectl delete -k my-agent'));
});

test("the guide's commands for the operator's ConfigMap make gateway-mode-config in openshift-network-operator, key mode, local then shared", (t) => {
  // The operator's ConfigMap, created as the guide says (offline), read as a manifest mode file.
  const create = words(line('create configmap gateway-mode-config'));
  assert.deepEqual(target(line('create configmap gateway-mode-config')), {
    namespace: 'openshift-network-operator',
    name: 'gateway-mode-config',
  });
  const created = kubectl(t, [...create.slice(1), '--dry-run=client', '-o', 'yaml']);
  if (created === undefined) return;
  assert.deepEqual(parseModeContent(created), { mode: 'local' });
  // Back to shared: the guide's patch of it, applied offline.
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'gwmode-guide-')), 'cm.yaml');
  writeFileSync(file, created);
  const patch = (l: string, f: string) => {
    const w = words(l);
    return kubectl(t, ['patch', '--local', '-f', f, '--type', 'merge', '-p', w[w.indexOf('-p') + 1]!, '-o', 'yaml'])!;
  };
  assert.deepEqual(parseModeContent(patch(line('patch configmap gateway-mode-config'), file)), { mode: 'shared' });

  // The guide's warning: --from-file keeps the file's final line break, which the operator (and so the agent) reads as shared.
  const fromFile = path.join(path.dirname(file), 'mode');
  writeFileSync(fromFile, 'local\n');
  const wrong = kubectl(t, [
    ...create.slice(1).filter((w) => !w.startsWith('--from-literal')),
    `--from-file=${fromFile}`,
    '--dry-run=client',
    '-o',
    'yaml',
  ])!;
  assert.deepEqual(parseModeContent(wrong), {
    mode: 'shared',
    detail: '"local\\n" is not exactly "local": shared, as the cluster network operator reads it',
  });
  assert.ok(GUIDE.includes('with `--from-literal`, not `--from-file`'));

  rmSync(path.dirname(file), { recursive: true, force: true });
});

/**
 * A stand-in kubectl for the guide's cluster commands: `get pods` lists the test's pods,
 * `exec POD -- ovn-gwmode-agent ...` runs the real CLI against that pod's agent socket.
 * It records how it was called.
 */
function standInKubectl(
  dir: string,
  pods: Array<{ node: string; pod: string; socket: string }>,
): { env: NodeJS.ProcessEnv; calls: () => string[] } {
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const log = path.join(dir, 'kubectl-calls');
  writeFileSync(log, '');
  const sockets = pods.map((p) => `  ${p.pod}) socket=${JSON.stringify(p.socket)} ;;`).join('\n');
  const list = pods.map((p) => `'${p.node} ${p.pod}'`).join(' ');
  writeFileSync(
    path.join(bin, 'kubectl'),
    `#!/bin/bash
echo "$*" >> ${JSON.stringify(log)}
args=("$@")
for ((i = 0; i < \${#args[@]}; i++)); do
  case "\${args[$i]}" in
    get) printf '%s\\n' ${list}; exit 0 ;;
    exec) pod="\${args[$((i + 1))]}" ;;
    --) cmd=("\${args[@]:$((i + 1))}"); break ;;
  esac
done
case "$pod" in
${sockets}
  *) echo "pods \\"$pod\\" not found" >&2; exit 1 ;;
esac
[ "\${cmd[0]}" = ovn-gwmode-agent ] || { echo "no \${cmd[0]} in the image" >&2; exit 127; }
OVN_GWMODE_SOCKET="$socket" exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "\${cmd[@]:1}"
`,
  );
  chmodSync(path.join(bin, 'kubectl'), 0o755);
  return {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    calls: () => readFileSync(log, 'utf8').trim().split('\n'),
  };
}

/** The node of the guide's examples: OpenShift's service network, br-ex 10.0.0.2/24, ovn-k8s-mp0 10.128.2.2/23. */
function guideNode(opts: { gw0: boolean }): Netns {
  const ns = seedNode(opts);
  try {
    ns.ip('route del 10.96.0.0/16');
    ns.ip('addr flush dev ovn-k8s-mp0');
    ns.ip('addr add 10.128.2.2/23 dev ovn-k8s-mp0');
    ns.ip('route flush dev br-ex');
    ns.ip('addr flush dev br-ex');
    ns.ip('addr add 10.0.0.2/24 dev br-ex');
    ns.ip('route add default via 10.0.0.1 dev br-ex');
    ns.ip('route add 172.30.0.0/16 via 10.0.0.1 dev br-ex mtu 1400');
  } catch (err) {
    ns.destroy();
    throw err;
  }
  return ns;
}

const SVC = '172.30.0.0/16';
const SHARED_ROUTE = '172.30.0.0/16 via 10.0.0.1 dev br-ex mtu 1400';
const LOCAL_ROUTE = '172.30.0.0/16 via 10.128.2.1 dev ovn-k8s-mp0';

test("the operator's guide on a shared-mode 4.8/4.9 node: dry-run plan, armed and waiting, the switch, back to shared, removal", async (t) => {
  if (skipWithoutKernel(t)) return;
  const dry = renderOverlay(t, OVERLAY());
  if (!dry) return;
  // A shared-mode 4.8/4.9 node: the stale-to-be route via br-ex, no ovn-k8s-gw0 yet.
  const ns = guideNode({ gw0: false });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const volume = new ConfigMapVolume(path.join(scratch.dir, 'volume'));
  const kube = standInKubectl(scratch.dir, [
    { node: 'worker-a', pod: 'ovn-gwmode-agent-a1b2c', socket: scratch.socket },
    { node: 'worker-b', pod: 'ovn-gwmode-agent-d3e4f', socket: path.join(scratch.dir, 'gone.sock') },
  ]);
  const oneLiner = () => {
    const r = spawnSync('bash', ['-c', block('while read -r node pod')], { encoding: 'utf8', env: kube.env });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split('\n');
  };
  /** The agent as a rendering deploys it: its environment; the volume holds the operator's ConfigMap as it is (none yet). */
  const deploy = (docs: Manifest[]) => {
    const { env } = deployed(docs);
    // The volume, socket and state directory are the test's; a short restart interval, since
    // the walk-through restarts ovnkube-node twice within seconds.
    return new AgentProcess(ns, scratch, ['--mode-file', volume.dir, '--restart-min-interval', '1s'], env);
  };
  const flat = GUIDE.replace(/\n/g, ' ');
  let agent: AgentProcess | undefined;
  try {
    ovnkube.start('shared', { respawn: true });
    // No gateway-mode-config yet: an optional volume of a missing ConfigMap is empty.
    volume.update({});

    // Step 2: the overlay as written, in dry run; the operator's (missing) ConfigMap says shared; the host an RHCOS 4.9 node.
    agent = deploy(dry);
    await waitForStatus(
      agent,
      (s) => s.dryRun && s.lastReconcile !== null && s.desiredMode === 'shared',
      'the dry-run pass',
    );
    const [a, b] = oneLiner();
    assert.equal(a, `worker-a: ${/Each node ready to move says `([^`]+)`/.exec(flat)![1]!}`);
    assert.match(
      b!,
      /^worker-b: ovn-gwmode-agent: cannot reach the agent on .*gone\.sock \(ENOENT\): is the agent running\?$/,
    );
    const human = spawnSync(
      'bash',
      ['-c', 'kubectl -n openshift-network-operator exec ovn-gwmode-agent-a1b2c -- ovn-gwmode-agent status'],
      { encoding: 'utf8', env: kube.env },
    );
    const example = /says why the mode is shared: `([^`]+)`/
      .exec(flat)![1]!
      .replaceAll('/etc/ovn-gwmode-agent', volume.dir);
    assert.ok(
      human.stdout.replace(/\n/g, ' ').includes(example),
      `the guide's example "${example}" in:\n${human.stdout}`,
    );
    assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);
    assert.equal(ovnkube.starts, 1, 'a dry run restarts nothing');
    assert.ok(kube.calls().every((c) => c.startsWith('-n openshift-network-operator ')));
    await agent.stop();

    // Step 3: the dry-run lines deleted, applied again (the rollout restarts the agent): still shared, nothing to do.
    agent = deploy(renderOverlay(t, ARMED())!);
    await waitForStatus(agent, (s) => s.lastReconcile !== null && s.desiredMode === 'shared' && !s.dryRun, 'a pass');
    assert.match(oneLiner()[0]!, /^worker-a: Converged desired=shared /);
    assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);

    // Step 4: the operator's ConfigMap, as the guide creates it; kubelet fills the agent's volume with it.
    const local = operatorConfigMap(t, line('create configmap gateway-mode-config'))!;
    volume.update(local);
    await waitForStatus(
      agent,
      (s) => s.desiredMode === 'local' && s.reasonCodes.includes('OvnkubeOtherMode'),
      'local, waiting for the rollout',
    );
    assert.match(
      oneLiner()[0]!,
      /^worker-a: Waiting desired=local ovnkube=shared .*: ovnkube-node \(pid \d+\) runs --gateway-mode shared, desired local: waiting for the cluster network operator to roll ovnkube-node out$/,
    );
    assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);

    // Then the operator rolls ovnkube-node out in local mode, which makes ovn-k8s-gw0.
    ns.ip('link add ovn-k8s-gw0 type veth peer name gw0-peer');
    ns.ip('link set ovn-k8s-gw0 up');
    ovnkube.start('local', { respawn: true });
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged in local mode');
    assert.equal(
      oneLiner()[0],
      'worker-a: Converged desired=local ovnkube=local layout=legacy release=4.8-4.9 routes=1/1 in sync: service routes match desired mode local',
    );
    assert.deepEqual(ns.routes(SVC), [LOCAL_ROUTE]);
    assert.ok(GUIDE.replace(/\n/g, ' ').includes(`becomes \`${LOCAL_ROUTE}\``));
    assert.equal(ovnkube.starts, 3, "the operator's rollout, then the agent's one restart");

    // Back to shared: the guide's patch of the operator's ConfigMap (kubelet swaps the volume
    // under the running agent), which waits for the rollout and writes nothing.
    const w = words(line('patch configmap gateway-mode-config'));
    volume.update({ ...local, ...(JSON.parse(w[w.indexOf('-p') + 1]!) as { data: Record<string, string> }).data });
    await waitForStatus(
      agent,
      (s) => s.desiredMode === 'shared' && s.reasonCodes[0] === 'OvnkubeOtherMode',
      'waiting for the rollout',
    );
    assert.deepEqual(ns.routes(SVC), [LOCAL_ROUTE]);
    // The operator's rollout: the shared-mode ovnkube-node drops its mp0 route and adds the br-ex one.
    ovnkube.start('shared', {
      respawn: true,
      body: `ip route del ${SVC} dev ovn-k8s-mp0; ip route add ${SHARED_ROUTE}; ${IDLE}`,
    });
    await waitForStatus(
      agent,
      (s) => s.phase === 'Converged' && s.desiredMode === 'shared' && s.reasonCodes[0] === 'InSync',
      'Converged in shared mode',
    );
    assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);
    assert.ok(GUIDE.replace(/\n/g, ' ').includes(`adds the br-ex route itself (\`${SHARED_ROUTE}\`)`));
    assert.equal(ovnkube.starts, 4, 'the rollout alone: the agent restarts nothing for shared');

    // Removing the agent changes no route.
    await agent.stop();
    agent = undefined;
    assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('the guide followed in part, or with OVN_GWMODE_OVNKUBE_MODE_CHECK=off added: while ovnkube-node still runs shared, the switch to local changes nothing', async (t) => {
  if (skipWithoutKernel(t)) return;
  const local = operatorConfigMap(t, line('create configmap gateway-mode-config'));
  if (local === undefined) return;
  const envs = new Map<string, NodeJS.ProcessEnv>();
  for (const overlay of PARTIALLY_ARMED()) {
    const docs = renderOverlay(t, overlay);
    if (docs === undefined) return;
    const { env } = deployed(docs);
    for (const e of [env, { ...env, OVN_GWMODE_OVNKUBE_MODE_CHECK: 'off' }]) envs.set(JSON.stringify(e), e);
  }
  // Step 4 done, the operator's rollout not yet here: ovnkube-node runs shared on a 4.8/4.9 node.
  const ns = guideNode({ gw0: false });
  const first = new Scratch();
  const ovnkube = new FakeOvnkube(ns, first.dir);
  const volume = new ConfigMapVolume(path.join(first.dir, 'volume'));
  let agent: AgentProcess | undefined;
  const scratches = [first];
  const wrong: string[] = [];
  try {
    ovnkube.start('shared', { respawn: true });
    volume.update(local);
    for (const env of envs.values()) {
      // Each rendering on the node as step 4 finds it, whatever an earlier one did.
      ns.ip(`route replace ${SHARED_ROUTE}`);
      const starts = ovnkube.starts;
      const scratch = new Scratch();
      scratches.push(scratch);
      agent = new AgentProcess(ns, scratch, ['--mode-file', volume.dir], env);
      const s = await waitForStatus(agent, (s) => s.lastReconcile !== null && s.desiredMode === 'local', 'a pass');
      const seen = [s.reasonCodes[0], ns.routes(SVC), ovnkube.starts - starts];
      if (!isDeepStrictEqual(seen, ['OvnkubeOtherMode', [SHARED_ROUTE], 0]))
        wrong.push(`${JSON.stringify(env)}: ${s.phase} ${s.reasonCodes.join(',')}, ${JSON.stringify(seen)}`);
      await agent.stop();
    }
    agent = undefined;
    // Each as [first reason, the route, ovnkube-node's new starts]: waiting for the rollout, the route as it was, never stopped.
    assert.deepEqual(wrong, []);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    for (const s of scratches) s.remove();
  }
});

test('the guide on a 4.10+ node: RoutingViaHostLayout, and nothing changes, in dry run or armed', async (t) => {
  if (skipWithoutKernel(t)) return;
  const renderings = [renderOverlay(t, OVERLAY()), renderOverlay(t, ARMED())];
  if (renderings.some((r) => r === undefined)) return;
  const ns = guideNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const volume = new ConfigMapVolume(path.join(scratch.dir, 'volume'));
  let agent: AgentProcess | undefined;
  try {
    ns.ip('addr add 169.254.169.2/29 dev br-ex');
    ns.ip('route replace 172.30.0.0/16 via 169.254.169.4 dev br-ex mtu 1400');
    ovnkube.start('local', { respawn: true });
    volume.update({});
    for (const docs of renderings) {
      const { env } = deployed(docs!);
      agent = new AgentProcess(ns, scratch, ['--mode-file', volume.dir], env);
      const s = await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
      assert.deepEqual(s.reasonCodes, ['RoutingViaHostLayout']);
      assert.deepEqual(ns.routes(SVC), ['172.30.0.0/16 via 169.254.169.4 dev br-ex mtu 1400']);
      await agent.stop();
    }
    agent = undefined;
    assert.equal(ovnkube.starts, 1);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('the guide on a 4.10 node whose route still has the 4.8/4.9 shape, with an ovn-k8s-gw0 from 4.9: its os-release keeps the agent off it, in dry run or armed', async (t) => {
  if (skipWithoutKernel(t)) return;
  const renderings = [renderOverlay(t, OVERLAY()), renderOverlay(t, ARMED())];
  if (renderings.some((r) => r === undefined)) return;
  // The cluster switched as step 4 does it: the operator's ConfigMap says local.
  const local = operatorConfigMap(t, line('create configmap gateway-mode-config'));
  if (local === undefined) return;
  const ns = guideNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const volume = new ConfigMapVolume(path.join(scratch.dir, 'volume'));
  const osRelease = writeOsRelease(scratch.dir, '4.10');
  let agent: AgentProcess | undefined;
  try {
    // routingViaHost on 4.10: ovnkube-node runs --gateway-mode local, the route goes via br-ex's default gateway.
    ovnkube.start('local', { respawn: true });
    for (const docs of renderings) {
      const { env } = deployed(docs!);
      volume.update(local);
      agent = new AgentProcess(ns, scratch, ['--mode-file', volume.dir, '--os-release', osRelease], env);
      const s = await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
      assert.deepEqual([s.reasonCodes, s.phase, s.platform.release], [['RoutingViaHostLayout'], 'Converged', '4.10+']);
      assert.deepEqual(ns.routes(SVC), [SHARED_ROUTE]);
      await agent.stop();
    }
    agent = undefined;
    assert.equal(ovnkube.starts, 1);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});
