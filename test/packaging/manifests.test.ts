// The rendered manifests (`kubectl kustomize`) validate offline against their schemas
// (test/helpers/schemas.ts), and the OpenShift overlay runs the agent beside the cluster
// network operator, on its ConfigMap, rendering nothing of the operator's.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { RHCOS_49_OS_RELEASE } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { validateObject, type K8sObject } from '../helpers/schemas.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BASE = path.join(ROOT, 'packaging/kubernetes');
const OPENSHIFT = path.join(ROOT, 'packaging/openshift');

const noKubectl = spawnSync('kubectl', ['version', '--client']).error !== undefined;
function skipWithoutKubectl(t: TestContext): boolean {
  if (!noKubectl) return false;
  process.stderr.write(`SKIPPED (kubectl not installed): ${t.name}\n`);
  t.skip('kubectl not installed');
  return true;
}

function render(dir: string): K8sObject[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
}

/** An operator's overlay: the given resources and Components, rendered. */
function renderOverlay(resources: string[], components: string[]): K8sObject[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-kustomize-'));
  try {
    const rel = (p: string) => path.relative(dir, p);
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: resources.map(rel),
        components: components.map(rel),
      }),
    );
    return render(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An operator's overlay of the OpenShift overlay with both monitoring Components. */
const renderOpenShiftWithMonitoring = () =>
  renderOverlay([OPENSHIFT], [path.join(BASE, 'monitoring'), path.join(BASE, 'monitoring/openshift')]);
/** The OpenShift overlay with the canary Component (docs/operate.md, "A canary, node by node"). */
const renderOpenShiftCanary = () => renderOverlay([OPENSHIFT], [path.join(BASE, 'canary')]);
/** The base on a containerd node (docs/install.md, "Kubernetes: the DaemonSet"). */
const renderContainerd = () => renderOverlay([BASE], [path.join(BASE, 'containerd')]);

const find = (docs: K8sObject[], kind: string) => docs.find((d) => d.kind === kind) as any;

test('every rendered object validates against its schema: the base, the OpenShift overlay, it with both monitoring Components, and the base with the containerd Component', async (t) => {
  if (skipWithoutKubectl(t)) return;
  const renders: Array<[string, K8sObject[]]> = [
    ['packaging/kubernetes', render(BASE)],
    ['packaging/openshift', render(OPENSHIFT)],
    ['packaging/openshift + monitoring', renderOpenShiftWithMonitoring()],
    ['packaging/kubernetes + containerd', renderContainerd()],
    ['packaging/openshift + canary', renderOpenShiftCanary()],
  ];
  for (const [what, docs] of renders) {
    for (const o of docs) await validateObject(o).catch((err: Error) => assert.fail(`${what}: ${err.message}`));
  }
  const kinds = (docs: K8sObject[]) => docs.map((d) => d.kind).sort();
  assert.deepEqual(kinds(renders[0]![1]), ['ConfigMap', 'DaemonSet', 'Namespace', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[1]![1]), ['DaemonSet', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[2]![1]), ['DaemonSet', 'PodMonitor', 'PrometheusRule', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[3]![1]), kinds(renders[0]![1]));
  assert.deepEqual(kinds(renders[4]![1]), kinds(renders[1]![1]));
});

test('the validators refuse what the API server would: wrong types, a missing required field, an unknown kind', async (t) => {
  if (skipWithoutKubectl(t)) return;
  const docs = render(OPENSHIFT);
  const refused = async (o: K8sObject, why: RegExp) => assert.rejects(validateObject(o), why);
  const ds = structuredClone(find(docs, 'DaemonSet'));
  ds.spec.template.spec.containers[0].livenessProbe.periodSeconds = '30';
  await refused(ds, /periodSeconds must be integer/);
  const unnamed = structuredClone(find(docs, 'DaemonSet'));
  delete unnamed.spec.template.spec.containers[0].name;
  await refused(unnamed, /containers\/0 must have required property name/);
  await refused({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }, /no schema for this kind/);
});

test("OpenShift overlay: the agent runs in the cluster network operator's namespace on its ConfigMap gateway-mode-config (optional), and renders nothing of the operator's: no Namespace, no ConfigMap; no SCC nor RBAC (SCC admission is skipped there); 4.8/4.9 defaults set", (t) => {
  if (skipWithoutKubectl(t)) return;
  for (const docs of [render(OPENSHIFT), renderOpenShiftWithMonitoring()]) {
    // `kubectl apply -k` must not touch, nor `kubectl delete -k` delete, the operator's namespace or ConfigMap.
    assert.deepEqual(
      docs.filter((d) =>
        [
          'Namespace',
          'ConfigMap',
          'SecurityContextConstraints',
          'Role',
          'RoleBinding',
          'ClusterRole',
          'ClusterRoleBinding',
        ].includes(d.kind),
      ),
      [],
    );
    for (const d of docs)
      assert.equal(
        (d as any).metadata.namespace,
        'openshift-network-operator',
        `${d.kind} ${(d as any).metadata.name}`,
      );
  }
  const docs = render(OPENSHIFT);
  const base = find(render(BASE), 'DaemonSet').spec.template.spec;
  const ds = find(docs, 'DaemonSet');
  const pod = ds.spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));

  // The mode: CNO's own ConfigMap, mounted where OVN_GWMODE_MODE_FILE points; optional, since until the
  // operator creates it the cluster runs shared, and the empty volume reads shared too.
  const volume = pod.volumes.find((v: any) => v.configMap !== undefined);
  assert.deepEqual(volume.configMap, { name: 'gateway-mode-config', optional: true });
  assert.deepEqual(
    c.volumeMounts.filter((m: any) => m.name === volume.name).map((m: any) => [m.mountPath, m.readOnly]),
    [[env.OVN_GWMODE_MODE_FILE, true]],
  );

  // No SCC assigns anything in a run-level 0 namespace: the pod asks for spc_t itself, and keeps
  // the base's limits (capabilities, no privilege escalation, read-only root, uid 0, seccomp).
  assert.deepEqual(pod.securityContext, { ...base.securityContext, seLinuxOptions: { type: 'spc_t' } });
  assert.deepEqual(c.securityContext, base.containers[0].securityContext);
  assert.equal(c.securityContext.privileged, undefined, 'not privileged');
  assert.deepEqual([...c.securityContext.capabilities.add].sort(), ['NET_ADMIN', 'SYS_PTRACE']);
  assert.equal(pod.automountServiceAccountToken, false, 'the agent still gets no token');
  assert.equal(pod.serviceAccountName, find(docs, 'ServiceAccount').metadata.name);

  // OpenShift 4.8/4.9 defaults (shared/notes/domain.md): service network, cluster MTU, CRI-O.
  assert.equal(env.OVN_GWMODE_SERVICE_CIDR, '172.30.0.0/16');
  assert.equal(env.OVN_GWMODE_MTU, '1400');
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/var/run/crio/crio.sock');
  const crio = pod.volumes.find((v: any) => v.hostPath?.path === path.dirname(env.OVN_GWMODE_CRI_ENDPOINT));
  assert.ok(crio, 'the CRI-O socket directory is mounted');
  // Read-only, as the containerd Component mounts containerd's: a socket is connected to all the same.
  assert.deepEqual(
    c.volumeMounts.filter((m: any) => m.name === crio.name).map((m: any) => [m.mountPath, m.readOnly]),
    [['/var/run/crio', true]],
  );

  // It tolerates every taint: without a node selector it would land on Windows nodes too.
  assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
  assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux' });
  // A container that exits before writing a termination message shows its last log lines in `oc describe pod`.
  assert.equal(c.terminationMessagePolicy, 'FallbackToLogsOnError');
});

