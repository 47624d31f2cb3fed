// The rendered manifests (`kubectl kustomize`) validate offline against their schemas
// (test/helpers/schemas.ts), and the OpenShift overlay's SecurityContextConstraints admit
// the agent's pod while allowing no more than it asks for.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
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
      stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: resources.map(rel), components: components.map(rel) }),
    );
    return render(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An operator's overlay of the OpenShift overlay with both monitoring Components. */
const renderOpenShiftWithMonitoring = () => renderOverlay([OPENSHIFT], [path.join(BASE, 'monitoring'), path.join(BASE, 'monitoring/openshift')]);
/** The base on a containerd node (README, "As a DaemonSet"). */
const renderContainerd = () => renderOverlay([BASE], [path.join(BASE, 'containerd')]);

const find = (docs: K8sObject[], kind: string) => docs.find((d) => d.kind === kind) as any;

test('every rendered object validates against its schema: the base, the OpenShift overlay, and both with the monitoring Components, and the base with the containerd Component', async (t) => {
  if (skipWithoutKubectl(t)) return;
  const renders: Array<[string, K8sObject[]]> = [
    ['packaging/kubernetes', render(BASE)],
    ['packaging/openshift', render(OPENSHIFT)],
    ['packaging/openshift + monitoring', renderOpenShiftWithMonitoring()],
    ['packaging/kubernetes + containerd', renderContainerd()],
  ];
  for (const [what, docs] of renders) {
    for (const o of docs) await validateObject(o).catch((err: Error) => assert.fail(`${what}: ${err.message}`));
  }
  const kinds = (docs: K8sObject[]) => docs.map((d) => d.kind).sort();
  assert.deepEqual(kinds(renders[0]![1]), ['ConfigMap', 'DaemonSet', 'Namespace', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[1]![1]), ['ConfigMap', 'DaemonSet', 'Namespace', 'Role', 'RoleBinding', 'SecurityContextConstraints', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[2]![1]), ['ConfigMap', 'DaemonSet', 'Namespace', 'PodMonitor', 'PrometheusRule', 'Role', 'RoleBinding', 'SecurityContextConstraints', 'ServiceAccount']);
  assert.deepEqual(kinds(renders[3]![1]), kinds(renders[0]![1]));
});

test('the validators refuse what the API server would: wrong types, a missing required field, an unknown kind, a misspelt SCC field', async (t) => {
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
  const scc = find(docs, 'SecurityContextConstraints');
  await refused({ ...scc, allowHostNetwork: 'yes' }, /must be boolean/);
  await refused({ ...scc, allowHostPid: true }, /additionalProperties/);
  const { volumes: _, ...noVolumes } = scc;
  await refused(noVolumes, /required property 'volumes'/);
});

/** The SCC admits the DaemonSet's pod, field by field as its strategies check it, and allows no more than the pod asks for. */
function assertAdmits(docs: K8sObject[]): void {
  const scc = find(docs, 'SecurityContextConstraints');
  const ds = find(docs, 'DaemonSet');
  const pod = ds.spec.template.spec;
  const [c] = pod.containers;
  const sc = c.securityContext;

  // Admission, field by field, as the SCC strategies check a pod.
  assert.equal(scc.metadata.namespace, undefined, 'SCCs are cluster-scoped');
  assert.equal(scc.allowHostNetwork, pod.hostNetwork === true);
  assert.equal(scc.allowHostPID, pod.hostPID === true);
  assert.equal(scc.allowHostIPC, pod.hostIPC === true);
  // A host-network pod's container ports are host ports: the API server fills in hostPort
  // before the SCC is checked, so a declared port (the monitoring Component's) needs them.
  const hostPorts = pod.containers.flatMap((k: any) => (k.ports ?? []).map((p: any) => p.hostPort ?? (pod.hostNetwork ? p.containerPort : undefined))).filter((p: unknown) => p !== undefined);
  assert.equal(scc.allowHostPorts, hostPorts.length > 0, `host ports ${JSON.stringify(hostPorts)}`);
  assert.equal(scc.allowPrivilegedContainer, false, 'not privileged');
  assert.equal(sc.privileged, undefined);
  assert.equal(scc.allowPrivilegeEscalation, false);
  assert.equal(sc.allowPrivilegeEscalation, false);
  assert.deepEqual([...scc.allowedCapabilities].sort(), [...sc.capabilities.add].sort(), 'exactly the capabilities the pod adds');
  assert.deepEqual(scc.defaultAddCapabilities, []);
  for (const dropped of scc.requiredDropCapabilities) assert.ok(sc.capabilities.drop.includes(dropped), `the pod drops ${dropped}`);
  assert.equal(scc.readOnlyRootFilesystem, true);
  assert.equal(sc.readOnlyRootFilesystem, true);
  assert.deepEqual(scc.runAsUser, { type: 'MustRunAs', uid: sc.runAsUser });
  assert.deepEqual(scc.seccompProfiles, ['runtime/default']);
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
  // SELinux: spc_t assigned by the SCC; the pod names none (it would have to match exactly).
  assert.equal(scc.seLinuxContext.type, 'MustRunAs');
  assert.equal(scc.seLinuxContext.seLinuxOptions.type, 'spc_t');
  assert.equal(pod.securityContext.seLinuxOptions, undefined);
  assert.equal(sc.seLinuxOptions, undefined);
  const volumeTypes = new Set(pod.volumes.map((v: Record<string, unknown>) => Object.keys(v).find((k) => k !== 'name')));
  assert.deepEqual([...scc.volumes].sort(), [...volumeTypes].sort(), 'exactly the volume types the pod mounts');
  assert.equal(scc.allowHostDirVolumePlugin, volumeTypes.has('hostPath'));
  assert.deepEqual([scc.users, scc.groups], [[], []], 'granted through RBAC only');
}

test('OpenShift overlay: its SCC admits the agent\'s pod, with and without the monitoring Components, and allows no more than the pod asks for; only the agent\'s service account may use it; 4.8/4.9 defaults set', (t) => {
  if (skipWithoutKubectl(t)) return;
  assertAdmits(renderOpenShiftWithMonitoring());
  const docs = render(OPENSHIFT);
  assertAdmits(docs);
  const scc = find(docs, 'SecurityContextConstraints');
  const ds = find(docs, 'DaemonSet');
  const pod = ds.spec.template.spec;
  const [c] = pod.containers;

  // The binding: the DaemonSet's service account may `use` this SCC, and nothing else.
  const role = find(docs, 'Role');
  const binding = find(docs, 'RoleBinding');
  assert.deepEqual(role.rules, [{ apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: [scc.metadata.name], verbs: ['use'] }]);
  assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
  assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: ds.metadata.namespace }]);
  assert.equal(role.metadata.namespace, ds.metadata.namespace);
  assert.equal(pod.automountServiceAccountToken, false, 'the agent still gets no token');

  // OpenShift 4.8/4.9 defaults (shared/notes/domain.md): service network, cluster MTU, CRI-O.
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  assert.equal(env.OVN_GWMODE_SERVICE_CIDR, '172.30.0.0/16');
  assert.equal(env.OVN_GWMODE_MTU, '1400');
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/var/run/crio/crio.sock');
  assert.ok(pod.volumes.some((v: any) => v.hostPath?.path === path.dirname(env.OVN_GWMODE_CRI_ENDPOINT)), 'the CRI-O socket directory is mounted');
  // A cluster-wide default node selector must not keep the agent off any node.
  assert.equal(find(docs, 'Namespace').metadata.annotations['openshift.io/node-selector'], '');
});

