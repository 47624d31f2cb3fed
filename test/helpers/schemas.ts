// Offline schema validation of rendered manifests, with maintained validators from npm:
//   - Kubernetes kinds: kubernetes-models (ajv validators compiled from the Kubernetes
//     OpenAPI schemas; types, formats, enums, required fields), and
//     @kubernetes-models/prometheus-operator for PodMonitor and PrometheusRule.
//   - SecurityContextConstraints: there is no @kubernetes-models/openshift; the OpenShift
//     OpenAPI document that openshift-rest-client ships (lib/specs) holds its schema, checked
//     with ajv. Unknown fields are refused there (a misspelt SCC field would be silently
//     dropped by the API server, leaving a default that may not admit the pod).
// kubernetes-models does not refuse unknown fields (like kubeconform without -strict):
// those are caught by the tests that read the fields they expect.
// A kind no validator knows is an error: nothing is shipped unvalidated.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Ajv } from 'ajv';

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

const SCC = 'com.github.openshift.api.security.v1.SecurityContextConstraints';
let sccValidator: ((o: unknown) => boolean) & { errors?: unknown } | undefined;

function openshiftValidator(): ((o: unknown) => boolean) & { errors?: unknown } {
  if (sccValidator) return sccValidator;
  const require = createRequire(import.meta.url);
  const spec = JSON.parse(gunzipSync(readFileSync(path.join(path.dirname(require.resolve('openshift-rest-client')), 'lib/specs/openshift-openapi-spec.json.gz'))).toString()) as {
    definitions: Record<string, { properties?: object; additionalProperties?: unknown }>;
  };
  // Strict: every object with declared properties refuses others (a Swagger 2.0 document
  // leaves additionalProperties open).
  for (const d of Object.values(spec.definitions)) if (d.properties && d.additionalProperties === undefined) d.additionalProperties = false;
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  sccValidator = ajv.compile({ definitions: spec.definitions, $ref: `#/definitions/${SCC}` });
  return sccValidator;
}

/** Validates one object; throws an Error naming it and every schema error. */
export async function validateObject(o: K8sObject): Promise<void> {
  const name = `${o.kind} ${o.metadata?.name} (${o.apiVersion})`;
  if (o.apiVersion === 'security.openshift.io/v1' && o.kind === 'SecurityContextConstraints') {
    const v = openshiftValidator();
    if (!v(o)) throw new Error(`${name}: ${JSON.stringify(v.errors)}`);
    return;
  }
  const model = await modelFor(o.apiVersion, o.kind);
  if (!model) throw new Error(`${name}: no schema for this kind`);
  try {
    new model(o).validate();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
  }
}