test('the base is made for CRI-O: its socket\'s directory is mounted from the host at the same path, and must exist (docs/install.md, "Kubernetes: the DaemonSet")', (t) => {
  if (skipWithoutKubectl(t)) return;
  const pod = find(render(BASE), 'DaemonSet').spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/var/run/crio/crio.sock');
  const volume = pod.volumes.find((v: any) => v.name === 'crio');
  assert.deepEqual(volume.hostPath, { path: '/var/run/crio', type: 'Directory' });
  assert.deepEqual(
    c.volumeMounts.filter((m: any) => m.name === 'crio').map((m: any) => m.mountPath),
    [path.dirname(env.OVN_GWMODE_CRI_ENDPOINT)],
  );
});

test("the containerd Component: the CRI endpoint is containerd's socket, its directory mounted read-only from the host at the same path (must exist), nothing of CRI-O left, nothing else changed", (t) => {
  if (skipWithoutKubectl(t)) return;
  const base = find(render(BASE), 'DaemonSet');
  const ds = find(renderContainerd(), 'DaemonSet');
  const pod = ds.spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/run/containerd/containerd.sock');
  const volume = pod.volumes.find((v: any) => v.hostPath?.path === '/run/containerd');
  assert.deepEqual(volume?.hostPath, { path: '/run/containerd', type: 'Directory' });
  assert.deepEqual(
    c.volumeMounts.filter((m: any) => m.name === volume.name).map((m: any) => [m.mountPath, m.readOnly]),
    [['/run/containerd', true]],
  );
  assert.doesNotMatch(JSON.stringify(ds), /crio/);
  // Everything else as the base has it.
  const strip = (d: any) => {
    const p = structuredClone(d.spec.template.spec);
    p.volumes = p.volumes.filter((v: any) => !/crio|containerd/.test(v.hostPath?.path ?? ''));
    for (const k of p.containers) {
      k.env = k.env.filter((e: any) => e.name !== 'OVN_GWMODE_CRI_ENDPOINT');
      k.volumeMounts = k.volumeMounts.filter((m: any) => !/crio|containerd/.test(m.mountPath));
    }
    const sort = (xs: any[], key: string) => xs.sort((a, b) => String(a[key]).localeCompare(String(b[key])));
    sort(p.volumes, 'name');
    for (const k of p.containers) {
      sort(k.env, 'name');
      sort(k.volumeMounts, 'mountPath');
    }
    return p;
  };
  assert.deepEqual(strip(ds), strip(base));
});

