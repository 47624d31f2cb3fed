// The README's operator's guide, run as written: its kustomize and ConfigMap commands with
// the real kubectl (offline), its cluster commands against a stand-in kubectl that execs into
// real agents, and every step of the walk-through on a real agent and a seed node.
import { strict as assert } from 'node:assert';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { REASON_CODES } from '../src/core/reasons.js';
import { parseModeContent } from '../src/mode/parse.js';
import { AgentProcess, CLI, FakeOvnkube, Scratch, waitForStatus } from './helpers/agent.js';
import { ConfigMapVolume, type Manifest } from './helpers/kubelet.js';
import { seedNode, skipWithoutKernel } from './helpers/netns.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const GUIDE = (() => {
  const start = README.indexOf("## Operator's guide");
  assert.ok(start >= 0, "the README has an operator's guide");
  const end = README.indexOf('\n## ', start + 3);
  return README.slice(start, end < 0 ? undefined : end);
})();
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

/** A directory beside a checkout called ovn-gwmode-agent, as step 1 lays it out. */
function overlayDir(): { dir: string; cleanup: () => void } {
  const base = mkdtempSync(path.join(tmpdir(), 'gwmode-guide-'));
  symlinkSync(ROOT, path.join(base, 'ovn-gwmode-agent'));
  const yaml = block('my-agent/kustomization.yaml');
  mkdirSync(path.join(base, 'my-agent'));
  writeFileSync(path.join(base, 'my-agent', 'kustomization.yaml'), yaml);
  return { dir: path.join(base, 'my-agent'), cleanup: () => rmSync(base, { recursive: true, force: true }) };
}

