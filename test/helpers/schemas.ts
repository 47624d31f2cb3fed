// Offline schema validation of rendered manifests, with maintained validators from npm:
//   - Kubernetes kinds: kubernetes-models (ajv validators compiled from the Kubernetes
//     OpenAPI schemas; types, formats, enums, required fields), and
//     @kubernetes-models/prometheus-operator for PodMonitor and PrometheusRule.
// kubernetes-models does not refuse unknown fields (like kubeconform without -strict):
// those are caught by the tests that read the fields they expect.
// A kind no validator knows is an error: nothing is shipped unvalidated.

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

type Model = { new (data: unknown): { validate(): void } };

const MODEL_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

async function modelFor(apiVersion: string, kind: string): Promise<Model | undefined> {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const pkg = MODEL_PACKAGES[group] ?? 'kubernetes-models';
  const mod = (await import(`${pkg}/${apiVersion}`).catch(() => undefined)) as Record<string, Model> | undefined;
  return mod?.[kind];
}

/** Validates one object; throws an Error naming it and every schema error. */
export async function validateObject(o: K8sObject): Promise<void> {
  const name = `${o.kind} ${o.metadata?.name} (${o.apiVersion})`;
  const model = await modelFor(o.apiVersion, o.kind);
  if (!model) throw new Error(`${name}: no schema for this kind`);
  try {
    new model(o).validate();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
  }
}