test('the probes give Node.js time to start: a startup probe of at least 60 s before liveness counts, each exec allowed 10 s', (t) => {
  if (skipWithoutKubectl(t)) return;
  const c = find(render(BASE), 'DaemonSet').spec.template.spec.containers[0];
  assert.deepEqual(c.startupProbe.exec.command, ['ovn-gwmode-agent', 'health']);
  assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 60);
  for (const p of [c.startupProbe, c.livenessProbe, c.readinessProbe])
    assert.ok(p.timeoutSeconds >= 10, `timeoutSeconds ${p.timeoutSeconds}`);
  assert.deepEqual(c.readinessProbe.exec.command, ['ovn-gwmode-agent', 'health', '--ready']);
});

const OPERATE = readFileSync(path.join(ROOT, 'docs/operate.md'), 'utf8');

test('the canary Component: the DaemonSet runs only on Linux nodes labelled ovn-gwmode-agent/enabled=true, as docs/operate.md labels them; nothing else changed', (t) => {
  if (skipWithoutKubectl(t)) return;
  const plain = find(render(OPENSHIFT), 'DaemonSet');
  const canary = find(renderOpenShiftCanary(), 'DaemonSet');
  assert.deepEqual(canary.spec.template.spec.nodeSelector, {
    'kubernetes.io/os': 'linux',
    'ovn-gwmode-agent/enabled': 'true',
  });
  assert.ok(OPERATE.includes('kubectl label node worker-0.example.com ovn-gwmode-agent/enabled=true\n'));
  assert.ok(OPERATE.includes('kubectl label node "$node" ovn-gwmode-agent/enabled-\n'));
  delete canary.spec.template.spec.nodeSelector['ovn-gwmode-agent/enabled'];
  assert.deepEqual(canary, plain);
});

test("docs/operate.md's one-node rollback: its jq program makes, from the DaemonSet, a valid Pod pinned to the node with the same image, settings, volumes and rights, running rollback --yes, which the image's entrypoint takes", async (t) => {
  if (skipWithoutKubectl(t)) return;
  const program = /jq --arg node "\$node" '([^']*)'/.exec(OPERATE)?.[1];
  assert.ok(program, 'the jq program of "Rolling one node back on OpenShift"');
  const ds = find(renderOpenShiftCanary(), 'DaemonSet');
  const jq = spawnSync('jq', ['--arg', 'node', 'worker-0.example.com', program], {
    input: JSON.stringify(ds),
    encoding: 'utf8',
  });
  if (jq.error) {
    process.stderr.write(`SKIPPED (jq not installed): ${t.name}\n`);
    t.skip('jq not installed');
    return;
  }
  assert.equal(jq.status, 0, jq.stderr);
  const pod = JSON.parse(jq.stdout);
  await validateObject(pod);
  assert.deepEqual(
    [pod.kind, pod.metadata.namespace, pod.spec.nodeName, pod.spec.restartPolicy],
    ['Pod', 'openshift-network-operator', 'worker-0.example.com', 'Never'],
  );
  // A label of its own: a pod matching the DaemonSet's selector would be adopted (and deleted) by its controller.
  for (const [k, v] of Object.entries(ds.spec.selector.matchLabels)) assert.notEqual(pod.metadata.labels[k], v, k);
  // The DaemonSet's template but for the node selector, the probes and the arguments.
  const template = structuredClone(ds.spec.template.spec);
  delete template.nodeSelector;
  const { startupProbe: _s, livenessProbe: _l, readinessProbe: _r, ...agent } = template.containers[0];
  template.containers[0] = { ...agent, args: ['rollback', '--yes'] };
  assert.deepEqual(pod.spec, { ...template, nodeName: 'worker-0.example.com', restartPolicy: 'Never' });
  assert.deepEqual([pod.spec.hostNetwork, pod.spec.hostPID], [true, true]);

  // The image's entrypoint (the checkout's main.js for the image's) with the pod's arguments and settings, on a
  // node in a network namespace, its state directory a scratch one: taken, and answered from the (empty) journal.
  if (skipWithoutKernel(t)) return;
  const entrypoint = JSON.parse(
    /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(path.join(ROOT, 'packaging/container/Containerfile'), 'utf8'))![1]!,
  ) as string[];
  const argv = entrypoint.map((a) =>
    a.replace('/opt/ovn-gwmode-agent/', ROOT).replace('/usr/local/bin/node', process.execPath),
  );
  const env = Object.fromEntries(
    pod.spec.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]),
  );
  const ns = seedNode();
  const state = mkdtempSync(path.join(tmpdir(), 'gwmode-rollback-pod-'));
  try {
    const run = spawnSync('ip', ['netns', 'exec', ns.name, ...argv, ...pod.spec.containers[0].args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, ...env, OVN_GWMODE_OS_RELEASE: RHCOS_49_OS_RELEASE, OVN_GWMODE_STATE_DIR: state },
    });
    assert.notEqual(run.status, 2, `a bad flag or setting: ${run.stderr}`);
    assert.match(run.stdout + run.stderr, /NothingToRollBack/);
  } finally {
    ns.destroy();
    rmSync(state, { recursive: true, force: true });
  }
});