test("the guide's overlay renders the OpenShift DaemonSet with your image, and its commands name what it renders", (t) => {
  const { dir, cleanup } = overlayDir();
  try {
    const docs = render(t, dir);
    if (!docs) return;
    const ds = docs.find((d) => d.kind === 'DaemonSet')!;
    const kustomization = parseYaml(block('my-agent/kustomization.yaml')) as Manifest;
    const image = kustomization.images[0];
    assert.equal(ds.spec.template.spec.containers[0].image, `${image.newName}:${image.newTag}`);
    const env = Object.fromEntries(ds.spec.template.spec.containers[0].env.map((e: Manifest) => [e.name, e.value]));
    assert.equal(env.OVN_GWMODE_SERVICE_CIDR, '172.30.0.0/16', 'OpenShift service network');
    assert.equal(env.OVN_GWMODE_MTU, '1400', 'OpenShift cluster MTU');

    // Every DaemonSet and ConfigMap the guide's commands name is the rendered one.
    const ns = ds.metadata.namespace;
    for (const l of [line('set env', '=true'), line('set env', 'DRY_RUN-'), line('rollout status ds/ovn-gwmode-agent')]) {
      assert.deepEqual(target(l), { namespace: ns, name: ds.metadata.name }, l);
    }
    const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.namespace === ns)!;
    const mounted = ds.spec.template.spec.volumes.find((v: Manifest) => v.configMap).configMap.name;
    assert.equal(mounted, cm.metadata.name);
    for (const l of BLOCKS.flatMap((b) => b.text.split('\n')).filter((x) => x.includes('patch configmap') && x.includes(`-n ${ns} `))) {
      assert.deepEqual(target(l), { namespace: ns, name: cm.metadata.name }, l);
    }
    // The one-liner lists the agent's pods by the DaemonSet's own selector, in its namespace.
    const selector = Object.entries(ds.spec.selector.matchLabels as Record<string, string>).map(([k, v]) => `${k}=${v}`).join(',');
    assert.ok(block('while read -r node pod').includes(`-n ${ns} get pods -l ${selector} `));

    // Removing the agent leaves exactly the node paths the guide says, besides the CRI socket.
    const hostPaths = ds.spec.template.spec.volumes.filter((v: Manifest) => v.hostPath).map((v: Manifest) => v.hostPath.path as string);
    const rm = /rm -rf ([^`]+)`/.exec(GUIDE.replace(/\n/g, ' '))![1]!.trim().split(/\s+/);
    assert.deepEqual(hostPaths.filter((p: string) => !/crio|containerd/.test(p)).sort(), rm.sort());
    assert.ok(block('kubectl delete -k').includes('kubectl delete -k my-agent'));
  } finally {
    cleanup();
  }
});

test("the guide's ConfigMap commands make what the agent and the cluster network operator read", (t) => {
  // The operator's ConfigMap, created as the guide says (offline), read as a manifest mode file.
  const create = words(line('create configmap gateway-mode-config'));
  assert.deepEqual(target(line('create configmap gateway-mode-config')), { namespace: 'openshift-network-operator', name: 'gateway-mode-config' });
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

  // The agent's ConfigMap, as rendered, patched to local and back to shared as the guide says.
  const docs = render(t, path.join(ROOT, 'packaging/kubernetes'));
  if (!docs) return;
  const cm = docs.find((d) => d.kind === 'ConfigMap')!;
  writeFileSync(file, JSON.stringify(cm));
  const toLocal = parseYaml(patch(line('patch configmap ovn-gwmode-agent-mode', '"local"'), file)) as Manifest;
  assert.equal(toLocal.data.mode, 'local');
  const toShared = parseYaml(patch(line('patch configmap ovn-gwmode-agent-mode', '"shared"'), file)) as Manifest;
  assert.equal(toShared.data.mode, 'shared');
  rmSync(path.dirname(file), { recursive: true, force: true });
});

test("the guide's table says what to do for every reason code a running agent gives", () => {
  const table = GUIDE.slice(GUIDE.indexOf('| code | phase | what to do |'));
  const rows = table.split('\n').filter((l) => l.startsWith('| `'));
  const listed = rows.flatMap((r) => [...r.split('|')[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!));
  const rollback = ['NothingToRollBack', 'RouteNotAsLeft', 'ManagementSubnetChanged', 'RollingBack'];
  assert.deepEqual(REASON_CODES.filter((c) => !rollback.includes(c) && !listed.includes(c)), []);
  assert.deepEqual(listed.filter((c) => !(REASON_CODES as readonly string[]).includes(c)), []);
  for (const c of rollback) assert.ok(GUIDE.includes(`\`${c}\``), c);
});

/**
 * A stand-in kubectl for the guide's cluster commands: `get pods` lists the test's pods,
 * `exec POD -- ovn-gwmode-agent ...` runs the real CLI against that pod's agent socket.
 * It records how it was called.
 */
function standInKubectl(dir: string, pods: Array<{ node: string; pod: string; socket: string }>): { env: NodeJS.ProcessEnv; calls: () => string[] } {
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
  return { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, calls: () => readFileSync(log, 'utf8').trim().split('\n') };
}

/** The guide's `set env` line as the variables it sets. */
function setEnv(l: string): NodeJS.ProcessEnv {
  return Object.fromEntries(words(l).filter((w) => /^OVN_GWMODE_\w+=/.test(w)).map((w) => w.split('=') as [string, string]));
}

test("the operator's guide on a shared-mode 4.8/4.9 node: dry-run plan, armed and waiting, the switch, back to shared, removal", async (t) => {
  if (skipWithoutKernel(t)) return;
  // A shared-mode 4.8/4.9 node: the stale-to-be route via br-ex, no ovn-k8s-gw0 yet.
  const ns = seedNode({ gw0: false });
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
  // What the DaemonSet sets (the service network and MTU of this node), the rest from the guide.
  // A short restart interval: the walk-through restarts ovnkube-node twice within seconds.
  const args = ['--mode-file', volume.dir, '--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--restart-min-interval', '1s'];
  let agent: AgentProcess | undefined;
  try {
    volume.update({ mode: 'shared' });
    ovnkube.start('shared', { respawn: true });

    // Step 2: dry run, mode check off, legacy layout; the ConfigMap patched to local.
    volume.update({ mode: 'local' });
    agent = new AgentProcess(ns, scratch, args, setEnv(line('set env', '=true')));
    await waitForStatus(agent, (s) => s.dryRun && s.reasonCodes.includes('DryRun'), 'the dry-run plan');
    const [a, b] = oneLiner();
    assert.equal(a, 'worker-a: Waiting desired=local ovnkube=shared layout=legacy routes=0/1 in sync (dry run): dry run: 1 replace(s) planned, not applied');
    assert.match(b!, /^worker-b: ovn-gwmode-agent: cannot reach the agent on .*gone\.sock \(ENOENT\): is the agent running\?$/);
    const human = spawnSync('bash', ['-c', 'kubectl -n ovn-gwmode-agent exec ovn-gwmode-agent-a1b2c -- ovn-gwmode-agent status'], { encoding: 'utf8', env: kube.env });
    assert.match(human.stdout, /desired mode local: 10\.96\.0\.0\/16 goes via 172\.18\.0\.1 dev br-ex mtu 1400, expected via 10\.244\.1\.1 dev ovn-k8s-mp0/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
    assert.equal(ovnkube.starts, 1, 'a dry run restarts nothing');
    assert.ok(kube.calls().every((c) => c.startsWith('-n ovn-gwmode-agent ')));
    await agent.stop();

    // Step 3: the variables taken away (the rollout restarts the agent): waiting on ovnkube-node.
    agent = new AgentProcess(ns, scratch, args);
    await waitForStatus(agent, (s) => s.lastReconcile !== null && s.desiredMode === 'local', 'a pass');
    assert.match(oneLiner()[0]!, /^worker-a: Waiting desired=local ovnkube=shared .*: ovnkube-node \(pid \d+\) runs --gateway-mode shared, desired local: waiting for the cluster network operator to roll ovnkube-node out$/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);

    // Step 4: the operator rolls ovnkube-node out in local mode, which makes ovn-k8s-gw0.
    ns.ip('link add ovn-k8s-gw0 type veth peer name gw0-peer');
    ns.ip('link set ovn-k8s-gw0 up');
    ovnkube.start('local', { respawn: true });
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged in local mode');
    assert.equal(oneLiner()[0], 'worker-a: Converged desired=local ovnkube=local layout=legacy routes=1/1 in sync: service routes match desired mode local');
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
    assert.equal(ovnkube.starts, 3, "the operator's rollout, then the agent's one restart");

    // Back to shared: both ConfigMaps say shared; the operator rolls ovnkube-node out again.
    volume.update({ mode: 'shared' });
    ovnkube.start('shared', { respawn: true });
    await waitForStatus(agent, (s) => s.phase === 'Converged' && s.desiredMode === 'shared', 'Converged in shared mode');
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
    assert.equal(ovnkube.starts, 5, 'the rollout, then one restart for the route the agent moved back');

    // Removing the agent changes no route.
    await agent.stop();
    agent = undefined;
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('the guide on a 4.10+ node: RoutingViaHostLayout, and nothing changes, even with the dry-run variables', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const volume = new ConfigMapVolume(path.join(scratch.dir, 'volume'));
  let agent: AgentProcess | undefined;
  try {
    ns.ip('addr add 169.254.169.2/29 dev br-ex');
    ns.ip('route replace 10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400');
    volume.update({ mode: 'local' });
    ovnkube.start('local', { respawn: true });
    for (const env of [setEnv(line('set env', '=true')), {}]) {
      agent = new AgentProcess(ns, scratch, ['--mode-file', volume.dir, '--service-cidr', '10.96.0.0/16', '--mtu', '1400'], env);
      const s = await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
      assert.deepEqual(s.reasonCodes, ['RoutingViaHostLayout']);
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400']);
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