test('the base is made for CRI-O: its socket\'s directory is mounted from the host at the same path, and must exist (README, "As a DaemonSet")', (t) => {
  if (skipWithoutKubectl(t)) return;
  const pod = find(render(BASE), 'DaemonSet').spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/var/run/crio/crio.sock');
  const volume = pod.volumes.find((v: any) => v.name === 'crio');
  assert.deepEqual(volume.hostPath, { path: '/var/run/crio', type: 'Directory' });
  assert.deepEqual(c.volumeMounts.filter((m: any) => m.name === 'crio').map((m: any) => m.mountPath), [path.dirname(env.OVN_GWMODE_CRI_ENDPOINT)]);
});

test('the containerd Component: the CRI endpoint is containerd\'s socket, its directory mounted read-only from the host at the same path (must exist), nothing of CRI-O left, nothing else changed', (t) => {
  if (skipWithoutKubectl(t)) return;
  const base = find(render(BASE), 'DaemonSet');
  const ds = find(renderContainerd(), 'DaemonSet');
  const pod = ds.spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  assert.equal(env.OVN_GWMODE_CRI_ENDPOINT, '/run/containerd/containerd.sock');
  const volume = pod.volumes.find((v: any) => v.hostPath?.path === '/run/containerd');
  assert.deepEqual(volume?.hostPath, { path: '/run/containerd', type: 'Directory' });
  assert.deepEqual(c.volumeMounts.filter((m: any) => m.name === volume.name).map((m: any) => [m.mountPath, m.readOnly]), [['/run/containerd', true]]);
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
  for (const p of [c.startupProbe, c.livenessProbe, c.readinessProbe]) assert.ok(p.timeoutSeconds >= 10, `timeoutSeconds ${p.timeoutSeconds}`);
  assert.deepEqual(c.readinessProbe.exec.command, ['ovn-gwmode-agent', 'health', '--ready']);
});
