// The shipped manifests render, and say what an SRE would check first.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';

test('the DaemonSet renders with kustomize: host network and PID, only the capabilities needed, runtime-default seccomp, one node at a time, every taint tolerated, no API access', (t) => {
  const r = spawnSync('kubectl', ['kustomize', 'packaging/kubernetes'], { encoding: 'utf8' });
  if (r.error) {
    process.stderr.write(`SKIPPED (kubectl not installed): ${t.name}\n`);
    t.skip('kubectl not installed');
    return;
  }
  assert.equal(r.status, 0, r.stderr);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS());
  const ds = docs.find((d) => d.kind === 'DaemonSet');
  const pod = ds.spec.template.spec;
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.hostPID, true);
  assert.equal(pod.priorityClassName, 'system-node-critical');
  assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
  assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  assert.equal(ds.spec.updateStrategy.rollingUpdate.maxUnavailable, 1);
  // No API access: a service account of its own, no RBAC, no token.
  const sa = docs.find((d) => d.kind === 'ServiceAccount');
  assert.equal(pod.serviceAccountName, sa.metadata.name);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(sa.automountServiceAccountToken, false);
  assert.deepEqual(
    docs.filter((d) => /Role|Binding/.test(d.kind)),
    [],
  );
  for (const v of ['OVN_GWMODE_SERVICE_CIDR', 'OVN_GWMODE_MTU'])
    assert.ok(
      pod.containers[0].env.some((e: any) => e.name === v),
      `${v} is set`,
    );
  const c = pod.containers[0];
  assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN', 'SYS_PTRACE'] });
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.livenessProbe.exec.command, ['ovn-gwmode-agent', 'health']);
  assert.equal(docs.find((d) => d.kind === 'ConfigMap').data.mode, 'shared');
  // The agent watches the ConfigMap volume's directory (kubelet swaps ..data in it), not the key.
  const modeVolume = pod.volumes.find((v: any) => v.configMap).name;
  const mount = c.volumeMounts.find((m: any) => m.name === modeVolume).mountPath;
  assert.equal(c.env.find((e: any) => e.name === 'OVN_GWMODE_MODE_FILE').value, mount);
});
